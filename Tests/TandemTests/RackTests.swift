import Takes
import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// Racks: a chain live between JACK ports, in the same cycle, through the session like every other engine.
@Suite(.serialized) struct RackTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static var hasSWH: Bool { FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2") }

    /// Noise from a player goes to the recorder twice: straight, and through a rack running an amplifier at -6 dB.
    /// The rack's output is the input times the gain on the same frame: no added latency, nothing lost.
    @Test(.enabled(if: hasSWH))
    func aRackProcessesInTheSameCycle() throws {
        let server = try TestEnvironment.server("rack")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rack")
        let noise = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: noise, sample: .float32)
        let port = 32000 + Int(getpid() % 20000)
        let play = try TandemProcess(["play", "--wait", "--loop", "item", "--control-port", "\(port)", noise],
                                     server: server, log: dir.appendingPathComponent("play.log").path)
        defer { play.process.signal(SIGTERM); _ = play.process.wait(timeout: 10) }
        #expect(play.waitFor("control protocol listening"), "\(play.output)")
        let rack = try TandemProcess(["rack", "--name", "level", "--plugin", "\(Self.amp),gain=-6",
                                      "--connect-in", "tandem-play:out_1"],
                                     server: server, log: dir.appendingPathComponent("rack.log").path)
        defer { rack.process.signal(SIGTERM); _ = rack.process.wait(timeout: 10) }
        #expect(rack.waitFor("connected tandem-play:out_1 -> level:in_1"), "\(rack.output)")
        let rec = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--session", "through",
                                     "--connect", "tandem-play:out_1", "--connect", "level:out_1"],
                                    server: server, log: dir.appendingPathComponent("rec.log").path)
        #expect(rec.waitFor("take 1 recording"), "\(rec.output)")
        let go = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)", "play", "play"])
        #expect(go.code == 0, "\(go.output)")
        usleep(1_500_000)
        rec.process.signal(SIGINT)
        #expect(rec.process.wait(timeout: 10) == 0, "\(rec.output)")
        let take = try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasPrefix("through-") && $0.hasSuffix(".wav") }
        let audio = try TestEnvironment.readAudio(dir.appendingPathComponent(try #require(take)).path)
        #expect(audio.channels == 2)
        let gain = Float(pow(10, -6.0 / 20))
        var loud = 0, worst: Float = 0
        for i in 0..<(audio.samples.count / 2) {
            let dry = audio.samples[2 * i], wet = audio.samples[2 * i + 1]
            if abs(dry) > 0.01 { loud += 1 }
            worst = max(worst, abs(wet - dry * gain))
        }
        #expect(loud > 24000, "the noise reached the recorder (\(loud) loud frames)")
        #expect(worst < 1e-5, "the rack's output is the input at -6 dB on the same frame (worst error \(worst))")
        // The rack reports what passes through it: its output carries its source's capture latency plus its own (0).
        let lsp = try TestEnvironment.run(["jack_lsp", "-s", server.name, "-l", "level:out_1"])
        #expect(lsp.output.contains("capture latency = [ 0 0 ]"), "\(lsp.output)")
    }

    /// Racks in a preset run beside the recorder; `preset check` names their problems; re-applying changes nothing.
    @Test(.enabled(if: hasSWH))
    func aPresetWithARackAppliesByDiff() throws {
        let server = try TestEnvironment.server("rackpreset")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackpreset")
        let path = dir.appendingPathComponent("racks.toml").path
        try """
            [session]
            name = "racks"
            directory = "\(dir.path)"
            control_port = \(33000 + Int(getpid() % 20000))
            [[rack]]
            name = "voice"
            [[rack.plugins]]
            uri = "\(Self.amp)"
            controls = { gain = -3 }
            [[rack]]
            name = "tone"
            inputs = 2
            [[rack.plugins]]
            uri = "\(Self.amp)"
            [[connect]]
            from = "voice:out_1"
            to = "tone:in_*"
            mode = "all"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", path])
        #expect(check.code == 0 && check.output.contains("rack voice (1 plugin(s)), rack tone (1 plugin(s))"), "\(check.output)")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("connected voice:out_1 -> tone:in_2"), "\(run.output)")
        let ports = try TestEnvironment.run(["jack_lsp", "-s", server.name])
        for p in ["voice:in_1", "voice:out_1", "tone:in_1", "tone:in_2", "tone:out_1", "tone:out_2"] {
            #expect(ports.output.contains(p), "\(p) in \(ports.output)")
        }
        run.process.signal(SIGHUP)
        #expect(run.waitFor("graph changes"), "\(run.output)")
        #expect(run.output.contains("reloaded \(path): 0 graph changes"), "\(run.output)")
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 10) == 0, "\(run.output)")
    }
}

extension RackTests {
    /// Channel shapes in a rack: swh split (mono→stereo) gets one input and two outputs, each the input; swh sc2
    /// gets a side-chain input port (`sc2_sidechain`) and ducks its main input only while that port is loud.
    @Test(.enabled(if: hasSWH))
    func racksTakeTheShapeOfTheirChainAndSideInputsArePorts() throws {
        let server = try TestEnvironment.server("rackshape")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackshape")
        let main = dir.appendingPathComponent("main.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1).map { $0 * 0.1 }, channels: 1, path: main,
                                     sample: .float32)
        // The side signal: 1 s of silence, then 1 s of loud noise, looped.
        let side = dir.appendingPathComponent("side.wav").path
        try TestEnvironment.writeWAV([Float](repeating: 0, count: 48000) + Signals.noise(frames: 48000, channels: 1, seed: 7).map { $0 * 0.9 },
                                     channels: 1, path: side, sample: .float32)
        let path = dir.appendingPathComponent("shapes.toml").path
        try """
            [session]
            name = "shapes"
            directory = "\(dir.path)"
            control_port = \(35000 + Int(getpid() % 20000))
            [recorder]
            channels = 5
            [[rack]]
            name = "duck"
            isolate = false
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/sc2"
            controls = { threshold = -30, ratio = 10, attack = 2, release = 2, knee = 1 }
            [[rack]]
            name = "wide"
            isolate = false
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/split"
            [[connect]]
            from = "main:out_1"
            to = "/(duck:in_1|wide:in_1|tandem-rec:in_1)/"
            mode = "all"
            [[connect]]
            from = "side:out_1"
            to = "/(duck:sc2_sidechain|tandem-rec:in_3)/"
            mode = "all"
            [[connect]]
            from = "duck:out_1"
            to = "tandem-rec:in_2"
            [[connect]]
            from = "wide:out_*"
            to = "/tandem-rec:in_[45]/"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let players = try [("main", main), ("side", side)].map { name, file in
            try TandemProcess(["play", "--client", name, "--loop", "item", file], server: server,
                              log: dir.appendingPathComponent("\(name).log").path)
        }
        defer { for p in players { p.process.signal(SIGTERM); _ = p.process.wait(timeout: 10) } }
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("connected wide:out_2 -> tandem-rec:in_5"), "\(run.output)")
        #expect(run.waitFor("connected side:out_1 -> duck:sc2_sidechain"), "\(run.output)")
        usleep(4_500_000)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let report = try TakeReport.read(from: try #require(TakeCheck.reports(in: dir.path).first))
        let file = try #require(report.chunks.first?.files.first)
        let audio = try TestEnvironment.readAudio(file.hasPrefix("/") ? file : dir.appendingPathComponent(file).path)
        let frames = audio.samples.count / 5
        func ch(_ c: Int, _ f: Int) -> Float { audio.samples[5 * f + c] }
        // Mono→stereo: both outputs are the input, frame for frame.
        var worst: Float = 0
        for f in 0..<frames { worst = max(worst, abs(ch(3, f) - ch(0, f)), abs(ch(4, f) - ch(0, f))) }
        #expect(worst < 1e-6 && frames > 96000, "split: worst \(worst) over \(frames) frames")
        // Side chain: the gain follows the side input, not the main one (which is steady).
        let (q, l) = Self.sidechainGains(audio.samples, channels: 5, input: 0, output: 1, side: 2,
                                         windowsFrom: 0, to: frames)
        try? "silent side: median gain \(q.isEmpty ? 0 : q[q.count / 2]) over \(q.count) windows; loud side: \(l.isEmpty ? 0 : l[l.count / 2]) over \(l.count)\n"
            .write(toFile: "/tmp/tandem-rack-sidechain.txt", atomically: true, encoding: .utf8)
        #expect(q.count > 10 && l.count > 10, "windows: \(q.count) quiet, \(l.count) loud")
        // Medians: unity while the side is silent, well below while it is loud.
        #expect(q.isEmpty || abs(q[q.count / 2] - 1) < 0.05, "gain with a silent side chain: \(q)")
        #expect(l.isEmpty || l[l.count / 2] < 0.5, "gain with a loud side chain: \(l)")
    }
}

