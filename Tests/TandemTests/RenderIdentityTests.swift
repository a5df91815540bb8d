import Commands
import Control
import Foundation
import Jack
import Plugins
import Render
import Testing
import TestSupport

/// Issue 39's first acceptance line: a render equals a live take of the same input through the same chain on a
/// dummy server, sample for sample, at periods 64 and 256, with and without a latent plugin (x42 nodelay), with
/// control changes sent over OSC while the take records and applied offline at the frames the take's log gives;
/// and a synth played from a MIDI file. The figures go to stdout ("render identity: ...").
@Suite(.serialized) struct RenderIdentityTests {
    static let nodelay = "http://gareus.org/oss/lv2/nodelay"
    static let dx10 = "http://drobilla.net/plugins/mda/DX10"
    static var hasPlugins: Bool {
        RackTests.hasSWH && PluginHost.shared.plugin(nodelay) != nil
    }

    /// What the test asks live: at input frame `at` (about: OSC cannot aim at a frame), this command.
    struct Change {
        let at: Int
        let address: String
        let values: [CommandValue]
    }

    enum Flavor: String, CustomStringConvertible, Sendable {
        /// The recorder's insert chain, the dry input recorded beside it (the podcaster's take).
        case recorder
        /// A rack between the player and the recorder, in the session's process.
        case rack
        /// The same rack in its own process (its changes come back over the heartbeat pipe).
        case isolatedRack = "isolated-rack"
        var description: String { rawValue }
        var engine: String { self == .recorder ? "recorder" : "fx" }
    }

    /// The amp of every flavour: swh's LV2 build, or its LADSPA build (issue 47: a LADSPA chain live and rendered).
    static let ladspaAmp = "ladspa:amp_1181/amp"
    static func ampSymbol(_ ladspa: Bool) -> String { ladspa ? "amps_gain_db" : "gain" }

    static func chain(_ nodelay: Bool, ladspa: Bool = false) -> String {
        var s = """
            [[PLUGINS]]
            uri = "\(ladspa ? ladspaAmp : RackTests.amp)"
            name = "amp"
            controls = { \(ampSymbol(ladspa)) = -6 }

            """
        if nodelay { s += "[[PLUGINS]]\nuri = \"\(Self.nodelay)\"\ncontrols = { delay = 1000 }\n" }
        return s
    }

    static func preset(_ flavor: Flavor, nodelay: Bool, dir: URL, source: String, port: Int, seconds: Double,
                       ladspa: Bool = false) -> String {
        var s = """
            [session]
            name = "live"
            directory = "\(dir.path)"
            exit_after = "take"
            save_plugins = false
            restore_plugins = false
            control_port = \(port)
            [recorder]
            client = "id-rec"
            channels = 2
            duration = \(seconds)

            """
        if flavor == .recorder {
            s += "dry = true\n" + chain(nodelay, ladspa: ladspa).replacingOccurrences(of: "PLUGINS", with: "recorder.plugins")
        }
        s += """
            [player]
            client = "id-play"
            channels = 2
            queue = ["\(source)"]
            start = "with-recorder"

            """
        if flavor == .recorder {
            s += "[[connect]]\nfrom = \"id-play:out_*\"\nto = \"id-rec:in_*\"\n"
        } else {
            s += """
                [[rack]]
                name = "fx"
                client = "id-fx"
                inputs = 2
                outputs = 2
                isolate = \(flavor == .isolatedRack)

                """
            s += chain(nodelay, ladspa: ladspa).replacingOccurrences(of: "PLUGINS", with: "rack.plugins")
            s += """
                [[connect]]
                from = "id-play:out_*"
                to = "id-fx:in_*"
                [[connect]]
                from = "id-fx:out_*"
                to = "id-rec:in_*"

                """
        }
        return s
    }

    /// Takes of a live setup at most, when the server drops cycles (a loaded machine): JACK then loses or repeats a
    /// period upstream of every client, and the live take itself is no longer what the chain made of its input.
    static let attempts = 5

