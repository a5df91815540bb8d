import Foundation
import Jack
import SoundFile
import Testing
import TestSupport

/// Messages a newcomer met that did not tell them what to do, each as it reads now (issue 43, "Words").
@Suite(.serialized) struct WordsTests {
    static func tandem(_ args: [String], in dir: URL? = nil) throws -> (code: Int32, output: String) {
        let cd = dir.map { ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", $0.path] } ?? []
        return try TestEnvironment.run(cd + [TestEnvironment.product("tandem")] + args, timeout: 60)
    }

    /// `tandem help bogus` exits 2 and names the commands there are (it printed the overview and exited 0).
    @Test func helpOnAnUnknownCommandIsExitTwo() throws {
        let bogus = try Self.tandem(["help", "bogus"])
        #expect(bogus.code == 2 && bogus.output.contains("no command 'bogus'") && bogus.output.contains("record"),
                "\(bogus.output)")
        let nested = try Self.tandem(["help", "preset", "bogus"])
        #expect(nested.code == 2 && nested.output.contains("commands: check"), "\(nested.output)")
        #expect(try Self.tandem(["help", "preset", "check"]).code == 0)
    }

    /// `--gain -6`: a negative number after an option is its value (it said "Missing value"); and a plugin problem
    /// names its plugin once (it said "plugin amp: plugin amp:").
    @Test(.enabled(if: RackTests.hasSWH))
    func negativeValuesAfterOptionsAndPluginsNamedOnce() throws {
        let dir = TestEnvironment.temporaryDirectory("words-gain")
        let input = dir.appendingPathComponent("in.wav").path
        try TestEnvironment.writeWAV([Float](repeating: 0.25, count: 4800), channels: 1, path: input)
        let gain = try Self.tandem(["render", "--plugin", RackTests.amp, "--gain", "-6", "-o", "out.wav", input], in: dir)
        #expect(gain.code == 0, "\(gain.output)")
        let peak = try TestEnvironment.readAudio(dir.appendingPathComponent("out.wav").path).samples.map(abs).max() ?? 0
        #expect(abs(peak - 0.25 * 0.501) < 0.01, "peak \(peak)")
        let twice = try Self.tandem(["render", "--plugin", RackTests.amp + ",bogus=1", "-o", "x.wav", input], in: dir)
        #expect(twice.code == 2 && twice.output.components(separatedBy: "plugin amp:").count == 2, "\(twice.output)")
    }

    /// A signal is named ("signal 2 (SIGINT)", never "signal 2 (signal 2)").
    @Test func signalsHaveNames() {
        #expect(ChildProcess.signalName(SIGINT) == "SIGINT" && ChildProcess.signalName(SIGHUP) == "SIGHUP")
        #expect(!ChildProcess.signalName(40).contains("40"))
    }

    /// `stitch` of a missing or foreign report says so in words (it printed an NSCocoaErrorDomain dump); `run nosuch`
    /// says where it looked.
    @Test func missingFilesAreSaidInWords() throws {
        let dir = TestEnvironment.temporaryDirectory("words-files")
        let missing = try Self.tandem(["stitch", dir.appendingPathComponent("nosuch.json").path])
        #expect(missing.code == 2 && missing.output.contains("no such file") && !missing.output.contains("NSCocoa"),
                "\(missing.output)")
        try Data("{}".utf8).write(to: dir.appendingPathComponent("other.json"))
        let foreign = try Self.tandem(["stitch", dir.appendingPathComponent("other.json").path])
        #expect(foreign.code == 2 && foreign.output.contains("not a take's report"), "\(foreign.output)")
        let run = try Self.tandem(["run", "nosuch"], in: dir)
        #expect(run.code == 2 && run.output.contains("looked for")
                && run.output.contains(dir.appendingPathComponent("Presets/nosuch.toml").path), "\(run.output)")
    }

    /// `record -f flac` records int24 (it defaulted to float32, which FLAC refuses), and so does a preset's
    /// `format = "flac"` without a `sample`.
    @Test func flacDefaultsToASampleFormatItTakes() throws {
        let server = try TestEnvironment.server("wordsflac")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("words-flac")
        let t = try TandemProcess(["record", "-c", "1", "-f", "flac", "-d", dir.path, "-t", "1"], server: server,
                                  log: dir.appendingPathComponent("rec.log").path)
        #expect(t.process.wait(timeout: 15) == 0, "\(t.output)")
        let file = try #require(announcedFile(t.output), "\(t.output)")
        let frames = try SoundFileReader(path: file).frames
        #expect(file.hasSuffix(".flac") && frames == 48000, "\(file): \(frames) frames")
        let preset = dir.appendingPathComponent("flac.toml").path
        try "[session]\nname = \"f\"\ndirectory = \"\(dir.path)\"\n[recorder]\nchannels = 1\nformat = \"flac\"\n"
            .write(toFile: preset, atomically: true, encoding: .utf8)
        let check = try Self.tandem(["preset", "check", preset])
        #expect(check.code == 0, "\(check.output)")
    }

    /// A `--connect` pattern that names no port lists the ports that are there (it said only that none matched).
    @Test func aMissingPortListsThePortsThere() throws {
        let server = try TestEnvironment.server("wordsport")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("words-port")
        let t = try TandemProcess(["record", "-c", "1", "-d", dir.path, "--connect", "system:captur_1"], server: server,
                                  log: dir.appendingPathComponent("rec.log").path)
        #expect(t.process.wait(timeout: 15) == 2, "\(t.output)")
        #expect(t.output.contains("no output port matches 'system:captur_1' (there are system:capture_1"), "\(t.output)")
    }

    /// How a take ended reads as words ("take 1 duration reached: ..."), not the report's camelCase value.
    @Test func aTakesEndIsSaidInWords() throws {
        let server = try TestEnvironment.server("wordsend")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("words-end")
        let t = try TandemProcess(["record", "-c", "1", "-d", dir.path, "-t", "1"], server: server,
                                  log: dir.appendingPathComponent("rec.log").path)
        #expect(t.process.wait(timeout: 15) == 0, "\(t.output)")
        #expect(t.output.contains("take 1 duration reached: 48000 frames") && !t.output.contains("take 1 durationReached"),
                "\(t.output)")
    }
}