extension RackTests {
    /// A compressor's gain (output RMS over input RMS) in windows of 2400 frames between `start` and `end`, sorted,
    /// split by its side input: windows where the side is silent (RMS < 1e-4) and where it is loud (RMS > 0.1).
    static func sidechainGains(_ samples: [Float], channels: Int, input: Int, output: Int, side: Int,
                               windowsFrom start: Int, to end: Int) -> (quiet: [Double], loud: [Double]) {
        func ch(_ c: Int, _ f: Int) -> Float { samples[channels * f + c] }
        var quiet: [Double] = [], loud: [Double] = []
        let window = 2400
        for w in stride(from: start, to: end - window, by: window) {
            var s = 0.0, i = 0.0, o = 0.0
            for f in w..<(w + window) {
                s += Double(ch(side, f) * ch(side, f))
                i += Double(ch(input, f) * ch(input, f))
                o += Double(ch(output, f) * ch(output, f))
            }
            guard i > 0 else { continue }
            let ratio = (o / i).squareRoot()
            let sideRMS = (s / Double(window)).squareRoot()
            if sideRMS < 1e-4 { quiet.append(ratio) } else if sideRMS > 0.1 { loud.append(ratio) }
        }
        return (quiet.sorted(), loud.sorted())
    }

    /// A plugin promised a fixed block (Tandem's `fixedblock` test plugin counts runs of another length) in a rack
    /// whose server changes its period (jack_bufsize 256 → 128): the chain is rebuilt for the new period and the
    /// plugin reports the new block and no run of another length.
    @Test(.enabled(if: TestPlugins.canBuild && TestEnvironment.hasProgram("jack_bufsize")))
    func aPeriodChangeRebuildsAFixedBlockChain() throws {
        let lv2 = try TestPlugins.lv2Path()
        let server = try TestEnvironment.server("rackblock", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackblock")
        let port = 37000 + Int(getpid() % 20000)
        let rack = try TandemProcess(["rack", "--name", "blk", "--plugin", TestPlugins.fixedBlock, "--control-port", "\(port)"],
                                     server: server, extraEnvironment: ["LV2_PATH": lv2],
                                     log: dir.appendingPathComponent("rack.log").path)
        defer { rack.process.signal(SIGTERM); _ = rack.process.wait(timeout: 10) }
        #expect(rack.waitFor("rack blk ready"), "\(rack.output)")
        func output(_ symbol: String) throws -> Double? {
            let status = try RackIsolationTests.status(port)
            let plugins = ((status["plugins"] as? [String: Any])?["blk"] as? [String: Any])?["plugins"] as? [[String: Any]]
            let outputs = plugins?.first?["outputs"] as? [[String: Any]]
            return outputs?.first { $0["symbol"] as? String == symbol }?["value"] as? Double
        }
        usleep(500_000)
        let before = try output("block")
        #expect(before == 256, "block \(String(describing: before))")
        let bufsize = try TestEnvironment.run(["jack_bufsize", "128"], environment: ["JACK_DEFAULT_SERVER": server.name])
        #expect(bufsize.code == 0, "\(bufsize.output)")
        #expect(rack.waitFor("plugin chain rebuilt for the new period"), "\(rack.output)")
        usleep(500_000)
        let block = try output("block"), mismatches = try output("mismatches")
        #expect(block == 128 && mismatches == 0, "block \(String(describing: block)), mismatches \(String(describing: mismatches))")
    }
}

extension RackTests {
    /// A rack whose chain has latency (x42's nodelay, 1000 frames) adds exactly that: its output is its input 1000
    /// frames later, and its output port reports its source's capture latency plus 1000 (JACK's latency protocol for
    /// a client that passes audio on). Introspection lists the rack with its ports.
    @Test(.enabled(if: hasSWH && FileManager.default.fileExists(atPath: "/usr/lib/lv2/nodelay.lv2/nodelay.so")))
    func aRackAddsExactlyItsChainsLatency() throws {
        let server = try TestEnvironment.server("racklat")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racklat")
        let noise = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: noise, sample: .float32)
        let port = 38000 + Int(getpid() % 20000)
        let play = try TandemProcess(["play", "--loop", "item", "--client", "src", noise], server: server,
                                     log: dir.appendingPathComponent("play.log").path)
        defer { play.process.signal(SIGTERM); _ = play.process.wait(timeout: 10) }
        #expect(play.waitFor("playing 1/1"), "\(play.output)")
        let rack = try TandemProcess(["rack", "--name", "late", "--plugin", "http://gareus.org/oss/lv2/nodelay,delay=1000",
                                      "--connect-in", "src:out_1", "--control-port", "\(port)"],
                                     server: server, log: dir.appendingPathComponent("rack.log").path)
        defer { rack.process.signal(SIGTERM); _ = rack.process.wait(timeout: 10) }
        #expect(rack.waitFor("connected src:out_1 -> late:in_1"), "\(rack.output)")
        let rec = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--session", "late",
                                     "--connect", "src:out_1", "--connect", "late:out_1"],
                                    server: server, log: dir.appendingPathComponent("rec.log").path)
        #expect(rec.waitFor("take 1 recording"), "\(rec.output)")
        usleep(1_500_000)
        let engines = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)", "/tandem/engines"])
        #expect(engines.output.contains("\"engine\":\"late\"") && engines.output.contains("late:out_1"), "\(engines.output)")
        rec.process.signal(SIGINT)
        #expect(rec.process.wait(timeout: 10) == 0, "\(rec.output)")
        let lsp = try TestEnvironment.run(["jack_lsp", "-s", server.name, "-l", "late:out_1"])
        #expect(lsp.output.contains("capture latency = [ 1000 1000 ]"), "\(lsp.output)")
        let take = try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasPrefix("late-") && $0.hasSuffix(".wav") }
        let audio = try TestEnvironment.readAudio(dir.appendingPathComponent(try #require(take)).path)
        let frames = audio.samples.count / 2
        var worst: Float = 0, compared = 0
        for f in 1000..<frames where abs(audio.samples[2 * (f - 1000)]) > 0 || compared > 0 {
            worst = max(worst, abs(audio.samples[2 * f + 1] - audio.samples[2 * (f - 1000)]))
            compared += 1
        }
        #expect(compared > 48000 && worst == 0, "output = input 1000 frames later: \(compared) frames, worst \(worst)")
    }
}

