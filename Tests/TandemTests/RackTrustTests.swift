import Takes
import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// What a rack's settings promise, kept on every path: `preset check` refuses what `run` refuses (a rack's plugin
/// not installed, a control out of its range, in process or isolated), an isolated rack that runs without a plugin
/// says so where the session says it of its own chains, a re-applied preset reaches an isolated rack without a
/// restart, and `tandem rack --map` is checked as a preset's maps are.
@Suite(.serialized) struct RackTrustTests {
    static let missing = "http://example.org/not-installed"

    static func preset(_ dir: URL, _ name: String, isolate: Bool?, policy: String = "fail", port: Int? = nil,
                       gain: Double = 500, extra: String = "") throws -> String {
        let path = dir.appendingPathComponent("\(name).toml").path
        try """
            [session]
            name = "\(name)"
            directory = "\(dir.path)"
            on_plugin_error = "\(policy)"
            \(port.map { "control_port = \($0)" } ?? "")
            [recorder]
            channels = 1
            [[rack]]
            name = "fx"
            \(isolate.map { "isolate = \($0)" } ?? "")
            [[rack.plugins]]
            uri = "\(RackTests.amp)"
            name = "amp"
            controls = { gain = \(gain) }
            [[rack.plugins]]
            uri = "\(missing)"
            name = "gone"
            \(extra)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(.enabled(if: RackTests.hasSWH))
    func presetCheckAndRunRefuseARacksMissingPluginAndBadControlAlike() throws {
        let server = try TestEnvironment.server("racktrust")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust")
        for isolate in [nil, true, false] {
            let path = try Self.preset(dir, "t\(isolate.map { "\($0)" } ?? "default")", isolate: isolate)
            let wanted = ["rack.plugins.uri: plugin gone: <\(Self.missing)> is not installed",
                          "rack.plugins.controls.gain: plugin amp: control 'gain' = 500.0 is outside its range"]
            let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", path])
            let run = try TandemProcess(["run", "--no-view", path], server: server,
                                        log: dir.appendingPathComponent("run-\(String(describing: isolate)).log").path)
            let code = run.process.wait(timeout: 20)
            for (what, c, out) in [("check", check.code, check.output), ("run", code ?? -1, run.output)] {
                #expect(c == 2, "\(what), isolate \(String(describing: isolate)): exit \(c)\n\(out)")
                for line in wanted { #expect(out.contains(line), "\(what) misses '\(line)':\n\(out)") }
            }
        }
    }

    /// With `on_plugin_error = "bypass"` an isolated rack runs without the missing plugin, and says so on stderr
    /// and in the report of the take beside it (it used to be one line in the rack's own log).
    @Test(.enabled(if: RackTests.hasSWH))
    func anIsolatedRackRunningWithoutAPluginSaysSo() throws {
        let server = try TestEnvironment.server("racktrust-bp")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust-bp")
        let path = try Self.preset(dir, "bp", isolate: true, policy: "bypass", gain: -6,
                                   extra: "[[connect]]\nfrom = \"fx:out_1\"\nto = \"tandem-rec:in_1\"")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("fx plugin gone BYPASSED", timeout: 15), "\(run.output)")
        usleep(500_000)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let report = try TakeReport.read(from: try #require(TakeCheck.reports(in: dir.path).first))
        let problems = report.pluginProblems ?? []
        #expect(problems.contains { $0.plugin == "fx:gone" && $0.bypassed && $0.message.contains("not installed") },
                "\(problems)")
    }

    /// SIGHUP with a changed control of an isolated rack: its process takes the new value (read back over the
    /// session's port), keeps its pid (no restart, no gap), and the reload changes nothing in the graph.
    @Test(.enabled(if: RackTests.hasSWH))
    func aReloadedControlReachesAnIsolatedRackWithoutARestart() throws {
        let server = try TestEnvironment.server("racktrust-hup")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust-hup")
        let port = 39000 + Int(getpid() % 20000)
        func write(gain: Double) throws -> String {
            try RackIsolationTests.isolatedRackPreset(
                "hup", dir: dir, port: port, plugin: "uri = \"\(RackTests.amp)\"\nname = \"amp\"\ncontrols = { gain = \(gain) }",
                extra: "[recorder]\nchannels = 1\n[[connect]]\nfrom = \"fx:out_1\"\nto = \"tandem-rec:in_1\"")
        }
        let path = try write(gain: -6)
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        defer { run.process.signal(SIGTERM); _ = run.process.wait(timeout: 15) }
        #expect(run.waitFor("connected fx:out_1 -> tandem-rec:in_1", timeout: 15), "\(run.output)")
        var first = (code: Int32(-1), text: "")
        for _ in 0..<50 where first.text != "-6.0" {
            first = try RackControlTests.ctl(port, ["/tandem/plugin/get", "fx", "amp", "gain"])
            if first.text != "-6.0" { usleep(100_000) }
        }
        #expect(first.text == "-6.0", "\(first)")
        let pid = RackIsolationTests.rackPid(port)
        #expect(pid > 0)
        _ = try write(gain: -20)
        run.process.signal(SIGHUP)
        #expect(run.waitFor("reloaded \(path): 0 graph changes"), "\(run.output)")
        var now = (code: Int32(-1), text: "")
        for _ in 0..<50 where now.text != "-20.0" {
            now = try RackControlTests.ctl(port, ["/tandem/plugin/get", "fx", "amp", "gain"])
            if now.text != "-20.0" { usleep(100_000) }
        }
        #expect(now.text == "-20.0", "the new value is taken: \(now)")
        #expect(RackIsolationTests.rackPid(port) == pid, "the rack's process was not restarted")
        #expect(run.output.components(separatedBy: "rack process started").count == 2, "one start only:\n\(run.output)")
        // The status counts the isolated rack's ports as its process has them (it used to say 0 → 0).
        let rack = RackIsolationTests.rack(try RackIsolationTests.status(port))
        #expect(rack["inputs"] as? Int == 1 && rack["outputs"] as? Int == 1, "\(rack)")
    }

    /// An isolated rack whose JACK client name another client has: `run` is exit 2 with the name, before anything
    /// starts (the rack's process used to be restarted as a crash, seven times and on).
    @Test(.enabled(if: RackTests.hasSWH))
    func aTakenRackClientNameIsABadInputNotACrashLoop() throws {
        let server = try TestEnvironment.server("racktrust-name")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust-name")
        let other = try TandemProcess(["rack", "--name", "other", "--client", "fx", "--plugin", RackTests.amp],
                                      server: server, log: dir.appendingPathComponent("other.log").path)
        defer { other.process.signal(SIGTERM); _ = other.process.wait(timeout: 10) }
        #expect(other.waitFor("rack other ready"), "\(other.output)")
        let path = try RackIsolationTests.isolatedRackPreset("taken", dir: dir, port: 41000 + Int(getpid() % 20000), plugin: "uri = \"\(RackTests.amp)\"",
                                                             extra: "[recorder]\nchannels = 1")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        let code = run.process.wait(timeout: 20)
        #expect(code == 2 && run.output.contains("rack 'fx': the JACK client name 'fx' is taken"), "\(run.output)")
        #expect(!run.output.contains("rack process started"), "\(run.output)")
    }

    /// `tandem rack --map` names a control the plugin lacks, or a range outside the control's: refused as
    /// `preset check` refuses the same map in a preset (exit 2, nothing started).
    @Test(.enabled(if: RackTests.hasSWH))
    func rackMapsAreCheckedLikeAPresetsMaps() throws {
        let tandem = TestEnvironment.product("tandem")
        for (map, fragment) in [("cc 1 7 -> amp:gian", "has no control 'gian'"),
                                ("cc 1 7 -> amp:gain -500..0", "control 'gain' = -500.0 is outside its range -70.0 to 70.0")] {
            let r = try TestEnvironment.run([tandem, "rack", "--server", "no-such-server", "--plugin",
                                             "\(RackTests.amp),name=amp", "--map", map], timeout: 20)
            #expect(r.code == 2 && r.output.contains(fragment) && r.output.contains("--map '"), "\(map): \(r.output)")
        }
    }

    /// A plugin that aborts in a one-shot `tandem rack` (in process) costs its process, fast: it is gone in well
    /// under a second (the Swift backtracer used to hold every thread, and the server with them, for 32 s), and the
    /// server answers other clients at once.
    @Test(.enabled(if: TestPlugins.canBuild))
    func anAbortingPluginEndsItsProcessAtOnce() throws {
        let lv2 = try TestPlugins.lv2Path()
        let server = try TestEnvironment.server("racktrust-abort")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust-abort")
        let port = 42000 + Int(getpid() % 20000)
        let aborting = try TandemProcess(["rack", "--no-view", "--control-port", "\(port)", "--plugin",
                                          "\(TestPlugins.crash),name=crash,mode=0"], server: server,
                                         extraEnvironment: ["LV2_PATH": lv2], log: dir.appendingPathComponent("abort.log").path)
        #expect(aborting.waitFor("ready"), "\(aborting.output)")
        // Told to abort in run(), on the process thread of an active client.
        let t0 = Date()
        _ = try? RackControlTests.ctl(port, ["/tandem/plugin/set", "rack", "crash", "mode", "2"])
        let code = aborting.process.wait(timeout: 40)
        let seconds = Date().timeIntervalSince(t0)
        #expect(code == 134, "aborted: \(String(describing: code))\n\(aborting.output)")
        #expect(seconds < 2, "gone in \(seconds) s")
        let lsp = try TestEnvironment.run(["jack_lsp", "-s", server.name], timeout: 5)
        #expect(lsp.code == 0, "the server answers: \(lsp.output)")
        print("an aborting plugin's process ended in \(String(format: "%.2f", seconds)) s")
    }

    /// A rack's process ends with the session that started it, even when the session is killed.
    @Test(.enabled(if: RackTests.hasSWH))
    func aRackProcessEndsWithItsSession() throws {
        let server = try TestEnvironment.server("racktrust-orphan")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust-orphan")
        let port = 43000 + Int(getpid() % 20000)
        let path = try RackIsolationTests.isolatedRackPreset("orphan", dir: dir, port: port, plugin: "uri = \"\(RackTests.amp)\"")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("rack process started"), "\(run.output)")
        var pid: pid_t = 0
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            pid = RackIsolationTests.rackPid(port)
            return pid > 0
        })
        run.process.signal(SIGKILL)
        _ = run.process.wait(timeout: 5)
        #expect(TestEnvironment.waitUntil(timeout: 5) { kill(pid, 0) != 0 }, "rack process \(pid) outlived its session")
    }

    /// Over OSC a value out of its range is refused with the range, for a control as for the chain's mix and gain
    /// (`plugin set … 1e30` was clamped while `plugin gain … 1e300` was refused), and the error words name racks.
    @Test(.enabled(if: RackTests.hasSWH))
    func outOfRangeValuesAreRefusedAlikeOverOSC() throws {
        let server = try TestEnvironment.server("racktrust-range")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust-range")
        let port = 44000 + Int(getpid() % 20000)
        let rack = try TandemProcess(["rack", "--name", "fx", "--no-view", "--control-port", "\(port)", "--plugin",
                                      "\(RackTests.amp),name=amp"], server: server, log: dir.appendingPathComponent("rack.log").path)
        defer { rack.process.signal(SIGTERM); _ = rack.process.wait(timeout: 10) }
        #expect(rack.waitFor("ready"), "\(rack.output)")
        for (words, fragment) in [
            (["/tandem/plugin/set", "fx", "amp", "gain", "1e30"], "control 'gain' = 1e+30 is outside its range -70.0 to 70.0"),
            (["/tandem/plugin/set", "fx", "amp", "gain", "-71"], "is outside its range"),
            (["/tandem/plugin/gain", "fx", "1e300"], "gain 1e+300 is out of range (-120 to 24 dB)"),
            (["/tandem/plugin/gain", "fx", "30"], "gain 30 is out of range (-120 to 24 dB)"),
            (["/tandem/plugin/mix", "fx", "1.5"], "out of range (0 to 1)"),
            (["/tandem/plugin/bypass", "fx"], "0"),
            (["/tandem/plugin/bypass", "fx", "amp", "2"], "ENGINE (recorder, player or a rack name)"),
        ] {
            let r = try RackControlTests.ctl(port, words)
            #expect(r.text.contains(fragment), "\(words): \(r)")
        }
        #expect(try RackControlTests.ctl(port, ["/tandem/plugin/get", "fx", "amp", "gain"]).text == "0.0", "unchanged")
    }

    /// `tandem play song.mid --connect RACK:midi_in` connects the player's MIDI port (it said no input port matched),
    /// and a dense MIDI file (40,000 events in 3 s) starts at once on `play` (the player waited 5 s for an audio ring
    /// the full MIDI ring held back, and the control loop with it: `ctl` timed out).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/lv2/eg-fifths.lv2")))
    func aDenseMidiFilePlaysToAMidiPortAtOnce() throws {
        let server = try TestEnvironment.server("racktrust-midi")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racktrust-midi")
        let song = dir.appendingPathComponent("dense.mid").path
        _ = try Mido.run("""
            import sys, mido
            f = mido.MidiFile(type=0, ticks_per_beat=9600); t = mido.MidiTrack(); f.tracks.append(t)
            for i in range(20000):
                t.append(mido.Message('note_on', note=40 + i % 40, velocity=64, time=0 if i == 0 else 2))
                t.append(mido.Message('note_off', note=40 + i % 40, velocity=0, time=1))
            f.save(sys.argv[1])
            """, [song])
        let rack = try TandemProcess(["rack", "--name", "rmid", "--no-view", "--plugin", "http://lv2plug.in/plugins/eg-fifths"],
                                     server: server, log: dir.appendingPathComponent("rack.log").path)
        defer { rack.process.signal(SIGTERM); _ = rack.process.wait(timeout: 10) }
        #expect(rack.waitFor("ready"), "\(rack.output)")
        let port = 45000 + Int(getpid() % 20000)
        let play = try TandemProcess(["play", "--wait", "--no-view", "--control-port", "\(port)", "--connect", "rmid:midi_in", song],
                                     server: server, log: dir.appendingPathComponent("play.log").path)
        defer { play.process.signal(SIGTERM); _ = play.process.wait(timeout: 10) }
        #expect(play.waitFor("connected tandem-play:midi_out -> rmid:midi_in"), "\(play.output)")
        let t0 = Date()
        let r = try RackControlTests.ctl(port, ["play", "play"])
        let seconds = Date().timeIntervalSince(t0)
        #expect(r.code == 0 && seconds < 1, "play answered in \(seconds) s: \(r)")
    }
}
