import Control
import Engine
import Foundation
import Jack
import SoundFile
import Takes
import Testing
import TestSupport

/// LV2 insert chains as a user runs them: `tandem record`/`tandem run` against a private server, real SWH and x42
/// plugins, real peers, samples checked.
@Suite(.serialized) struct PluginTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static let highpass = "http://plugin.org.uk/swh-plugins/highpass_iir"
    static let convolver = "http://gareus.org/oss/lv2/zeroconvolv#Mono"
    static let lv2Installed = FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2")
        && FileManager.default.fileExists(atPath: "/usr/lib/lv2/zeroconvo.lv2")

    /// Recording through the SWH amplifier at -6 dB, with the dry input beside it: the dry channels equal the
    /// source bit for bit, the processed ones equal the dry ones times 10^(-6/20) within float rounding.
    @Test(.enabled(if: lv2Installed && TestEnvironment.hasProgram("sndfile-jackplay")))
    func recordingThroughTheAmplifierScalesEverySample() throws {
        let server = try TestEnvironment.server("plugrec")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("plugrec")
        let noise = Signals.noise(frames: 5 * 48000, channels: 2, seed: 6)
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(noise, channels: 2, path: source)
        let tandem = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--session", "amp", "-t", "8",
                                        "--plugin", "\(Self.amp),gain=-6", "--dry"],
                                       server: server, log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor(" recording: "), "\(tandem.output)")
        let player = try startJackplay(source, pattern: "tandem-rec:in_%d", server: server,
                                       log: dir.appendingPathComponent("jackplay.log").path)
        #expect(player.wait(timeout: 20) != nil)
        #expect(tandem.process.wait(timeout: 20) == 0, "\(tandem.output)")
        let recorded = try TestEnvironment.readAudio(try #require(announcedFile(tandem.output)))
        #expect(recorded.channels == 4)
        let frames = recorded.samples.count / 4
        var dry = [Float](repeating: 0, count: frames * 2)
        var worst: Float = 0
        var nonzero = 0
        let g = Float(pow(10, -6.0 / 20))
        for f in 0..<frames {
            for c in 0..<2 {
                let wet = recorded.samples[f * 4 + c], d = recorded.samples[f * 4 + 2 + c]
                dry[f * 2 + c] = d
                worst = max(worst, abs(wet - d * g))
                if d != 0 { nonzero += 1 }
            }
        }
        let a = AudioCompare.alignment(source: noise, recorded: dry, channels: 2)
        #expect(a.matchedFrames == 5 * 48000 && a.mismatchedFrames == 0, "\(a)")
        #expect(nonzero > 400_000)
        #expect(worst <= 1.2e-7, "largest |wet - dry * 10^(-6/20)| = \(worst)")
        let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
        #expect(report.plugins?.first?.uri == Self.amp && report.plugins?.first?.controls == [.init(symbol: "gain", value: -6)])
        #expect(report.channelNames == ["in_1", "in_2", "in_1-dry", "in_2-dry"] && report.pluginLatencyFrames == 0)
        print("measured: amp -6 dB, \(frames) frames x 2, largest |wet - dry * 10^(-6/20)| = \(worst)")
    }

    /// A filter then an amplifier in the player; the amplifier's gain changed over OSC. The change is in the output
    /// within one period of the reply. Stopped and started again, the session brings the changed value back.
    @Test(.enabled(if: lv2Installed))
    func liveControlChangeReachesTheOutputWithinOnePeriodAndIsRestored() throws {
        let period = 256
        let server = try TestEnvironment.server("plugosc", period: period)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("plugosc")
        let tone = dir.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.sine(frames: 4 * 48000, channels: 1, frequency: 1000, sampleRate: 48000,
                                                  peak: 0.5), channels: 1, path: tone)
        let port = 30000 + Int(getpid() % 20000) + 7
        let preset = dir.appendingPathComponent("chain.toml").path
        try """
        [session]
        name = "chain"
        directory = "\(dir.path)"
        control_port = \(port)
        [player]
        channels = 1
        queue = ["\(tone)"]
        loop = "item"
        [[player.plugins]]
        uri = "\(Self.highpass)"
        controls = { cutoff = 100 }
        [[player.plugins]]
        uri = "\(Self.amp)"
        name = "level"
        controls = { gain = 0 }
        [[connect]]
        from = "tandem-play:out_1"
        to = "cap:in_1"
        """.write(toFile: preset, atomically: true, encoding: .utf8)

        let capture = try TestCapture(name: "cap", server: server.name, channels: 1, seconds: 30)
        let run = try TandemProcess(["run", "--no-view", preset], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("control protocol listening"), "\(run.output)")
        usleep(1_000_000)
        let socket = try UDPSocket(port: 0)
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = in_port_t(UInt16(port).bigEndian)
        destination.sin_addr.s_addr = inet_addr("127.0.0.1")
        socket.send(OSCMessage("/tandem/plugin/set", [.string("player"), .string("level"), .string("gain"), .float(-20)]).encode(),
                    to: destination)
        var reply: OSCMessage?
        var replyFrameTime: UInt32 = 0
        #expect(TestEnvironment.waitUntil(timeout: 5) {
            if let d = socket.receive(limit: 8192), case .success(let m) = OSCMessage.decode(bytes: d.bytes) {
                replyFrameTime = capture.client.frameTime
                reply = m
                return true
            }
            usleep(100)
            return false
        })
        #expect(reply?.arguments.first?.string == "ok", "\(String(describing: reply))")
        usleep(500_000)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        capture.close()
        let x = capture.samples()
        let first = try #require(capture.firstFrameTime)
        // The last loud sample (gain 0 dB: about 0.5; -20 dB: about 0.05) marks the change.
        let lastLoud = try #require(x.lastIndex { abs($0) > 0.2 })
        let changedAt = Int(Int32(bitPattern: first &+ UInt32(lastLoud + 1) &- replyFrameTime))
        print("measured: gain change reached the output \(changedAt) frames after the reply (period \(period))")
        #expect(changedAt <= period, "the change reached the output \(changedAt) frames after the reply (period \(period))")
        #expect(changedAt > -4 * period, "the change came \(-changedAt) frames before the reply")
        let before = x[(lastLoud - 4800)...lastLoud].map { abs($0) }.max() ?? 0
        let after = x[(lastLoud + 4800)..<(lastLoud + 9600)].map { abs($0) }.max() ?? 0
        #expect(before > 0.45 && before < 0.55 && abs(after / before - 0.1) < 0.01, "before \(before), after \(after)")

        // The session saved the chain on the way out; a new run brings -20 dB back.
        let state = "\(dir.path)/chain.plugins/player/level/state.ttl"
        #expect(FileManager.default.fileExists(atPath: state))
        let again = try TandemProcess(["run", "--no-view", preset], server: server,
                                      log: dir.appendingPathComponent("run2.log").path)
        #expect(again.waitFor("control protocol listening"), "\(again.output)")
        let status = try TestEnvironment.run([TestEnvironment.product("tandem"), "status", "--port", "\(port)", "--json"], timeout: 10)
        #expect(status.output.contains("\"symbol\":\"gain\",\"value\":-20"), "\(status.output)")
        again.process.signal(SIGTERM)
        #expect(again.process.wait(timeout: 15) == 0)
    }

    /// zeroconvolv needs the worker, options, bounded block length and URID map. With its "No-OP" LV2 preset it
    /// loads a delta impulse response through the worker and passes the signal (delayed by the latency it reports).
    /// Its state (the impulse response file) is saved with the session and comes back on the next run, without the
    /// preset; with `restore_plugins = false` it does not, and the convolver stays silent.
    @Test(.enabled(if: lv2Installed))
    func workerPluginStateIsSavedAndRestored() throws {
        let server = try TestEnvironment.server("plugstate", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("plugstate")
        let tone = dir.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.sine(frames: 2 * 48000, channels: 1, frequency: 440, sampleRate: 48000,
                                                  peak: 0.5), channels: 1, path: tone)
        let port = 30000 + Int(getpid() % 20000) + 9
        func preset(withLV2Preset: Bool, restore: Bool) throws -> String {
            let path = dir.appendingPathComponent("conv-\(withLV2Preset)-\(restore).toml").path
            try """
            [session]
            name = "conv"
            directory = "\(dir.path)"
            control_port = \(port)
            restore_plugins = \(restore)
            [player]
            channels = 1
            queue = ["\(tone)"]
            loop = "item"
            [[player.plugins]]
            uri = "\(Self.convolver)"
            name = "room"
            \(withLV2Preset ? "preset = \"http://gareus.org/oss/lv2/zeroconvolv/pset#noopMono\"" : "")
            [[connect]]
            from = "tandem-play:out_1"
            to = "cap:in_1"
            """.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        /// Peak of the output over the last second of a 2.5 s run, and the chain's status.
        func peak(_ presetPath: String, _ label: String) throws -> (Float, String) {
            let capture = try TestCapture(name: "cap", server: server.name, channels: 1, seconds: 30)
            let run = try TandemProcess(["run", "--no-view", presetPath], server: server,
                                        log: dir.appendingPathComponent("\(label).log").path)
            #expect(run.waitFor("control protocol listening"), "\(run.output)")
            usleep(2_500_000)
            let status = try TestEnvironment.run([TestEnvironment.product("tandem"), "status", "--port", "\(port)", "--json"], timeout: 10)
            run.process.signal(SIGTERM)
            #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
            capture.close()
            let x = capture.samples()
            return (x.suffix(48000).map { abs($0) }.max() ?? 0, status.output)
        }
        let (first, status) = try peak(try preset(withLV2Preset: true, restore: true), "first")
        #expect(first > 0.45 && first < 0.55, "through the delta IR: peak \(first)")
        #expect(status.contains("\"workerRequests\":") && !status.contains("\"workerRequests\":0"), "\(status)")
        #expect(status.contains("\"latencyFrames\":"), "\(status)")
        let state = try String(contentsOfFile: "\(dir.path)/conv.plugins/player/room/state.ttl", encoding: .utf8)
        #expect(state.contains("delta-48k"), "\(state)")
        let (restored, _) = try peak(try preset(withLV2Preset: false, restore: true), "restored")
        #expect(restored > 0.45 && restored < 0.55, "state restored: peak \(restored)")
        let (fresh, _) = try peak(try preset(withLV2Preset: false, restore: false), "fresh")
        #expect(fresh < 0.01, "no state, no impulse response: peak \(fresh)")
    }

    static let nodelay = "http://gareus.org/oss/lv2/nodelay"
    static let nodelayInstalled = FileManager.default.fileExists(atPath: "/usr/lib/lv2/nodelay.lv2/nodelay.so")

    /// A plugin not installed and one that needs a feature Tandem lacks, each with the LV2 path that holds the
    /// latter (a bundle written here).
    static func needyBundle(_ dir: URL) throws -> [String: String] {
        let bundle = dir.appendingPathComponent("needy.lv2")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try """
        @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
        <urn:tandem:test:needy> a lv2:Plugin ; lv2:binary <file:///usr/lib/lv2/amp-swh.lv2/plugin-linux.so> ;
            lv2:requiredFeature <urn:tandem:test:teleport> ;
            lv2:port [ a lv2:AudioPort, lv2:InputPort ; lv2:index 0 ; lv2:symbol "in" ; lv2:name "In" ] ,
                     [ a lv2:AudioPort, lv2:OutputPort ; lv2:index 1 ; lv2:symbol "out" ; lv2:name "Out" ] .
        """.write(to: bundle.appendingPathComponent("manifest.ttl"), atomically: true, encoding: .utf8)
        return ["LV2_PATH": "\(dir.path):/usr/lib/lv2"]
    }

    /// A plugin that cannot run at start is an error: exit 2, no take, the plugin named. With
    /// `--on-plugin-error bypass` the recording runs without it, says so on stderr, and the take's report lists
    /// what was bypassed and why.
    @Test(.enabled(if: lv2Installed))
    func unusablePluginsStopTheStartUnlessBypassed() throws {
        let server = try TestEnvironment.server("plugbad")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("plugbad")
        let env = try Self.needyBundle(dir)
        let chain = ["--plugin", "http://example.org/not-installed", "--plugin", "urn:tandem:test:needy",
                     "--plugin", "\(Self.amp),gain=-6"]
        let strict = try TandemProcess(["record", "-c", "1", "-d", dir.path, "-t", "1", "--connect", "system:capture_1"]
                                       + chain, server: server, extraEnvironment: env,
                                       log: dir.appendingPathComponent("strict.log").path)
        #expect(strict.process.wait(timeout: 20) == 2, "\(strict.output)")
        #expect(strict.output.contains("plugin not-installed: <http://example.org/not-installed> is not installed"), "\(strict.output)")
        #expect(strict.output.contains("<urn:tandem:test:needy> requires the LV2 feature <urn:tandem:test:teleport>"), "\(strict.output)")
        #expect(strict.output.contains("nothing started") && !strict.output.contains(" recording: "), "\(strict.output)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!files.contains { $0.hasSuffix(".wav") || $0.hasSuffix(".json") }, "\(files)")

        // One per kind: channels that do not fit, an unknown control symbol, a value out of range.
        for (args, words) in [
            (["-c", "3", "--plugin", "http://gareus.org/oss/lv2/zeroconvolv#Stereo"], "3-channel"),
            (["-c", "1", "--plugin", "\(Self.amp),gian=-6"], "has no control 'gian'"),
            (["-c", "1", "--plugin", "\(Self.amp),gain=500"], "is outside"),
        ] {
            let t = try TandemProcess(["record", "-d", dir.path, "-t", "1"] + args, server: server,
                                      log: dir.appendingPathComponent("kind.log").path)
            #expect(t.process.wait(timeout: 20) == 2, "\(args): \(t.output)")
            #expect(t.output.contains(words) && !t.output.contains(" recording: "), "\(args): \(t.output)")
        }

        let bypass = try TandemProcess(["record", "-c", "1", "-d", dir.path, "-t", "1", "--connect", "system:capture_1",
                                        "--on-plugin-error", "bypass"] + chain,
                                       server: server, extraEnvironment: env,
                                       log: dir.appendingPathComponent("bypass.log").path)
        #expect(bypass.process.wait(timeout: 20) == 0, "\(bypass.output)")
        #expect(bypass.output.contains("recorder plugin not-installed BYPASSED: <http://example.org/not-installed> is not installed"),
                "\(bypass.output)")
        #expect(bypass.output.contains("recorder plugin needy BYPASSED"), "\(bypass.output)")
        let report = try TakeReport.read(from: try #require(announcedReport(bypass.output)))
        #expect(report.plugins?.map(\.name) == ["amp"], "\(String(describing: report.plugins))")
        let problems = report.pluginProblems ?? []
        #expect(problems.map(\.plugin) == ["not-installed", "needy"] && problems.allSatisfy(\.bypassed), "\(problems)")
        #expect(problems.map(\.code) == ["notInstalled", "missingFeature"], "\(problems)")

        // The player too.
        let tone = dir.appendingPathComponent("t.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1), channels: 1, path: tone)
        let play = try TandemProcess(["play", tone, "--plugin", "http://example.org/not-installed"], server: server,
                                     log: dir.appendingPathComponent("play.log").path)
        #expect(play.process.wait(timeout: 20) == 2, "\(play.output)")
        #expect(play.output.contains("not-installed") && !play.output.contains("playing 1/1"), "\(play.output)")
    }

    /// Recording through a plugin that delays by 1000 frames and reports it, with the dry input beside it: the
    /// processed and dry channels of the take are equal sample for sample (aligned to the frame), the dry ones
    /// equal the source, and the report says how much latency was removed. At a delay of 0 the channels are
    /// identical too.
    @Test(.enabled(if: nodelayInstalled && TestEnvironment.hasProgram("sndfile-jackplay")))
    func takesThroughALatentPluginAreAlignedToTheFrame() throws {
        let server = try TestEnvironment.server("pluglat")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("pluglat")
        let noise = Signals.noise(frames: 2 * 48000, channels: 1, seed: 11)
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(noise, channels: 1, path: source)
        for delay in [1000, 0] {
            let tandem = try TandemProcess(["record", "-c", "1", "-d", dir.path, "--session", "lat\(delay)", "-t", "4",
                                            "--plugin", "\(Self.nodelay),delay=\(delay)", "--dry"],
                                           server: server, log: dir.appendingPathComponent("lat\(delay).log").path)
            #expect(tandem.waitFor(" recording: "), "\(tandem.output)")
            let player = try startJackplay(source, pattern: "tandem-rec:in_%d", server: server,
                                           log: dir.appendingPathComponent("jackplay.log").path)
            #expect(player.wait(timeout: 20) != nil)
            #expect(tandem.process.wait(timeout: 20) == 0, "\(tandem.output)")
            let recorded = try TestEnvironment.readAudio(try #require(announcedFile(tandem.output)))
            #expect(recorded.channels == 2)
            let frames = recorded.samples.count / 2
            let wet = (0..<frames).map { recorded.samples[2 * $0] }, dry = (0..<frames).map { recorded.samples[2 * $0 + 1] }
            let differing = (0..<frames).filter { wet[$0] != dry[$0] }
            // Where the processed channel matches the dry one best, as a check on the measure.
            let firstLoud = dry.firstIndex { $0 != 0 } ?? 0
            let offset = (-1100...1100).first { k in
                (firstLoud..<min(frames, firstLoud + 2000)).allSatisfy { i in
                    i + k >= 0 && i + k < frames && wet[i + k] == dry[i]
                }
            }
            print("measured: nodelay delay=\(delay): \(frames) frames, \(differing.count) differ between processed and"
                  + " dry, processed = dry shifted by \(offset.map(String.init) ?? "none") frames")
            #expect(differing.isEmpty, "delay \(delay): \(differing.count) frames differ, first at \(differing.first ?? -1); processed lags dry by \(offset.map(String.init) ?? "?")")
            let a = AudioCompare.alignment(source: noise, recorded: dry, channels: 1)
            #expect(a.matchedFrames == 2 * 48000 && a.mismatchedFrames == 0, "\(a)")
            let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
            #expect(report.latencyCompensation?.frames == delay, "\(String(describing: report.latencyCompensation))")
            #expect(report.pluginLatencyFrames == delay && report.latencyCompensation?.changes == nil)
            #expect(report.frames == 4 * 48000, "\(report.frames)")
        }
    }

    /// `tandem play --plugin` with a plugin that delays by half a second: the whole file comes out before the
    /// exit (the chain's latency rings out), every frame in order.
    @Test(.enabled(if: nodelayInstalled))
    func playRingsOutTheChainsLatencyBeforeItExits() throws {
        let server = try TestEnvironment.server("plugtail")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("plugtail")
        let noise = Signals.noise(frames: 48000, channels: 1, seed: 12)
        let source = dir.appendingPathComponent("n.wav").path
        try TestEnvironment.writeWAV(noise, channels: 1, path: source)
        let sink = try TestCapture(name: "sink", server: server.name, channels: 1, seconds: 8)
        let tandem = try TandemProcess(["play", "--connect", "sink:in_1", "--tail", "0.1",
                                        "--plugin", "\(Self.nodelay),delay=24000", source], server: server,
                                       log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.process.wait(timeout: 20) == 0, "\(tandem.output)")
        sink.close()
        let played = sink.samples()
        let a = AudioCompare.alignment(source: noise, recorded: played, channels: 1)
        print("measured: play through a 24000-frame delay: \(a.matchedFrames) of 48000 frames out before the exit")
        #expect(a.matchedFrames == 48000 && a.mismatchedFrames == 0, "\(a); \(tandem.output)")
        #expect(tandem.output.contains("frames of plugin latency and tail rung out"), "\(tandem.output)")
    }

    /// `tandem preset check` looks every plugin up: a URI that is not installed, a required feature Tandem lacks,
    /// channels that do not fit, an unknown control and a value out of range are problems with file, line and key
    /// (exit 2); with `on_plugin_error = "bypass"` they are listed and the check passes; with no LV2 plugins to
    /// look in, it says that it skipped the lookup.
    @Test(.enabled(if: lv2Installed))
    func presetCheckLooksEveryPluginUp() throws {
        let dir = TestEnvironment.temporaryDirectory("plugcheck")
        let env = try Self.needyBundle(dir)
        func preset(_ name: String, policy: String = "fail") throws -> String {
            let path = dir.appendingPathComponent(name).path
            try """
            [session]
            directory = "\(dir.path)"
            on_plugin_error = "\(policy)"
            [recorder]
            channels = 3
            [[recorder.plugins]]
            uri = "http://example.org/not-installed"
            [[recorder.plugins]]
            uri = "http://gareus.org/oss/lv2/zeroconvolv#Stereo"
            [[recorder.plugins]]
            uri = "\(Self.amp)"
            controls = { gian = 1, gain = 500 }
            preset = "urn:tandem:no-such-preset"
            [[recorder.plugins]]
            uri = "urn:tandem:test:needy"
            """.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let tandem = TestEnvironment.product("tandem")
        let bad = try TestEnvironment.run([tandem, "preset", "check", try preset("fx.toml")], environment: env)
        #expect(bad.code == 2, "\(bad.output)")
        for line in [
            "fx.toml:7: recorder.plugins.uri: plugin not-installed: <http://example.org/not-installed> is not installed",
            "fx.toml:9: recorder.plugins.uri: plugin stereo: <http://gareus.org/oss/lv2/zeroconvolv#Stereo> has audio"
                + " inputs (in_1, in_2) and outputs (out_1, out_2): 2 → 2 channel(s) cannot follow a 3-channel path",
            "fx.toml:12: recorder.plugins.controls.gian: plugin amp: <\(Self.amp)> has no control 'gian'",
            "fx.toml:12: recorder.plugins.controls.gain: plugin amp: control 'gain' = 500.0 is outside its range",
            "fx.toml:13: recorder.plugins.preset: plugin amp: LV2 preset <urn:tandem:no-such-preset> not found",
            "fx.toml:15: recorder.plugins.uri: plugin needy: <urn:tandem:test:needy> requires the LV2 feature",
        ] {
            #expect(bad.output.contains(line), "missing: \(line)\n\(bad.output)")
        }
        let bypass = try TestEnvironment.run([tandem, "preset", "check", try preset("fxb.toml", policy: "bypass")],
                                             environment: env)
        #expect(bypass.code == 0 && bypass.output.contains("6 plugin problem(s) bypassed"), "\(bypass.output)")
        let empty = dir.appendingPathComponent("no-lv2")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let skipped = try TestEnvironment.run([tandem, "preset", "check", try preset("fx.toml")],
                                              environment: ["LV2_PATH": empty.path])
        #expect(skipped.code == 0 && skipped.output.contains("plugins not looked up"), "\(skipped.output)")
        let good = dir.appendingPathComponent("good.toml").path
        try "[session]\ndirectory = \"\(dir.path)\"\n[player]\nchannels = 2\n[[player.plugins]]\nuri = \"\(Self.amp)\"\ncontrols = { gain = -6 }\n"
            .write(toFile: good, atomically: true, encoding: .utf8)
        let ok = try TestEnvironment.run([tandem, "preset", "check", good])
        #expect(ok.code == 0 && ok.output.contains("plugins looked up"), "\(ok.output)")
    }

    /// `tandem run`: a preset whose plugin is not installed starts nothing (exit 2, file and line named). A running
    /// session whose re-applied preset (SIGHUP) asks for a plugin that cannot run goes on without it, and says so
    /// in its events (stdout and OSC `plugin-bypassed`), its status and the running take's report.
    @Test(.enabled(if: lv2Installed))
    func runStartsNothingForAMissingPluginAndBypassesOneThatFailsLater() throws {
        let server = try TestEnvironment.server("pluglate")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("pluglate")
        let port = 30000 + Int(getpid() % 20000) + 11
        let path = dir.appendingPathComponent("late.toml").path
        func write(_ uris: [String]) throws {
            try ("""
            [session]
            name = "late"
            directory = "\(dir.path)"
            control_port = \(port)
            [recorder]
            channels = 1
            """ + uris.map { "\n[[recorder.plugins]]\nuri = \"\($0)\"" }.joined() + "\n")
                .write(toFile: path, atomically: true, encoding: .utf8)
        }
        try write([Self.amp, "http://example.org/not-installed"])
        let refused = try TandemProcess(["run", "--no-view", path], server: server,
                                        log: dir.appendingPathComponent("refused.log").path)
        #expect(refused.process.wait(timeout: 15) == 2, "\(refused.output)")
        #expect(refused.output.contains("late.toml:10: recorder.plugins.uri: plugin not-installed")
                && refused.output.contains("nothing started"), "\(refused.output)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!files.contains { $0.hasSuffix(".wav") }, "\(files)")

        try write([Self.amp])
        let run = try TandemProcess(["run", "--no-view", path], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor(" recording: ") && run.waitFor("control protocol listening"), "\(run.output)")
        let listen = 20000 + Int(getpid() % 10000) + 13
        let socket = try UDPSocket(port: listen)
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = in_port_t(UInt16(port).bigEndian)
        destination.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = socket.send(OSCMessage("/tandem/subscribe", [.string("osc.udp://127.0.0.1:\(listen)/"), .float(10)]).encode(),
                        to: destination)
        usleep(300_000)
        try write([Self.amp, "http://example.org/not-installed"])
        run.process.signal(SIGHUP)
        var event: [String] = []
        #expect(TestEnvironment.waitUntil(timeout: 5) {
            if let d = socket.receive(limit: 65536), case .success(let m) = OSCMessage.decode(bytes: d.bytes),
               m.path == "/tandem/event", m.arguments.first?.string?.hasPrefix("plugin-") == true {
                event = m.arguments.compactMap(\.string)
                return true
            }
            usleep(1000)
            return false
        }, "no plugin event: \(run.output)")
        #expect(event.first == "plugin-bypassed" && event.last?.contains("recorder not-installed: <http://example.org/not-installed> is not installed") == true,
                "\(event)")
        #expect(run.waitFor("recorder plugin not-installed BYPASSED"), "\(run.output)")
        let status = try TestEnvironment.run([TestEnvironment.product("tandem"), "status", "--port", "\(port)", "--json"], timeout: 10)
        #expect(status.output.contains("bypassed: plugin not-installed"), "\(status.output)")
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let report = try TakeReport.read(from: try #require(announcedReport(run.output)))
        let problem = try #require(report.pluginProblems?.first, "\(String(describing: report.pluginProblems))")
        #expect(problem.plugin == "not-installed" && problem.bypassed && problem.code == "notInstalled"
                && (problem.atFrame ?? 0) > 0, "\(problem)")
    }

    /// The chain's latency changed during a take (the delay set live over OSC from 1000 to 2000 frames): the report
    /// says where, and the processed and dry channels stay aligned to the frame on both sides of the change (the
    /// plugin's own cross-fade aside, which starts on the frame the report names).
    @Test(.enabled(if: nodelayInstalled && TestEnvironment.hasProgram("sndfile-jackplay")))
    func aLatencyChangeDuringATakeIsReportedAndKeepsTheChannelsAligned() throws {
        let server = try TestEnvironment.server("pluglive")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("pluglive")
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 3 * 48000, channels: 1, seed: 13), channels: 1, path: source)
        let port = 30000 + Int(getpid() % 20000) + 15
        let preset = dir.appendingPathComponent("live.toml").path
        try """
        [session]
        name = "live"
        directory = "\(dir.path)"
        control_port = \(port)
        [recorder]
        channels = 1
        dry = true
        [[recorder.plugins]]
        uri = "\(Self.nodelay)"
        name = "delay"
        controls = { delay = 1000 }
        """.write(toFile: preset, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", preset], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor(" recording: ") && run.waitFor("control protocol listening"), "\(run.output)")
        let player = try startJackplay(source, pattern: "tandem-rec:in_%d", server: server,
                                       log: dir.appendingPathComponent("jackplay.log").path)
        usleep(1_200_000)
        let set = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)",
                                           "/tandem/plugin/set", "recorder", "delay", "delay", "2000"], timeout: 10)
        #expect(set.code == 0, "\(set.output)")
        #expect(player.wait(timeout: 20) != nil)
        usleep(300_000)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let report = try TakeReport.read(from: try #require(announcedReport(run.output)))
        let compensation = try #require(report.latencyCompensation)
        let change = try #require(compensation.changes?.first, "\(compensation)")
        #expect(compensation.frames == 1000 && change.frames == 2000 && compensation.changes?.count == 1, "\(compensation)")
        let recorded = try TestEnvironment.readAudio(try #require(announcedFile(run.output)))
        let frames = recorded.samples.count / 2
        let differing = (0..<frames).filter { recorded.samples[2 * $0] != recorded.samples[2 * $0 + 1] }
        let loud = (0..<frames).filter { recorded.samples[2 * $0 + 1] != 0 }.count
        print("measured: delay 1000 -> 2000 at take frame \(change.atFrame): \(differing.count) of \(frames) frames differ"
              + " between processed and dry (\(loud) non-silent)" + (differing.isEmpty ? "" : ", from \(differing.first!) to \(differing.last!)"))
        #expect(loud > 2 * 48000)
        // Only the plugin's own transition differs (x42's delay line cross-fades a change over 64 frames), starting
        // on the very frame the report names: before and after it the channels are equal sample for sample.
        #expect(differing.allSatisfy { $0 >= change.atFrame && $0 < change.atFrame + 256 } && differing.count <= 256,
                "\(differing.count) frames differ, from \(differing.first ?? -1) to \(differing.last ?? -1); change at \(change.atFrame)")
    }
}