/// Crash isolation: a rack in its own process, supervised by the session that records.
@Suite(.serialized) struct RackIsolationTests {
    static func status(_ port: Int) throws -> [String: Any] {
        let out = try TestEnvironment.run([TestEnvironment.product("tandem"), "status", "--port", "\(port)", "--json"])
        let line = out.output.split(separator: "\n").first { $0.hasPrefix("{") } ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }

    static func rack(_ status: [String: Any]) -> [String: Any] {
        ((status["racks"] as? [[String: Any]]) ?? []).first ?? [:]
    }

    /// The pid of the session's first rack's process, as its status on `port` gives it (0: none, or no answer).
    static func rackPid(_ port: Int) -> pid_t {
        (rack((try? status(port)) ?? [:])["pid"] as? Int).map { pid_t($0) } ?? 0
    }

    /// Writes `dir/NAME.toml`: a session NAME with an OSC control port and one isolated rack `fx` running `plugin`
    /// (the lines of its `[[rack.plugins]]` table), then `extra` (more tables). Returns the file's path.
    static func isolatedRackPreset(_ name: String, dir: URL, port: Int, plugin: String, extra: String = "") throws -> String {
        let path = dir.appendingPathComponent("\(name).toml").path
        try """
            [session]
            name = "\(name)"
            directory = "\(dir.path)"
            control_port = \(port)
            [[rack]]
            name = "fx"
            isolate = true
            [[rack.plugins]]
            \(plugin)
            \(extra)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Starts a looped source `src`, a session recording `channels` channels (`in_1`, `in_2` from the source; with 3,
    /// `in_3` from the rack's output) and an isolated rack `fx` fed by the source; kills the rack's process with
    /// SIGSEGV (what a crashing plugin does to it) three times. Returns the take's report, its path, the recovery
    /// times and the noise.
    func crashThreeTimes(_ label: String, channels: Int, signal: Int32 = SIGSEGV) throws
        -> (report: TakeReport, path: String, recoveries: [Double], noise: LoopedNoise, dir: URL, metrics: String?) {
        let server = try TestEnvironment.server(label)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory(label)
        let noise = try LoopedNoise(dir: dir)
        let source = try TandemProcess(["play", "--client", "src", "--loop", "item", noise.path], server: server,
                                       log: dir.appendingPathComponent("src.log").path)
        defer { source.process.signal(SIGTERM); _ = source.process.wait(timeout: 10) }
        #expect(source.waitFor("playing 1/1"), "\(source.output)")
        let port = 34000 + Int(getpid() % 20000) + channels
        let path = dir.appendingPathComponent("iso.toml").path
        try """
            [session]
            name = "iso"
            directory = "\(dir.path)"
            control_port = \(port)
            metrics_port = \(port + 100)
            [recorder]
            channels = \(channels)
            [[rack]]
            name = "fx"
            [[rack.plugins]]
            uri = "\(RackTests.amp)"
            controls = { gain = -6 }
            [[connect]]
            from = "src:out_*"
            to = "/tandem-rec:in_[12]/"
            [[connect]]
            from = "src:out_1"
            to = "fx:in_1"
            """.appending(channels == 3 ? "\n[[connect]]\nfrom = \"fx:out_1\"\nto = \"tandem-rec:in_3\"\n" : "")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("connected src:out_1 -> fx:in_1"), "\(run.output)")
        #expect(run.waitFor("take 1 recording"), "\(run.output)")
        var recoveries: [Double] = []
        for round in 1...3 {
            usleep(700_000)
            let before = Self.rack(try Self.status(port))
            let pid = (before["pid"] as? Int).map { pid_t($0) } ?? 0
            #expect(pid > 0 && before["isolated"] as? Bool == true, "round \(round): \(before)")
            kill(pid, signal)
            #expect(run.waitFor("rack fx back after", timeout: 5, occurrence: round), "round \(round): \(run.output)")
            let after = Self.rack(try Self.status(port))
            if let t = after["lastRecoverySeconds"] as? Double { recoveries.append(t) }
            #expect((after["crashes"] as? Int ?? 0) + (after["hangs"] as? Int ?? 0) == round, "\(after)")
        }
        #expect(run.waitFor("connected src:out_1 -> fx:in_1", occurrence: 4), "reconnected after the third crash: \(run.output)")
        usleep(500_000)
        let metrics = MetricsTests.get(port + 100)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let reportPath = try #require(TakeCheck.reports(in: dir.path).first)
        return (try TakeReport.read(from: reportPath), reportPath, recoveries, noise, dir, metrics)
    }

    /// The acceptance: a 2-channel take of a source keeps every frame, bit-exact, while the isolated rack beside it
    /// (fed by the same source) crashes three times; the rack is back within 2 s each time.
    @Test(.enabled(if: RackTests.hasSWH))
    func aTakeKeepsEveryFrameWhileAnIsolatedRackCrashesThreeTimes() throws {
        let r = try crashThreeTimes("rackiso", channels: 2)
        #expect(r.recoveries.count == 3 && r.recoveries.allSatisfy { $0 < 2 }, "back within 2 s each time: \(r.recoveries)")
        #expect(r.metrics?.contains("tandem_rack_crashes_total{rack=\"fx\"} 3") == true
                && r.metrics?.contains("tandem_rack_restarts_total{rack=\"fx\"} 3") == true, "\(r.metrics ?? "no metrics")")
        let check = TakeCheck.verify(report: r.path, source: r.noise.index)
        #expect(check.problems.isEmpty && check.audio.discontinuities == 0, "\(check)")
        #expect(r.report.frames > 48000 * 2 && (r.report.missedFrames ?? 0) == 0 && r.report.drops.isEmpty,
                "\(r.report.frames) frames, missed \(r.report.missedFrames ?? 0), drops \(r.report.drops)")
    }

    /// A take recording the rack's output: each crash is in its report (channel, frame down, frame back), and any
    /// frame the server could not deliver while it removed the dead client is counted, never silent.
    @Test(.enabled(if: RackTests.hasSWH))
    func aTakeRecordingTheRackNotesEachCrash() throws {
        let r = try crashThreeTimes("rackisonote", channels: 3)
        let incidents = r.report.rackIncidents ?? []
        #expect(incidents.count == 3, "\(incidents)")
        for i in incidents {
            #expect(i.rack == "fx" && i.what.contains("SIGSEGV") && i.channels == ["in_3"], "\(i)")
            let back = try #require(i.backAtFrame)
            #expect(back > i.atFrame && back - i.atFrame < 2 * 48000, "\(i)")
        }
        // Channels 1 and 2 (the source, straight): from the source; a jump only where the report counts a loss.
        let file = try #require(r.report.chunks.first?.files.first)
        let audio = try TestEnvironment.readAudio(file.hasPrefix("/") ? file : r.dir.appendingPathComponent(file).path)
        var straight: [Float] = []
        for f in 0..<(audio.samples.count / 3) { straight += [audio.samples[3 * f], audio.samples[3 * f + 1]] }
        let check = LoopedSourceCheck.check(recorded: straight, against: r.noise.index)
        let counted = (r.report.missedFrames ?? 0) > 0 || r.report.xruns > 0 || !r.report.drops.isEmpty
        // When JACK drops the dead client in the middle of a cycle, the recorder behind it may get that cycle's
        // buffers unfinished: any frame not from the source must lie where the report counts a loss.
        #expect((check.foreignFrames == 0 && check.discontinuities == 0) || counted,
                "\(check), missed \(r.report.missedFrames ?? 0), xruns \(r.report.xruns)")
        try? "\(check), missed \(r.report.missedFrames ?? 0), xruns \(r.report.xruns)\n"
            .write(toFile: "/tmp/tandem-rack-note-check.txt", atomically: true, encoding: .utf8)
    }

    /// A rack whose whole process is stopped (SIGSTOP) holds up the take that records its output: the supervisor
    /// kills it within a tenth of a second, so the take goes on (one take, never ended as a server stall), each
    /// freeze is in its report with the rack named, and what the take missed meanwhile is counted.
    @Test(.enabled(if: RackTests.hasSWH))
    func aFrozenRackIsCutOutAndTheTakeGoesOn() throws {
        let r = try crashThreeTimes("rackfrozen", channels: 3, signal: SIGSTOP)
        #expect(TakeCheck.reports(in: r.dir.path).count == 1, "one take: \(TakeCheck.reports(in: r.dir.path))")
        #expect(r.report.ended == .stopped, "\(r.report.ended)")
        let incidents = r.report.rackIncidents ?? []
        #expect(incidents.count == 3 && incidents.allSatisfy { $0.rack == "fx" && $0.what.hasPrefix("frozen") }, "\(incidents)")
        let file = try #require(r.report.chunks.first?.files.first)
        let audio = try TestEnvironment.readAudio(file)
        var straight: [Float] = []
        for f in 0..<(audio.samples.count / 3) { straight += [audio.samples[3 * f], audio.samples[3 * f + 1]] }
        let check = LoopedSourceCheck.check(recorded: straight, against: r.noise.index)
        let missed = r.report.missedFrames ?? 0
        #expect(check.foreignFrames == 0, "\(check)")
        #expect(check.discontinuities == 0 || missed > 0, "a jump only where the report counts skipped cycles: \(check)")
        print("frozen rack, 3 times: take missed \(missed) frames (\(String(format: "%.0f", Double(missed) / 3 / 48)) ms a freeze), "
              + "\(check.discontinuities) jumps, recoveries \(r.recoveries.map { String(format: "%.2f", $0) })")
    }

    /// Tandem's own crash plugin in an isolated rack, told over the rack process's control port to segfault, abort
    /// and hang in run(): each time only the rack's process goes (the hang detected by its stopped cycle counter),
    /// it is back within 2 s with the last state saved while it was healthy (mode 0), and a take of the source beside
    /// it keeps every frame.
    @Test(.enabled(if: TestPlugins.canBuild))
    func theCrashPluginTakesDownOnlyItsRack() throws {
        let lv2 = try TestPlugins.lv2Path()
        let server = try TestEnvironment.server("rackcrash")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackcrash")
        let noise = try LoopedNoise(dir: dir)
        let source = try TandemProcess(["play", "--client", "src", "--loop", "item", noise.path], server: server,
                                       log: dir.appendingPathComponent("src.log").path)
        defer { source.process.signal(SIGTERM); _ = source.process.wait(timeout: 10) }
        #expect(source.waitFor("playing 1/1"), "\(source.output)")
        let port = 36000 + Int(getpid() % 20000)
        let path = dir.appendingPathComponent("crash.toml").path
        try """
            [session]
            name = "crash"
            directory = "\(dir.path)"
            control_port = \(port)
            [recorder]
            channels = 2
            [[rack]]
            name = "fx"
            [[rack.plugins]]
            uri = "\(TestPlugins.crash)"
            [[connect]]
            from = "src:out_*"
            to = "tandem-rec:in_*"
            [[connect]]
            from = "src:out_1"
            to = "fx:in_1"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", path], server: server, extraEnvironment: ["LV2_PATH": lv2],
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("connected src:out_1 -> fx:in_1"), "\(run.output)")
        #expect(run.waitFor("take 1 recording"), "\(run.output)")
        var recoveries: [Double] = []
        for (round, mode) in [(1, 1), (2, 2), (3, 3)] {
            usleep(700_000)
            let rack = RackIsolationTests.rack(try RackIsolationTests.status(port))
            let childPort = try #require(rack["controlPort"] as? Int, "\(rack)")
            let set = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(childPort)",
                                               "/tandem/plugin/set", "fx", "crash", "mode", "\(mode)"], timeout: 10)
            #expect(set.code == 0, "mode \(mode): \(set.output)")
            #expect(run.waitFor("rack fx back after", timeout: 8, occurrence: round), "mode \(mode): \(run.output)")
            let after = RackIsolationTests.rack(try RackIsolationTests.status(port))
            if let t = after["lastRecoverySeconds"] as? Double { recoveries.append(t) }
        }
        usleep(500_000)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        #expect(run.output.contains("SIGSEGV") && run.output.contains("SIGABRT") && run.output.contains("rack fx hung for"),
                "\(run.output)")
        #expect(recoveries.count == 3 && recoveries.allSatisfy { $0 < 2 }, "back within 2 s each time: \(recoveries)")
        try? "recoveries \(recoveries)\n".write(toFile: "/tmp/tandem-crash-plugin-recoveries.txt", atomically: true, encoding: .utf8)
        let reportPath = try #require(TakeCheck.reports(in: dir.path).first)
        let check = TakeCheck.verify(report: reportPath, source: noise.index)
        let report = try TakeReport.read(from: reportPath)
        // Bit-exact, no jump. A hung client stalls the whole JACK graph until the server's timeout, so the take may
        // note skipped cycles there (the source skipped them too: no frame is missing from the data).
        #expect(check.problems.isEmpty && check.audio.discontinuities == 0 && check.audio.foreignFrames == 0,
                "\(check), missed \(report.missedFrames ?? 0)")
    }

    /// A session of an isolated rack alone sleeps 2 s between turns (`Session.idleTurn`), yet sees its rack's
    /// process end at once: the heartbeat pipe's end wakes it. And a process stopped whole (SIGSTOP: its own hang
    /// check cannot run either) is seen stopped at the loop's next turn, killed as frozen and started again.
    @Test(.enabled(if: RackTests.hasSWH))
    func aQuietSessionSeesItsRackEndAtOnceAndStopsAFrozenOne() throws {
        let server = try TestEnvironment.server("rackquiet")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackquiet")
        let port = 33000 + Int(getpid() % 20000)
        let path = try Self.isolatedRackPreset("quiet", dir: dir, port: port, plugin: "uri = \"\(RackTests.amp)\"")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        defer { run.process.signal(SIGTERM); _ = run.process.wait(timeout: 15) }
        // Three crashes, each seen well inside the loop's 2 s sleep (were it only the timer, all three would come
        // within 0.7 s by chance one time in 25).
        var seen: [Double] = []
        for round in 1...3 {
            #expect(TestEnvironment.waitUntil(timeout: 10) {
                (Self.rack((try? Self.status(port)) ?? [:])["running"] as? Bool) == true
            }, "round \(round): \(run.output)")
            usleep(2_500_000)   // past the turn the status request caused, and its second of frequent turns
            let pid = Self.rackPid(port)
            #expect(pid > 0, "round \(round)")
            usleep(1_200_000)
            let killed = Date()
            kill(pid, SIGSEGV)
            #expect(run.waitFor("SIGSEGV", timeout: 5, occurrence: round), "round \(round): \(run.output)")
            seen.append(Date().timeIntervalSince(killed))
            #expect(run.waitFor("rack fx back after", timeout: 5, occurrence: round), "round \(round): \(run.output)")
        }
        #expect(seen.allSatisfy { $0 < 0.7 }, "each crash seen at once: \(seen)")
        // Frozen whole: no beat, no own check. The supervisor sees the process stopped and kills it.
        usleep(2_500_000)
        let pid = Self.rackPid(port)
        #expect(pid > 0)
        kill(pid, SIGSTOP)
        #expect(run.waitFor("rack fx frozen", timeout: 15), "\(run.output)")
        #expect(run.waitFor("rack fx back after", timeout: 5, occurrence: 4), "\(run.output)")
        let rack = Self.rack(try Self.status(port))
        #expect(rack["crashes"] as? Int == 3 && rack["hangs"] as? Int == 1, "\(rack)")
        try? "crash seen after \(seen) s\n".write(toFile: "/tmp/tandem-rack-quiet.txt", atomically: true, encoding: .utf8)
    }

    /// A rack whose plugin hangs before the process is ready (here in the warm-up cycle its main thread runs before
    /// activation: the crash plugin told to spin by the preset; a restored state can do the same) never beats, so
    /// neither its own watchdog nor the beat backstop can see it. The supervisor kills a process not ready 10 s
    /// after its start, says so and starts it again; the stuck process is gone.
    @Test(.enabled(if: TestPlugins.canBuild))
    func aRackStuckInItsStartIsKilledAndStartedAgain() throws {
        let lv2 = try TestPlugins.lv2Path()
        let server = try TestEnvironment.server("rackstuck")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackstuck")
        let port = 34000 + Int(getpid() % 20000)
        let path = try Self.isolatedRackPreset("stuck", dir: dir, port: port,
                                               plugin: "uri = \"\(TestPlugins.crash)\"\ncontrols = { mode = 3 }")
        let run = try TandemProcess(["run", "--no-view", path], server: server, extraEnvironment: ["LV2_PATH": lv2],
                                    log: dir.appendingPathComponent("run.log").path)
        defer { run.process.signal(SIGTERM); _ = run.process.wait(timeout: 15) }
        #expect(TestEnvironment.waitUntil(timeout: 5) { Self.rackPid(port) > 0 }, "\(run.output)")
        let first = Self.rackPid(port)
        #expect(first > 0)
        #expect(run.waitFor("rack fx hung while starting (not ready after 1", timeout: 15), "\(run.output)")
        #expect(TestEnvironment.waitUntil(timeout: 5) {
            let pid = Self.rackPid(port)
            return pid > 0 && pid != first
        }, "started again: \(run.output)")
        #expect(kill(first, 0) != 0, "the stuck process \(first) is gone")
        let rack = Self.rack(try Self.status(port))
        #expect(rack["hangs"] as? Int == 1 && rack["crashes"] as? Int == 0 && rack["running"] as? Bool == false, "\(rack)")
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
    }
}

