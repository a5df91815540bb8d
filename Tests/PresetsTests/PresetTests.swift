import Testing
import Foundation
@testable import Presets
import TestSupport

@Suite struct PresetTests {
    static let dir = TestEnvironment.temporaryDirectory("presets")
    static let existingAudio: String = {
        let p = dir.appendingPathComponent("a.wav").path
        try? TestEnvironment.writeWAV([0, 0], channels: 1, path: p)
        return p
    }()

    static var shippedPresetsFolder: URL {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("Presets").path) {
            url = url.deletingLastPathComponent()
        }
        return url.appendingPathComponent("Presets")
    }

    func parse(_ text: String) -> (Preset?, [PresetProblem]) {
        PresetLoader.parse(text, file: "test.toml", baseDirectory: Self.dir.path)
    }

    @Test func everyShippedPresetIsValid() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.shippedPresetsFolder.path)
            .filter { $0.hasSuffix(".toml") }
        #expect(files.count >= 5)
        for f in files {
            let (preset, problems) = PresetLoader.load(path: Self.shippedPresetsFolder.appendingPathComponent(f).path)
            #expect(preset != nil && problems.isEmpty, "\(f): \(problems)")
        }
    }

    @Test func aFullPresetReadsEveryKey() throws {
        let (p, problems) = parse("""
            [session]
            name = "gig"
            server = "live"
            directory = "."
            on_server_loss = "stop"
            on_disk_error = "continue"
            on_manual_disconnect = "repair"
            control_port = 9951
            on_plugin_error = "bypass"
            [recorder]
            client = "rec"
            ports = ["a", "b"]
            format = "flac"
            sample = "int24"
            quality = 0.7
            template = "{session}-{take}"
            stems = true
            rotate = 60
            rotate_size = "2G"
            preroll = 2.5
            duration = 3600
            stop_at = "23:30"
            start = "transport"
            ring = 8
            [player]
            client = "play"
            channels = 4
            queue = ["\(Self.existingAudio)"]
            loop = "all"
            gain = -6
            map = [1, 1, 0, 2]
            quality = "very-high"
            seek = 1.5
            start = "with-recorder"
            ring = 3
            [[connect]]
            from = "/system:capture_[12]/"
            to = "rec:*"
            mode = "all"
            """)
        #expect(problems.isEmpty, "\(problems)")
        let preset = try #require(p)
        #expect(preset.session.server == "live" && preset.session.onServerLoss == .stop && preset.session.controlPort == 9951)
        #expect(preset.session.onPluginError == .bypass)
        #expect(preset.recorder?.ports == ["a", "b"] && preset.recorder?.rotateBytes == 2 << 30)
        #expect(preset.recorder?.format.container == .flac && preset.recorder?.start == .transport)
        #expect(preset.recorder?.ringSeconds == 8)
        #expect(preset.player?.ports.count == 4 && preset.player?.channelMap == [1, 1, 0, 2] && preset.player?.start == .withRecorder)
        #expect(preset.connections.first?.from == .regex("system:capture_[12]"))
        #expect(preset.connections.first?.from.matches("system:capture_2") == true)
        #expect(preset.connections.first?.to.matches("rec:b") == true)
    }

    @Test func overridesSetKeys() throws {
        let (p, problems) = PresetLoader.parse("[recorder]\nchannels = 2\n", file: "t", baseDirectory: Self.dir.path,
                                               overrides: ["recorder.format=flac", "recorder.sample=int16", "session.name=x"])
        #expect(problems.isEmpty, "\(problems)")
        #expect(p?.recorder?.format.container == .flac && p?.session.name == "x")
    }

    /// A bad value given by `--set` is the option's problem, not the file's (it was blamed on the file's line 1).
    @Test func aBadOverrideIsBlamedOnTheOption() throws {
        let (p, problems) = PresetLoader.parse("[session]\nname = \"s\"\n[recorder]\nchannels = 2\n", file: "t.toml",
                                               baseDirectory: Self.dir.path, overrides: ["recorder.channels=0"])
        #expect(p == nil && problems.count == 1)
        #expect(problems.first?.description.hasPrefix("--set: recorder.channels: 0 is out of range") == true, "\(problems)")
    }

    /// The malformed corpus: each preset gets its specific message, at its line and key.
    static let malformed: [(String, String, Int?, String)] = [
        // (preset text, key, line, message fragment)
        ("[recorder]\nchannels = \"two\"", "recorder.channels", 2, "expected an integer, found a string"),
        ("[recorder]\nchannels = 0", "recorder.channels", 2, "out of range (allowed: 1 to 256)"),
        ("[recorder]\nchannels = 300", "recorder.channels", 2, "out of range"),
        ("[recorder]\nformt = \"wav\"", "recorder.formt", 2, "did you mean 'format'?"),
        ("[recorder]\nformat = \"aiff\"", "recorder.format", 2, "allowed: wav, rf64, flac, ogg, opus, mp3"),
        ("[recorder]\nformat = \"flac\"\nsample = \"float32\"", "recorder.sample", 3, "FLAC stores integers"),
        ("[recorder]\nsample = \"int32\"", "recorder.sample", 2, "allowed: float32, int24, int16"),
        ("[recorder]\nquality = 2", "recorder.quality", 2, "out of range (allowed: 0 to 1)"),
        ("[recorder]\nports = [\"a\", \"a\"]", "recorder.ports", 2, "duplicate port 'a'"),
        ("[recorder]\nports = [\"x:y\"]", "recorder.ports", 2, "contains ':'"),
        ("[recorder]\nports = []", "recorder.ports", 2, "at least one port"),
        ("[recorder]\nports = [1, 2]", "recorder.ports", 2, "expected an array of strings"),
        ("[recorder]\nports = \"in\"", "recorder.ports", 2, "expected an array of strings, found a string"),
        ("[recorder]\nchannels = 2\nports = [\"a\"]", "recorder.ports", 3, "either 'channels' or 'ports'"),
        ("[recorder]\ntemplate = \"{session}/{take}\"", "recorder.template", 2, "must not contain '/'"),
        ("[recorder]\ntemplate = \"{sesion}\"", "recorder.template", 2, "unknown placeholder {sesion}"),
        ("[recorder]\ntemplate = \"{take\"", "recorder.template", 2, "unclosed"),
        ("[recorder]\nstems = \"yes\"", "recorder.stems", 2, "expected true or false"),
        ("[recorder]\nrotate = 0", "recorder.rotate", 2, "out of range"),
        ("[recorder]\nrotate_size = \"lots\"", "recorder.rotate_size", 2, "is not a size"),
        ("[recorder]\nrotate_size = 100", "recorder.rotate_size", 2, "out of range (64K"),
        ("[recorder]\npreroll = -1", "recorder.preroll", 2, "out of range"),
        ("[recorder]\nduration = 0", "recorder.duration", 2, "out of range"),
        ("[recorder]\nstop_at = \"25:00\"", "recorder.stop_at", 2, "not a time of day"),
        ("[recorder]\nstart = \"later\"", "recorder.start", 2, "allowed: immediately, armed, transport"),
        ("[recorder]\nring = 0", "recorder.ring", 2, "out of range"),
        ("[recorder]\nclient = \"\"", "recorder.client", 2, "client name is empty"),
        ("[session]\nname = \"a/b\"\n[recorder]", "session.name", 2, "must not contain '/'"),
        ("[session]\ndirectory = \"/nonexistent/tandem\"\n[recorder]", "session.directory", 2, "does not exist"),
        ("[session]\ndirectory = \"/etc/hostname\"\n[recorder]", "session.directory", 2, "is not a directory"),
        ("[session]\non_server_loss = \"retry\"\n[recorder]", "session.on_server_loss", 2, "allowed: resume, stop"),
        ("[session]\non_disk_error = \"ignore\"\n[recorder]", "session.on_disk_error", 2, "allowed: stop, continue"),
        ("[session]\non_manual_disconnect = \"fix\"\n[recorder]", "session.on_manual_disconnect", 2, "allowed: respect, repair"),
        ("[session]\non_plugin_error = \"ignore\"\n[recorder]", "session.on_plugin_error", 2, "allowed: fail, bypass"),
        ("[session]\ncontrol_port = 80\n[recorder]", "session.control_port", 2, "out of range"),
        ("[session]\nhttp = \"8080\"\n[recorder]", "session.http", 2, "is not HOST:PORT"),
        ("[session]\nhttp = \"127.0.0.1:99999\"\n[recorder]", "session.http", 2, "is not HOST:PORT"),
        ("[session]\nhttp = \"::1:8080\"\n[recorder]", "session.http", 2, "[::1]:8080"),
        ("[session]\nhttp = \"127.0.0.1:8080\"\nhttp_origins = [\"http://a.b/x\"]\n[recorder]", "session.http_origins", 3,
         "is not an origin"),
        ("[session]\nhttp_origins = [\"http://a.b\"]\n[recorder]", "session.http_origins", 2, "set session.http too"),
        ("[session]\nserver = 5\n[recorder]", "session.server", 2, "expected a string, found an integer"),
        ("[player]\nqueue = [\"/nonexistent/x.wav\"]", "player.queue", 2, "missing file '/nonexistent/x.wav'"),
        ("[player]\nqueue = [\"/tmp\"]", "player.queue", 2, "is a directory"),
        ("[player]\nloop = \"forever\"", "player.loop", 2, "allowed: none, item, all"),
        ("[player]\ngain = 40", "player.gain", 2, "out of range (allowed: -120 to 24 dB)"),
        ("[player]\nchannels = 2\nmap = [1]", "player.map", 3, "1 entries for 2 ports"),
        ("[player]\nmap = [\"L\", \"R\"]", "player.map", 2, "file channels 1 to 256"),
        ("[player]\nquality = \"best\"", "player.quality", 2, "allowed: low, medium, high, very-high"),
        ("[player]\nstart = \"with-recorder\"", "player.start", nil, "needs a [recorder]"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -30\n[player]\nstart = \"with-recorder\"",
         "player.start", nil, "cannot follow a recorder with start = \"level\""),
        ("[recorder]\nschedule = [\"daily 09:00-10:00\"]\n[player]\nstart = \"with-recorder\"", "player.start", nil,
         "cannot follow a recorder with a schedule"),
        ("[player]\nseek = -2", "player.seek", 2, "out of range"),
        ("[recorder]\n[player]\nclient = \"tandem-rec\"", "player.client", nil, "different client names"),
        ("[recorder]\n[[connect]]\nfrom = \"/sys(/\"\nto = \"x:y\"", "connect.from", 3, "not a valid regular expression"),
        ("[recorder]\n[[connect]]\nfrom = \"system\"\nto = \"x:y\"", "connect.from", 3, "not a full port name"),
        ("[recorder]\n[[connect]]\nto = \"x:y\"", "connect.from", 2, "needs 'from'"),
        ("[recorder]\n[[connect]]\nfrom = \"a:b\"\nto = \"x:y\"\nmode = \"some\"", "connect.mode", 5, "allowed: pairs, all"),
        ("[recorder]\n[connect]\nfrom = \"a:b\"", "connect", 2, "expected [[connect]] tables"),
        ("recorder = 5", "recorder", 1, "expected a table [recorder]"),
        ("[recordr]\nchannels = 2", "recordr", 1, "did you mean 'recorder'?"),
        ("[session]\nname = \"x\"", "", nil, "needs a [recorder] table, a [player] table or a [[rack]] table"),
        ("[player]\nseek = 1\nseek_frame = 2", "player.seek_frame", 3, "either seek or seek_frame"),
        ("[player]\nstart = \"command\"\nstart_at = \"10:00\"", "player.start_at", 3, "needs start = \"immediately\""),
        ("[player]\nstart_at = \"noon\"", "player.start_at", 2, "not a time of day"),
        ("[player]\ntail = 601", "player.tail", 2, "out of range"),
        ("[session]\nexit_after = \"take\"\n[player]", "session.exit_after", nil, "needs a [recorder]"),
        ("[session]\nexit_after = \"forever\"\n[recorder]", "session.exit_after", 2, "allowed: take, playback"),
        ("[recorder]\nchannels = 2\nchannels = 3", "", 3, "defined twice"),
        ("[recorder\nchannels = 2", "", 1, "must end with ']'"),
    ]

    @Test func everyMalformedPresetGetsItsOwnMessage() {
        #expect(Self.malformed.count >= 40)
        for (text, key, line, fragment) in Self.malformed {
            let (preset, problems) = parse(text)
            #expect(preset == nil, "accepted: \(text)")
            let hit = problems.first { $0.key == key && $0.message.contains(fragment) && (line == nil || $0.line == line) }
            #expect(hit != nil, "\(text.debugDescription): wanted \(key) line \(String(describing: line)) '\(fragment)', got \(problems)")
        }
    }

    @Test func everyProblemIsListedAtOnce() {
        let (_, problems) = parse("[recorder]\nchannels = 0\nformat = \"x\"\nbogus = 1\n[player]\ngain = 99")
        #expect(problems.count == 4, "\(problems)")
        #expect(problems.allSatisfy { $0.description.hasPrefix("test.toml:") })
    }

    /// 5,000 presets mutated from the shipped ones (seeded, repeatable, TestSupport's PresetMutator): none crashes or
    /// hangs the loader; the verdict and every message are the same when the same text is read again; a rejection
    /// lists problems that each carry a message and a line inside the text (or none, for the file as a whole); an
    /// acceptance carries none; and the mutations reach both verdicts (a mutator that always broke the syntax, or
    /// never changed anything, would prove nothing).
    @Test func mutationFuzzerNeverCrashesAndAlwaysExplains() throws {
        let folder = Self.shippedPresetsFolder
        let texts = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".toml") }
            .sorted().map { try String(contentsOfFile: folder.appendingPathComponent($0).path, encoding: .utf8) }
        var mutator = PresetMutator(seed: 0xF022_5EED)
        var accepted = 0, rejected = 0, unchanged = 0
        let started = Date()
        for _ in 0..<5000 {
            let original = mutator.random.pick(texts)
            let text = mutator.mutate(original)
            if text == original { unchanged += 1 }
            let (preset, problems) = PresetLoader.parse(text, file: "fuzz.toml", baseDirectory: folder.path)
            let (again, problemsAgain) = PresetLoader.parse(text, file: "fuzz.toml", baseDirectory: folder.path)
            #expect((preset == nil) == (again == nil) && problems == problemsAgain, "not repeatable: \(text.debugDescription)")
            // Counted in scalars: Swift reads "\r\n" as one Character, which a split on "\n" would miss.
            let lines = text.unicodeScalars.filter { $0 == "\n" }.count + 1
            if preset != nil {
                #expect(problems.isEmpty, "accepted with problems: \(problems)")
                accepted += 1
            } else {
                #expect(!problems.isEmpty, "rejected without a reason: \(text.debugDescription)")
                for p in problems {
                    #expect(!p.message.isEmpty && p.file == "fuzz.toml", "\(p)")
                    #expect(p.line.map { (1...lines).contains($0) } ?? true, "line \(p.line ?? 0) of \(lines): \(p)")
                }
                rejected += 1
            }
        }
        #expect(accepted >= 250 && rejected >= 250, "both verdicts reached: \(accepted) accepted, \(rejected) rejected")
        #expect(unchanged < 250, "\(unchanged) mutations changed nothing")
        #expect(Date().timeIntervalSince(started) < 60, "no hang")
        try? "fuzz: \(accepted) accepted, \(rejected) rejected, \(unchanged) unchanged in \(Date().timeIntervalSince(started)) s\n"
            .write(toFile: "/tmp/tandem-fuzz.txt", atomically: true, encoding: .utf8)
    }
}
