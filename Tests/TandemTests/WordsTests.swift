import Foundation
import Jack
import SoundFile
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

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

    /// A loopback TCP port another program listens on (this test's socket): the socket and its port.
    static func takenPort() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, size) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &size) == 0
            }
        }
        guard fd >= 0, bound else { throw FixtureError("cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))") }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// A taken HTTP port is exit 2 before anything starts, naming the address and what to do, from `--http` and
    /// from a preset's `http` (it printed NIO's "bind(descriptor:ptr:bytes:): Address already in use" after the
    /// recorder had made a take).
    @Test func aTakenHTTPPortIsExitTwoBeforeAnything() throws {
        let server = try TestEnvironment.server("wordshttp")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("words-http")
        let taken = try Self.takenPort()
        defer { close(taken.fd) }
        let address = "127.0.0.1:\(taken.port)"
        let record = try TandemProcess(["record", "-c", "1", "-d", dir.path, "-t", "1", "--http", address],
                                       server: server, log: dir.appendingPathComponent("rec.log").path)
        #expect(record.process.wait(timeout: 15) == 2, "\(record.output)")
        let preset = dir.appendingPathComponent("h.toml").path
        try "[session]\nname = \"h\"\ndirectory = \"\(dir.path)\"\nhttp = \"\(address)\"\n[recorder]\nchannels = 1\n"
            .write(toFile: preset, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", "--control-port", "0", preset], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.process.wait(timeout: 15) == 2, "\(run.output)")
        for output in [record.output, run.output] {
            #expect(output.contains("the HTTP API cannot listen on \(address): port \(taken.port) is taken: another program"
                                    + " listens there; choose another port") && output.contains("nothing started")
                    && !output.contains("errno") && !output.contains("recorder ready"), "\(output)")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!files.contains { $0.hasSuffix(".wav") }, "\(files)")
    }

    /// A stereo file through a mono plugin: the chain takes the file's two channels and says so, as `--inputs 2`
    /// would (it failed the job without naming `--inputs`); a chain told `--inputs 1` is refused naming `--inputs 2`
    /// before anything runs; a rack with more sources than inputs names `--inputs N`.
    @Test(.enabled(if: RackTests.hasSWH))
    func aStereoFileThroughAMonoChainNamesInputs() throws {
        let dir = TestEnvironment.temporaryDirectory("words-inputs")
        let input = dir.appendingPathComponent("stereo.wav").path
        let frames = 4800
        var samples: [Float] = []
        for i in 0..<frames {
            let t = Double(i)
            samples += [Float(sin(t * 0.05) * 0.5), Float(sin(t * 0.013) * 0.25)]
        }
        try TestEnvironment.writeWAV(samples, channels: 2, path: input, sample: .float32)
        let followed = try Self.tandem(["render", "--plugin", RackTests.amp + ",gain=-6", "stereo.wav", "-o", "out.wav"], in: dir)
        #expect(followed.code == 0 && followed.output.contains("the chain takes the file's 2 channels, as with --inputs 2"),
                "\(followed.output)")
        let out = try TestEnvironment.readAudio(dir.appendingPathComponent("out.wav").path)
        #expect(out.channels == 2 && out.samples.count == samples.count, "\(out.channels) channels")
        let worst = zip(out.samples, samples).map { abs($0 - $1 * 0.501187) }.max() ?? 1
        #expect(worst < 1e-4, "largest difference from the input at -6 dB: \(worst)")
        let one = try Self.tandem(["render", "--plugin", RackTests.amp, "--inputs", "1", "stereo.wav", "-o", "one.wav"], in: dir)
        #expect(one.code == 2 && one.output.contains("'stereo.wav' gives 2 channels and the chain takes 1: give the chain"
                                                     + " 2 inputs (--inputs 2), choose 1 of the file's channels (--channels 1)")
                && !one.output.contains("job 1"), "\(one.output)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("one.wav").path))

        let server = try TestEnvironment.server("wordsinputs")
        defer { server.stop() }
        let rack = try TandemProcess(["rack", "--plugin", RackTests.amp, "--connect-in", "system:capture_.*", "--no-view"],
                                     server: server, log: dir.appendingPathComponent("rack.log").path)
        #expect(rack.process.wait(timeout: 15) == 2, "\(rack.output)")
        #expect(rack.output.contains("2 source port(s) (system:capture_1, system:capture_2) for the 1 input(s) of rack rack;"
                                     + " --inputs 2 gives it 2"), "\(rack.output)")
    }

    /// The long options in `text` (`--name`), without `--help` and `--version`.
    static func longOptions(_ text: some StringProtocol) -> Set<String> {
        Set(String(text).matches(of: /--[a-z][a-z0-9-]*/).map { String($0.output) }).subtracting(["--help", "--version"])
    }

    /// What `tandem PATH --help` prints: its options' long names, its `--plugin` value's keys (`bypass`,
    /// `midi_channel`), and its subcommands.
    static func help(_ path: [String]) throws -> (options: Set<String>, pluginKeys: Set<String>, subcommands: [String]) {
        let text = try tandem(path + ["--help"]).output
        var options = Set<String>(), keys = Set<String>(), subcommands: [String] = []
        var part = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { part = "" }   // a part ends at its blank line ("  See 'tandem help ...'" is none)
            if !line.hasPrefix(" "), line.hasSuffix(":") {
                part = String(line)
                continue
            }
            if part == "OPTIONS:", line.hasPrefix("  -") {
                let label = line.dropFirst(2).components(separatedBy: "  ")[0]
                options.formUnion(longOptions(label))
                if label.contains("--plugin <") { keys = pluginKeys(label) }
            } else if part == "SUBCOMMANDS:", line.hasPrefix("  "), !line.hasPrefix("   "),
                      let word = line.split(separator: " ").first, word.allSatisfy({ $0.isLowercase || $0 == "-" }) {
                subcommands.append(String(word))
            }
        }
        return (options, keys, subcommands)
    }

    /// The lower-case keys of a `--plugin URI[,name=N][,bypass]...` form (placeholders such as SYM=V left out).
    static func pluginKeys(_ form: some StringProtocol) -> Set<String> {
        Set(String(form).matches(of: /\[,([a-z_]+)/).map { String($0.output.1) })
    }

    /// docs/CLI.md and `--help` agree on every option: each long option `tandem SUB --help` prints (for every
    /// subcommand, found from `tandem --help`) appears in CLI.md's section for SUB, and each option that section
    /// lists (in its heading and its tables' first column) is one SUB's `--help` prints; so do `--plugin`'s keys.
    /// Every mismatch is reported at once.
    @Test func cliDocsAndHelpAgreeOnEveryOption() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/CLI.md")
        let lines = try String(contentsOf: docs, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        // The sections: "## tandem WORDS ..." to the next "## ".
        var sections: [(command: String, lines: [Substring])] = []
        for line in lines {
            if line.hasPrefix("## ") {
                sections.append((line.hasPrefix("## tandem ") ? String(line.dropFirst(10)) : "", [line]))
            } else if !sections.isEmpty {
                sections[sections.count - 1].lines.append(line)
            }
        }
        // Every command path, from the root's subcommands down; each to the section of its longest heading prefix.
        var queue = try Self.help([]).subcommands.map { [$0] }
        var helped: [String: (options: Set<String>, keys: Set<String>)] = [:]
        var mismatches: [String] = []
        while let path = queue.first {
            queue.removeFirst()
            let h = try Self.help(path)
            if path.count < 3 { queue += h.subcommands.map { path + [$0] } }
            let section = (1...path.count).reversed().lazy.compactMap { n -> Int? in
                let words = path.prefix(n).joined(separator: " ")
                return sections.firstIndex { $0.command == words || $0.command.hasPrefix(words + " ") }
            }.first
            guard let section else {
                if !h.options.isEmpty { mismatches.append("tandem \(path.joined(separator: " ")): no section in CLI.md") }
                continue
            }
            let text = sections[section].lines.joined(separator: "\n")
            for option in h.options.subtracting(Self.longOptions(text)).sorted() {
                mismatches.append("tandem \(path.joined(separator: " ")) \(option): in --help, not in CLI.md")
            }
            let key = sections[section].command
            helped[key] = ((helped[key]?.options ?? []).union(h.options), (helped[key]?.keys ?? []).union(h.pluginKeys))
        }
        for (command, lines) in sections {
            guard let help = helped[command] else { continue }
            var listed = Self.longOptions(lines[0])
            var keys = Set<String>()
            for line in lines {
                guard line.hasPrefix("| `-") else { continue }
                let first = line.dropFirst(2).components(separatedBy: " | ")[0]
                listed.formUnion(Self.longOptions(first))
                if first.contains("--plugin URI") { keys.formUnion(Self.pluginKeys(first)) }
            }
            if lines[0].contains("--plugin URI") { keys.formUnion(Self.pluginKeys(lines[0])) }
            for option in listed.subtracting(help.options).sorted() {
                mismatches.append("tandem \(command.split(separator: " ")[0]) \(option): in CLI.md, not in --help")
            }
            for k in keys.subtracting(help.keys).sorted() {
                mismatches.append("tandem \(command.split(separator: " ")[0]) --plugin ,\(k): in CLI.md, not in --help")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatch(es):\n\(mismatches.joined(separator: "\n"))")
    }
}