extension RackTests {
    static let hasCVPlugins = FileManager.default.fileExists(atPath: "/usr/lib/lv2/fomp.lv2")
        && FileManager.default.fileExists(atPath: "/usr/lib/lv2/blop.lv2")

    /// CV ports are JACK ports: fomp's saw VCO (CV inputs `freq`, `exp_fm`, …, an audio output) gets an input port
    /// per CV input and sounds at the pitch its `freq` port is given; blop's ADSR (CV only) gets `adsr_drive` and `adsr_out`, and the envelope it writes
    /// on `adsr_out` rises while a source holds its gate high. (Both were refused with "0 → 0 channel(s) cannot
    /// follow a 0-channel path".)
    @Test(.enabled(if: hasCVPlugins))
    func cvPortsAreJackPortsAndCarryTheirSignals() throws {
        let server = try TestEnvironment.server("rackcv")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackcv")
        let gate = dir.appendingPathComponent("gate.wav").path
        try TestEnvironment.writeWAV([Float](repeating: 1, count: 48000), channels: 1, path: gate, sample: .float32)
        let src = try TandemProcess(["play", "--client", "gate", "--loop", "item", gate], server: server,
                                    log: dir.appendingPathComponent("gate.log").path)
        defer { src.process.signal(SIGTERM); _ = src.process.wait(timeout: 10) }
        let vco = try TandemProcess(["rack", "--name", "vco", "--no-view", "--plugin", "http://drobilla.net/plugins/fomp/saw_vco"],
                                    server: server, log: dir.appendingPathComponent("vco.log").path)
        defer { vco.process.signal(SIGTERM); _ = vco.process.wait(timeout: 10) }
        // Its gate is a CV input, not one of its (no) audio inputs: --connect-in says so.
        let wrong = try TestEnvironment.run([TestEnvironment.product("tandem"), "rack", "--server", server.name, "--name", "env",
                                             "--no-view", "--plugin", "http://drobilla.net/plugins/blop/adsr",
                                             "--connect-in", "gate:out_1"], timeout: 20)
        #expect(wrong.code == 2 && wrong.output.contains(
            "--connect-in 'gate:out_1': 1 source port(s) (gate:out_1) for the 0 input(s) of rack env"), "\(wrong.output)")
        let env = try TandemProcess(["rack", "--name", "env", "--no-view", "--plugin", "http://drobilla.net/plugins/blop/adsr"],
                                    server: server, log: dir.appendingPathComponent("env.log").path)
        defer { env.process.signal(SIGTERM); _ = env.process.wait(timeout: 10) }
        #expect(vco.waitFor("ready") && env.waitFor("ready"), "\(vco.output)\n\(env.output)")
        let ports = try TestEnvironment.run(["jack_lsp", "-s", server.name]).output
        for p in ["vco:saw_vco_freq", "vco:saw_vco_exp_fm", "vco:out_1", "env:adsr_drive", "env:adsr_out"] {
            #expect(ports.contains(p), "\(p) in \(ports)")
        }
        // The gate's constant 1 drives the envelope and sets the VCO's pitch (fomp's VCO stands still at 0).
        _ = try TestEnvironment.run(["jack_connect", "-s", server.name, "gate:out_1", "env:adsr_drive"])
        _ = try TestEnvironment.run(["jack_connect", "-s", server.name, "gate:out_1", "vco:saw_vco_freq"])
        let rec = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--session", "cv", "-t", "1",
                                     "--connect", "vco:out_1", "--connect", "env:adsr_out"],
                                    server: server, log: dir.appendingPathComponent("rec.log").path)
        #expect(rec.process.wait(timeout: 15) == 0, "\(rec.output)")
        let take = try #require(TakeCheck.reports(in: dir.path).first)
        let audio = try TestEnvironment.readAudio(try TakeReport.read(from: take).chunks[0].files[0])
        let saw = stride(from: 0, to: audio.samples.count, by: 2).map { audio.samples[$0] }
        let envelope = stride(from: 1, to: audio.samples.count, by: 2).map { audio.samples[$0] }
        #expect(saw.allSatisfy { $0.isFinite } && (saw.max() ?? 0) - (saw.min() ?? 0) > 0.2, "the VCO sounds")
        #expect(envelope.allSatisfy { $0.isFinite } && (envelope.max() ?? 0) > 0.5, "the envelope rises with the gate")
    }

    /// `plugins show` says how a plugin sits in a chain and which extra ports a rack gives it (it called swh's sc2
    /// "not usable as an insert" while a rack of it works).
    @Test(.enabled(if: hasCVPlugins && hasSWH))
    func pluginsShowTellsHowAPluginSitsInAChain() throws {
        let tandem = TestEnvironment.product("tandem")
        for (uri, lines) in [
            ("http://plugin.org.uk/swh-plugins/sc2", ["in a chain: 1 channel(s) per instance", "extra inputs (a rack's ports): sc2_sidechain"]),
            ("http://drobilla.net/plugins/blop/adsr", ["the path goes past it unchanged", "extra outputs (a rack's ports): adsr_out"]),
        ] {
            let out = try TestEnvironment.run([tandem, "plugins", "show", uri]).output
            for l in lines { #expect(out.contains(l), "\(uri): \(l)\n\(out)") }
            #expect(!out.contains("not usable"), "\(out)")
        }
    }
}
