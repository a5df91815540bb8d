import Foundation
import Jack
import Render
import Testing
import TestSupport

/// `tandem render` as a user runs it: a batch in which one job's plugin crashes, bad input of every kind with its
/// exit code, and `preset check` refusing what `render` refuses. No JACK server anywhere.
@Suite(.serialized) struct RenderCommandTests {
    static func tandem(_ args: [String], environment: [String: String] = [:], timeout: Double = 120) throws
        -> (code: Int32, output: String) {
        try TestEnvironment.run([TestEnvironment.product("tandem")] + args, environment: environment, timeout: timeout)
    }

    /// Issue 39: a crash plugin in one job of a batch of ten. Nine outputs complete with their reports, the tenth is
    /// reported with its signal and leaves nothing behind, and the exit code says a job failed (1).
    @Test(.enabled(if: TestPlugins.canBuild))
    func aCrashingPluginFailsItsJobAndNotTheBatch() throws {
        let dir = TestEnvironment.temporaryDirectory("render-batch")
        var inputs: [String] = []
        for k in 1...10 {
            let path = dir.appendingPathComponent(String(format: "in%02d.wav", k)).path
            // Quiet noise; the seventh file has one loud sample, which mode 4 of the crash plugin cannot take.
            var samples = Signals.noise(frames: 24000, channels: 1, seed: UInt64(k)).map { $0 * 0.5 }
            if k == 7 { samples[12345] = 0.95 }
            try TestEnvironment.writeWAV(samples, channels: 1, path: path, sample: .float32)
            inputs.append(path)
        }
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let r = try Self.tandem(["render", "--plugin", "\(TestPlugins.crash),mode=4", "--jobs", "2", "--json",
                                 "-o", out.path + "/{input}-r.wav"] + inputs,
                                environment: ["LV2_PATH": try TestPlugins.lv2Path()])
        #expect(r.code == 1, "a job failed: exit 1\n\(r.output)")
        let lines = r.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let done = lines.filter { $0["event"] as? String == "done" }
        let failed = lines.filter { $0["event"] as? String == "failed" }
        #expect(done.count == 9 && failed.count == 1, "\(r.output)")
        let f = try #require(failed.first)
        #expect((f["input"] as? String)?.hasSuffix("in07.wav") == true)
        #expect(f["signal"] as? Int == Int(SIGSEGV) && f["signalName"] as? String == "SIGSEGV", "\(f)")
        #expect((f["error"] as? String)?.contains("killed by signal 11 (SIGSEGV)") == true)
        let finished = try #require(lines.last { $0["event"] as? String == "finished" })
        #expect(finished["rendered"] as? Int == 9 && finished["failed"] as? Int == 1 && finished["exit"] as? Int == 1)
        let files = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(files.count == 18 && !files.contains { $0.hasPrefix("in07") } && !files.contains { $0.hasPrefix(".") },
                "nine outputs and nine reports, nothing of the crashed job: \(files)")
        for k in [1, 2, 3, 4, 5, 6, 8, 9, 10] {
            let name = String(format: "in%02d-r", k)
            let audio = try TestEnvironment.readAudio(out.appendingPathComponent(name + ".wav").path)
            let source = try TestEnvironment.readAudio(inputs[k - 1])
            #expect(audio.samples == source.samples, "the crash plugin passes audio in mode 4: \(name)")
            let report = try RenderReport.read(from: out.appendingPathComponent(name + ".json").path)
            #expect(report.sources.first?.sha256 == SHA256.file(inputs[k - 1]))
        }
        print("render batch: 10 jobs at --jobs 2, one crashing plugin: \(done.count) rendered, \(failed.count) failed"
              + " (\(f["signalName"] ?? "?")), exit \(r.code)")
    }