    /// One live take of `source` with `changes` sent over OSC near their frames; the take's file and report. Takes
    /// again (at most `attempts` times) when the server dropped cycles.
    static func live(_ preset: String, server: JackServer, dir: URL, port: Int, changes: [Change],
                     seconds: Double) throws -> (take: String, report: String, xruns: Int) {
        var last: (String, String, Int)?
        for attempt in 1...attempts {
            let attemptDir = dir.appendingPathComponent("take\(attempt)")
            try FileManager.default.createDirectory(at: attemptDir, withIntermediateDirectories: true)
            let path = attemptDir.appendingPathComponent("live.toml").path
            try preset.replacingOccurrences(of: "directory = \"\(dir.path)\"", with: "directory = \"\(attemptDir.path)\"")
                .write(toFile: path, atomically: true, encoding: .utf8)
            let run = try TandemProcess(["run", "--no-view", path], server: server,
                                        log: attemptDir.appendingPathComponent("run.log").path)
            #expect(run.waitFor("take 1 recording", timeout: 20), "\(run.output)")
            let started = Date()
            for c in changes {
                let due = Double(c.at) / 48000
                let wait = due - Date().timeIntervalSince(started)
                if wait > 0 { usleep(UInt32(wait * 1e6)) }
                let reply = try CommandSurfacesTests.osc(port, c.address, c.values)
                #expect(reply.ok, "\(c.address): \(reply.detail)")
            }
            #expect(run.process.wait(timeout: seconds + 20) == 0, "\(run.output)")
            let take = try #require(announcedFile(run.output), "\(run.output)")
            let report = try #require(announcedReport(run.output))
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any] ?? [:]
            let xruns = (json["xruns"] as? Int ?? 0) + (json["missedFrames"] as? Int ?? 0) + (json["repeatedFrames"] as? Int ?? 0)
            last = (take, report, xruns)
            if xruns == 0 { break }
        }
        let (take, report, xruns) = try #require(last)
        return (take, report, xruns)
    }

    /// Frames of `channels` channels from interleaved samples, the first `count` of each frame's channels.
    static func frames(_ samples: [Float], channels: Int, take: Int) -> [[Float]] {
        stride(from: 0, to: samples.count - channels + 1, by: channels).map { Array(samples[$0..<($0 + take)]) }
    }

    /// Renders the take again (`--take`) and once more from its log written as an automation file; both must equal
    /// the take. Returns the figures.
    static func check(_ flavor: Flavor, period: Int, nodelay: Bool, ladspa: Bool = false) throws -> String {
        let server = try TestEnvironment.server("rid", period: period)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("render-identity-\(flavor)-\(period)")
        let source = dir.appendingPathComponent("src.wav").path
        // An isolated rack's process may still be starting when the take does: a second of silence first.
        let lead = flavor == .isolatedRack ? 48000 : 0
        try TestEnvironment.writeWAV([Float](repeating: 0, count: lead * 2)
                                     + Signals.noise(frames: 48000 * 5 / 2, channels: 2).map { $0 * 0.6 }, channels: 2,
                                     path: source, sample: .float32)
        let port = 30000 + Int(getpid() % 20000) + period % 7 + (nodelay ? 1 : 0) * 11 + (flavor == .rack ? 0 : 23)
        let e = flavor.engine
        let changes = [Change(at: lead + 24000, address: "/tandem/plugin/set", values: [.text(e), .text("amp"), .text(ampSymbol(ladspa)), .number(-12)]),
                       Change(at: lead + 48000, address: "/tandem/plugin/bypass", values: [.text(e), .text("amp"), .number(1)]),
                       Change(at: lead + 72000, address: "/tandem/plugin/mix", values: [.text(e), .number(0.5)]),
                       Change(at: lead + 96000, address: "/tandem/plugin/gain", values: [.text(e), .number(-3.5)])]
        let seconds = 3.0 + Double(lead) / 48000
        let text = preset(flavor, nodelay: nodelay, dir: dir, source: source, port: port, seconds: seconds, ladspa: ladspa)
        let (take, reportPath, xruns) = try live(text, server: server, dir: dir, port: port, changes: changes, seconds: seconds)
        let presetPath = dir.appendingPathComponent("render.toml").path
        try text.replacingOccurrences(of: "control_port = \(port)\n", with: "").write(toFile: presetPath, atomically: true, encoding: .utf8)
        let report = try JSONDecoder().decode(TakeSidecar.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
        let log = try #require(report.controlLog)
        #expect(log.period == period && (0..<period).contains(log.cycleOffset))
        let logged = log.entries.filter { $0.engine == e }
        #expect(logged.map(\.address) == changes.map(\.address), "every change in the log: \(log.entries)")
        for (c, l) in zip(changes, logged) {
            #expect((l.frame + log.cycleOffset) % period == 0, "applied at a cycle's start: \(l)")
            #expect(abs(l.frame - c.at) < 48000 / 2, "near where it was sent: \(l.frame) for \(c.at)")
        }

        // Rendered again from the take's report.
        let out = dir.appendingPathComponent("again.wav").path
        let r1 = try TestEnvironment.run([TestEnvironment.product("tandem"), "render", presetPath, "--take", reportPath,
                                          "-o", out, "--tail", "0"], timeout: 120)
        #expect(r1.code == 0, "\(r1.output)")
        // And from the log as an automation file, over the take's sources, with its period and cycle offset.
        let auto = dir.appendingPathComponent("log.txt").path
        try logged.map(\.line).joined(separator: "\n").write(toFile: auto, atomically: true, encoding: .utf8)
        let out2 = dir.appendingPathComponent("list.wav").path
        var args = [TestEnvironment.product("tandem"), "render", presetPath, "--engine", e, "--automation", auto,
                    "--period", "\(period)", "--cycle-offset", "\(log.cycleOffset)", "-o", out2, "--tail", "0"]
        args += flavor == .recorder ? ["--channels", "3,4", take] : [source]
        let r2 = try TestEnvironment.run(args, timeout: 120)
        #expect(r2.code == 0, "\(r2.output)")

        let live = try TestEnvironment.readAudio(take)
        let liveFrames = frames(live.samples, channels: live.channels, take: 2)
        let latency = try RenderReport.read(from: (out as NSString).deletingPathExtension + ".json").latency.frames
        #expect(latency == (nodelay ? 1000 : 0))
        // The recorder compensates its chain's latency; a rack's output reaches the take `latency` frames late.
        let shift = flavor == .recorder ? 0 : latency
        var figures: [String] = []
        for (name, file) in [("--take", out), ("--automation", out2)] {
            let rendered = frames(try TestEnvironment.readAudio(file).samples, channels: 2, take: 2)
            let n = min(rendered.count, liveFrames.count - shift)
            var differ = 0
            var first: Int?
            for i in 0..<n where rendered[i] != liveFrames[i + shift] {
                differ += 1
                if first == nil { first = i }
            }
            let what = "\(flavor) period \(period) nodelay \(nodelay) \(name): \(differ) of \(n) frames differ, the first at"
                + " \(first ?? -1) (take xruns \(xruns))"
            #expect(n > 96000)
            if xruns > 0 {
                // Every take had cycles dropped by the server: the live side is broken, not the render.
                withKnownIssue("the server dropped cycles in every live take (a loaded machine): \(what)", isIntermittent: true) {
                    #expect(differ == 0, "\(what)")
                }
            } else {
                #expect(differ == 0, "\(what)")
            }
            figures.append("\(name) \(differ) of \(n) frames differ")
        }
        let line = "render identity: \(flavor)\(ladspa ? " (LADSPA amp)" : ""), period \(period), \(nodelay ? "nodelay 1000 (latency \(latency))" : "no latent plugin"):"
            + " \(figures.joined(separator: ", ")); log frames \(logged.map(\.frame)) for OSC sent near \(changes.map(\.at));"
            + " take xruns+missed \(xruns)"
        print(line)
        return line
    }

    @Test(.enabled(if: hasPlugins), arguments: [64, 256], [false, true])
    func aTakeThroughTheRecordersChainRendersAgainToTheSample(period: Int, nodelay: Bool) throws {
        _ = try Self.check(.recorder, period: period, nodelay: nodelay)
    }

    @Test(.enabled(if: hasPlugins), arguments: [64, 256], [false, true])
    func aTakeThroughARackRendersAgainToTheSample(period: Int, nodelay: Bool) throws {
        _ = try Self.check(.rack, period: period, nodelay: nodelay)
    }

    /// The same with swh's amp in its LADSPA build, in the session's process and isolated (issue 47).
    @Test(.enabled(if: hasPlugins && FileManager.default.fileExists(atPath: "/usr/lib/ladspa/amp_1181.so")),
          arguments: [Flavor.rack, .isolatedRack])
    func aTakeThroughALADSPAChainRendersAgainToTheSample(flavor: Flavor) throws {
        _ = try Self.check(flavor, period: 256, nodelay: true, ladspa: true)
    }

    /// A plugin added to the chain while a take runs is in the take's log; rendering the take again refuses it in
    /// words (a render applies values, not chain edits) instead of rendering the chain as it stood before.
    @Test(.enabled(if: hasPlugins))
    func aChainEditedDuringATakeIsNamedAndTheRenderRefusesIt() throws {
        let server = try TestEnvironment.server("ridedit", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("render-identity-edit")
        let source = dir.appendingPathComponent("src.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000 * 3, channels: 2).map { $0 * 0.5 }, channels: 2,
                                     path: source, sample: .float32)
        let port = 30000 + Int(getpid() % 20000) + 41
        let text = Self.preset(.rack, nodelay: false, dir: dir, source: source, port: port, seconds: 2.5)
        let add = Change(at: 48000, address: "/tandem/plugin/add", values: [.text("fx"), .text(RackTests.amp + ",name=amp2")])
        let (_, reportPath, _) = try Self.live(text, server: server, dir: dir, port: port, changes: [add], seconds: 2.5)
        let report = try JSONDecoder().decode(TakeSidecar.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
        let logged = try #require(report.controlLog).entries.map(\.address)
        #expect(logged.contains("/tandem/plugin/add"), "\(logged)")
        let presetPath = dir.appendingPathComponent("render.toml").path
        try text.replacingOccurrences(of: "control_port = \(port)\n", with: "").write(toFile: presetPath, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("again.wav").path
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "render", presetPath, "--take", reportPath,
                                         "-o", out, "--tail", "0"], timeout: 120)
        #expect(r.code == 2 && r.output.contains("/tandem/plugin/add"), "\(r.code): \(r.output)")
        #expect(!FileManager.default.fileExists(atPath: out))
        print("render of an edited take: exit \(r.code): \(r.output.split(separator: "\n").first ?? "")")
    }

    /// An isolated rack's changes come back to the session over its heartbeat pipe, at their cycles.
    @Test(.enabled(if: hasPlugins))
    func anIsolatedRacksChangesAreLoggedAndRenderedToo() throws {
        _ = try Self.check(.isolatedRack, period: 256, nodelay: true)
    }

    /// A synth played from a MIDI file by the player, live, and rendered from the same file.
    @Test(.enabled(if: PluginHost.shared.plugin(dx10) != nil), arguments: [64, 256])
    func aSynthFromAMIDIFileRendersAsItPlayedLive(period: Int) throws {
        let server = try TestEnvironment.server("rid-midi", period: period)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("render-identity-midi-\(period)")
        let song = dir.appendingPathComponent("song.mid").path
        // Notes at 120 bpm, 480 ticks a beat: an eighth note each (held 200 ticks), then a rest.
        var track: [UInt8] = [0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20]
        func delta(_ ticks: Int) -> [UInt8] {
            var v = ticks, out = [UInt8(v & 0x7F)]
            while v > 0x7F { v >>= 7; out.insert(UInt8(v & 0x7F) | 0x80, at: 0) }
            return out
        }
        for note: UInt8 in [60, 64, 67, 72, 67, 64, 60] {
            track += delta(40) + [0x90, note, 100] + delta(200) + [0x80, note, 0]
        }
        track += delta(480) + [0xFF, 0x2F, 0x00]
        let length = UInt32(track.count)
        let bytes: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0x01, 0xE0] + Array("MTrk".utf8)
            + [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)] + track
        try Data(bytes).write(to: URL(fileURLWithPath: song))
        let text = """
            [session]
            name = "live"
            directory = "\(dir.path)"
            exit_after = "take"
            save_plugins = false
            [recorder]
            client = "idm-rec"
            channels = 2
            duration = 3
            [player]
            client = "idm-play"
            channels = 1
            queue = ["\(song)"]
            start = "with-recorder"
            [[rack]]
            name = "synth"
            client = "idm-synth"
            isolate = false
            [[rack.plugins]]
            uri = "\(Self.dx10)"
            [[connect]]
            from = "idm-play:midi_out"
            to = "idm-synth:midi_in"
            [[connect]]
            from = "idm-synth:out_*"
            to = "idm-rec:in_*"
            """
        let (take, reportPath, xruns) = try Self.live(text, server: server, dir: dir, port: 0, changes: [], seconds: 3)
        let presetPath = dir.appendingPathComponent("render.toml").path
        try text.write(toFile: presetPath, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("synth.wav").path
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "render", presetPath, "--take", reportPath,
                                         "-o", out, "--tail", "0"], timeout: 120)
        #expect(r.code == 0, "\(r.output)")
        let live = Self.frames(try TestEnvironment.readAudio(take).samples, channels: 2, take: 2)
        let rendered = Self.frames(try TestEnvironment.readAudio(out).samples, channels: 2, take: 2)
        let n = min(live.count, rendered.count)
        let differ = (0..<n).filter { live[$0] != rendered[$0] }.count
        let loud = rendered.contains { $0.contains { abs($0) > 0.05 } }
        #expect(loud && n >= 48000)
        if xruns > 0 {
            withKnownIssue("the server dropped cycles in every live take (a loaded machine)", isIntermittent: true) {
                #expect(differ == 0, "\(differ) of \(n) frames differ (take xruns \(xruns))")
            }
        } else {
            #expect(differ == 0, "\(differ) of \(n) frames differ")
        }
        print("render identity: synth (mda DX10) from a MIDI file, period \(period): \(differ) of \(n) frames differ;"
              + " take xruns+missed \(xruns)")
    }
}