    /// Bad input on the command line: each a clear error with its exit code, and nothing written that looks finished.
    @Test(.enabled(if: RackTests.hasSWH))
    func badInputIsRefusedWithItsExitCode() throws {
        let dir = TestEnvironment.temporaryDirectory("render-cli-bad")
        let input = dir.appendingPathComponent("in.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: input, sample: .float32)
        let amp = ["--plugin", "\(RackTests.amp),name=amp"]
        func render(_ args: [String]) throws -> (code: Int32, output: String) { try Self.tandem(["render"] + amp + args) }
        func out(_ name: String) -> String { dir.appendingPathComponent(name).path }

        var r = try render([out("nope.wav"), "-o", out("a.wav")])
        #expect(r.code == 2 && r.output.contains("does not exist"), "\(r.output)")
        let garbage = out("garbage.wav")
        try Data(repeating: 0x5A, count: 4000).write(to: URL(fileURLWithPath: garbage))
        r = try render([garbage, "-o", out("b.wav")])
        #expect(r.code == 2 && r.output.contains("cannot read '\(garbage)'"), "\(r.output)")
        r = try render([input, "-o", out("c.wav"), "--rate", "2000000"])
        #expect(r.code == 2 && r.output.contains("--rate must be"), "\(r.output)")
        r = try render([input, "-o", out("d.wav"), "--rate", "768000"])
        #expect(r.code == 2 && r.output.contains("cannot be converted to the chain's 768000 Hz"), "\(r.output)")
        let auto = out("auto.txt")
        try "0 /tandem/plugin/set rack amp gain -3\n96000 /tandem/plugin/bypass rack amp 1\n".write(toFile: auto, atomically: true, encoding: .utf8)
        r = try render([input, "-o", out("e.wav"), "--automation", auto])
        #expect(r.code == 2 && r.output.contains("\(auto):2: frame 96000 is past the end of the input (48000 frames)"), "\(r.output)")
        try "0 /tandem/plugin/set rack amp volume -3\n".write(toFile: auto, atomically: true, encoding: .utf8)
        r = try render([input, "-o", out("f.wav"), "--automation", auto])
        #expect(r.code == 2 && r.output.contains("\(auto):1: <\(RackTests.amp)> has no control 'volume'"), "\(r.output)")
        try "0 /tandem/plugin/set fx amp gain -3\n".write(toFile: auto, atomically: true, encoding: .utf8)
        r = try render([input, "-o", out("g.wav"), "--automation", auto])
        #expect(r.code == 2 && r.output.contains("acts on 'fx', but this render runs the rack 'rack'"), "\(r.output)")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: out("h.wav")))
        r = try render([input, "-o", out("h.wav")])
        #expect(r.code == 2 && r.output.contains("exists: a render never overwrites a file"), "\(r.output)")
        #expect(try String(contentsOfFile: out("h.wav"), encoding: .utf8) == "mine")
        r = try render([input, input, "-o", out("i.wav")])
        #expect(r.code == 2 && r.output.contains("need an output template"), "\(r.output)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(left == ["auto.txt", "garbage.wav", "h.wav", "in.wav"], "nothing written: \(left)")
    }

    /// A full disk: exit 4, and neither an output nor a partial file is left.
    @Test(.enabled(if: RackTests.hasSWH && getuid() == 0))
    func aFullDiskIsExitFourAndLeavesNothing() throws {
        let dir = TestEnvironment.temporaryDirectory("render-cli-full")
        let input = dir.appendingPathComponent("in.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000 * 10, channels: 2), channels: 2, path: input, sample: .float32)
        let mount = dir.appendingPathComponent("small").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 1)
        defer { TestEnvironment.unmount(mount) }
        let r = try Self.tandem(["render", "--plugin", "\(RackTests.amp)", "--inputs", "2", input, "-o", mount + "/out.wav"])
        #expect(r.code == 4 && r.output.contains("No space left on device"), "\(r.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount).isEmpty)
    }

    /// `preset check` refuses what `render` would refuse in a [render] table, in the same words.
    @Test(.enabled(if: RackTests.hasSWH))
    func presetCheckRefusesWhatRenderRefuses() throws {
        let dir = TestEnvironment.temporaryDirectory("render-check")
        let input = dir.appendingPathComponent("in.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1), channels: 1, path: input, sample: .float32)
        let preset = dir.appendingPathComponent("r.toml").path
        func write(_ render: String) throws {
            try """
                [[rack]]
                name = "fx"
                [[rack.plugins]]
                uri = "\(RackTests.amp)"
                name = "amp"
                [render]
                inputs = ["in.wav"]
                output = "out.wav"
                \(render)
                """.write(toFile: preset, atomically: true, encoding: .utf8)
        }
        try write("[[render.event]]\nat = 100\ncommand = \"/tandem/plugin/set\"\nargs = [\"fx\", \"amp\", \"gain\", -6]")
        var check = try Self.tandem(["preset", "check", preset])
        #expect(check.code == 0, "\(check.output)")
        var render = try Self.tandem(["render", preset])
        #expect(render.code == 0 && FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.wav").path),
                "\(render.output)")
        // The output now exists: both refuse.
        check = try Self.tandem(["preset", "check", preset])
        #expect(check.code == 2 && check.output.contains("render.output: '\(dir.path)/out.wav' exists"), "\(check.output)")
        try FileManager.default.removeItem(atPath: dir.appendingPathComponent("out.wav").path)
        try FileManager.default.removeItem(atPath: dir.appendingPathComponent("out.json").path)
        for (bad, words) in [
            ("[[render.event]]\nat = 100\ncommand = \"/tandem/plugin/set\"\nargs = [\"fx\", \"amp\", \"volume\", -6]", "has no control 'volume'"),
            ("[[render.event]]\nat = 9600\ncommand = \"/tandem/plugin/bypass\"\nargs = [\"fx\", \"amp\", 1]", "is past the end"),
            ("[[render.event]]\nat = 100\ncommand = \"/tandem/record/start\"", "not something a render applies"),
            ("[[render.event]]\nat = 100\nmidi = [144, 60]", "takes 3 byte(s), not 2"),
            ("engine = \"nope\"", "'nope' is not a chain of this preset"),
            ("period = 0", "render.period: 0 is out of range"),
            ("tail = \"forever\"", "expected \"silence\" or seconds"),
            ("colour = \"red\"", "unknown key 'colour' in [render]"),
        ] {
            try write(bad)
            check = try Self.tandem(["preset", "check", preset])
            render = try Self.tandem(["render", preset])
            #expect(check.code == 2 && check.output.contains(words), "preset check: \(bad)\n\(check.output)")
            #expect(render.code == 2 && render.output.contains(words), "render: \(bad)\n\(render.output)")
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.wav").path))
        }
    }
    /// Bug: a MIDI line in an automation file for a chain where no plugin takes MIDI was accepted and reported as
    /// applied. Refused, naming the line (a MIDI file into such a chain too).
    @Test(.enabled(if: RackTests.hasSWH))
    func midiForAChainWithoutMIDIIsRefused() throws {
        let dir = TestEnvironment.temporaryDirectory("render-nomidi")
        let input = dir.appendingPathComponent("in.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1), channels: 1, path: input, sample: .float32)
        let auto = dir.appendingPathComponent("auto.txt").path
        try "0 /tandem/plugin/set rack amp gain -3\n100 midi 0x90 60 100\n".write(toFile: auto, atomically: true, encoding: .utf8)
        let r = try Self.tandem(["render", "--plugin", "\(RackTests.amp),name=amp", "--automation", auto, input,
                                 "-o", dir.appendingPathComponent("o.wav").path])
        #expect(r.code == 2 && r.output.contains("\(auto):2: MIDI for the rack 'rack', but none of its plugins takes MIDI"),
                "\(r.code): \(r.output)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("o.wav").path))
        print("render: a MIDI line for an amp: exit \(r.code): \(r.output.split(separator: "\n").first ?? "")")
    }

    /// Bug: control values in a report printed as the Double a Float widens to (-3.0000002384185791), a gain as
    /// -3.0000002493010487, and JSON wrote every '/' as '\\/'. Values print as they were set; slashes stay slashes.
    @Test(.enabled(if: RackTests.hasSWH))
    func reportsPrintValuesAsSetAndSlashesPlain() throws {
        let dir = TestEnvironment.temporaryDirectory("render-print")
        let input = dir.appendingPathComponent("in.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1), channels: 1, path: input, sample: .float32)
        let auto = dir.appendingPathComponent("auto.txt").path
        try "1000 /tandem/plugin/set rack amp gain -3.1\n2000 /tandem/plugin/gain rack -3\n3000 /tandem/plugin/mix rack 0.3\n"
            .write(toFile: auto, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("o.wav").path
        let r = try Self.tandem(["render", "--plugin", "\(RackTests.amp),name=amp,gain=-3.0000002", "--automation", auto,
                                 "--json", "--tail", "0", input, "-o", out])
        #expect(r.code == 0, "\(r.output)")
        let text = try String(contentsOfFile: dir.appendingPathComponent("o.json").path, encoding: .utf8)
        #expect(text.contains("\"value\" : -3.0000002\n") || text.contains("\"value\" : -3.0000002,")
                || text.contains("\"value\" : -3.0000002 "), "the start value as set")
        for long in ["-3.00000023", "-3.10000002", "-3.0000002493", "0.30000001"] {
            #expect(!text.contains(long), "\(long) in the report:\n\(text)")
        }
        let report = try RenderReport.read(from: dir.appendingPathComponent("o.json").path)
        #expect(report.applied.map(\.line) == ["1024 /tandem/plugin/set rack amp gain -3.1", "2048 /tandem/plugin/gain rack -3",
                                               "3072 /tandem/plugin/mix rack 0.3"], "\(report.applied.map(\.line))")
        #expect(text.contains("\"uri\" : \"http://plugin.org.uk/swh-plugins/amp\"") && !text.contains("\\/"), "\(text)")
        #expect(r.output.contains("\"output\":\"\(out)\"") && !r.output.contains("\\/"), "\(r.output)")
        print("render report values: \(report.applied.map(\.line)); slashes plain in the report and --json")
    }
}
