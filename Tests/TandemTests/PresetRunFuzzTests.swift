import Takes
import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// Mutated presets fed to both `tandem preset check` and `tandem run` (against a private server): the two agree.
/// check ok: run starts (and stops cleanly on SIGINT), or fails only for a reason of the environment (the JACK
/// server, exit 3) with a message. check fails: run exits 2 with nothing started (no take, no file, no client).
/// Nothing traps (exit 132/133/134/139 or "Fatal error").
///
/// CI runs the directed changes and 60 mutations of a fixed seed; TANDEM_PRESET_FUZZ_SEED and TANDEM_PRESET_FUZZ_COUNT (or
/// `make fuzz PRESET_COUNT=200`) run more. A summary goes to /tmp/tandem-preset-run-fuzz.txt.
@Suite(.serialized) struct PresetRunFuzzTests {
    static let lv2Amp = FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2")
    static var seed: UInt64 { ProcessInfo.processInfo.environment["TANDEM_PRESET_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x0017_9E5E }
    static var count: Int { ProcessInfo.processInfo.environment["TANDEM_PRESET_FUZZ_COUNT"].flatMap { Int($0) } ?? 60 }

    static func basePreset(session: String, audio: String, server: String) -> String {
        var text = """
            [session]
            name = "pf"
            server = "\(server)"
            directory = "\(session)"
            on_server_loss = "stop"
            on_disk_error = "stop"
            [recorder]
            client = "pf-rec"
            channels = 2
            format = "wav"
            sample = "float32"
            template = "{session}-{take:03}-{date}-{time}"
            rotate = 60
            preroll = 0
            ring = 4
            start = "immediately"
            [player]
            client = "pf-play"
            channels = 2
            queue = ["\(audio)"]
            loop = "item"
            gain = 0
            seek = 0
            ring = 2
            [[connect]]
            from = "pf-play:out_*"
            to = "pf-rec:in_*"

            """
        if lv2Amp {
            text += "[[player.plugins]]\nuri = \"http://plugin.org.uk/swh-plugins/amp\"\nname = \"level\"\ncontrols = { gain = 0 }\n"
        }
        return text
    }

    /// The second base: what the first does not have. An in-process and an isolated rack with plugin controls, MIDI
    /// maps onto them, a level trigger inside an all-day schedule, and retention: `preset check` must refuse what
    /// `run` refuses for these tables too (a rack's missing plugin or bad control, a map naming a control the plugin
    /// lacks, a trigger or retention value out of range).
    static func unattendedRackPreset(session: String, server: String) -> String {
        var text = """
            [session]
            name = "pg"
            server = "\(server)"
            directory = "\(session)"
            on_server_loss = "stop"
            [recorder]
            client = "pg-rec"
            channels = 2
            start = "level"
            preroll = 0.5
            rotate = 60
            schedule = ["daily 00:00-24:00"]
            [recorder.trigger]
            threshold = -40
            stop_threshold = -50
            attack = 0.05
            hold = 2
            postroll = 0.5
            [recorder.retention]
            keep_days = 30
            min_free = "1M"
            guard = 3600

            """
        if lv2Amp {
            text += """
                [[rack]]
                name = "fx"
                isolate = false
                inputs = 1
                [[rack.plugins]]
                uri = "http://plugin.org.uk/swh-plugins/amp"
                name = "amp"
                controls = { gain = -6 }
                [[rack]]
                name = "iso"
                isolate = true
                inputs = 1
                [[rack.plugins]]
                uri = "http://plugin.org.uk/swh-plugins/amp"
                name = "lift"
                controls = { gain = 3 }
                [[map]]
                cc = 11
                channel = 1
                engine = "fx"
                plugin = "amp"
                control = "gain"
                min = -40.0
                max = 0.0
                [[map]]
                note = 36
                marker = "cue"
                [[connect]]
                from = "fx:out_1"
                to = "pg-rec:in_1"

                """
        }
        return text
    }

    /// Single changes to the base preset, tried before the random ones: values from issue 17's findings and ones
    /// the fuzzer found (a plugin URI that is not a URI trapped `run` after `preset check` passed it).
    static let directed: [(key: String, value: String)] = [
        ("template", "\"a\\u0000b\""),
        ("directory", "\"/proc\""),
        ("name", "\"" + String(repeating: "n", count: 1_000_000) + "\""),
        ("uri", "\"23:59\""),
        ("uri", "\"http://example.org/no-such-plugin\""),
        ("seek", "1e15"),
        ("rotate", "1e-300"),
        ("server", "\"no-such-server\""),
        // The second base's tables (applied to it below).
        ("controls", "{ gain = 500 }"),
        ("control", "\"gian\""),
        ("threshold", "-500"),
        ("keep_days", "-1"),
        ("min_free", "\"lots\""),
    ]
    /// Which base a directed change is for.
    static let secondBaseKeys: Set<String> = ["controls", "control", "threshold", "keep_days", "min_free"]

    static func applying(_ change: (key: String, value: String), to text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(change.key + " = ") ? change.key + " = " + change.value : String(line)
        }.joined(separator: "\n")
    }

    /// Everything under `dir`, for "nothing was written".
    static func listing(_ dir: String) -> [String] {
        (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String] ?? []).sorted()
    }

    @Test(.timeLimit(.minutes(30)))
    func presetCheckAndRunAgreeOnMutatedPresets() throws {
        let server = try TestEnvironment.server("presetrun")
        defer { server.stop() }
        let base = TestEnvironment.temporaryDirectory("presetrun")
        let session = base.appendingPathComponent("session")
        try FileManager.default.createDirectory(at: session, withIntermediateDirectories: true)
        // Presets one folder down, so that a directory of ".." stays inside this test's folder.
        let presets = base.appendingPathComponent("p")
        try FileManager.default.createDirectory(at: presets, withIntermediateDirectories: true)
        let audio = base.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 24000, channels: 2), channels: 2, path: audio)
        let original = Self.basePreset(session: session.path, audio: audio, server: server.name)
        let second = Self.unattendedRackPreset(session: session.path, server: server.name)
        var mutator = PresetMutator(seed: Self.seed, valuesFirst: true)
        var tally: [String: Int] = [:]
        var lines: [String] = []
        let started = Date()
        let directed = Self.lv2Amp ? Self.directed
            : Self.directed.filter { $0.key != "uri" && $0.key != "controls" && $0.key != "control" }
        for i in 0..<(directed.count + Self.count) {
            // After the directed changes, the two bases take turns.
            let text = i < directed.count
                ? Self.applying(directed[i], to: Self.secondBaseKeys.contains(directed[i].key) ? second : original)
                : mutator.mutate((i - directed.count) % 2 == 0 ? original : second)
            let file = presets.appendingPathComponent("m\(i).toml").path
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let shown = text.count > 3000 ? String(text.prefix(1500)) + "…(\(text.count) chars)" : text
            let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", file],
                                                environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 30)
            let before = Self.listing(session.path)
            let run = try TandemProcess(["run", "--control-port", "0", file], server: server,
                                        extraEnvironment: ["SWIFT_BACKTRACE": "enable=no"],
                                        log: base.appendingPathComponent("m\(i).log").path)
            var code = run.process.wait(timeout: 2)
            let ranOn = code == nil
            if ranOn {
                run.process.signal(SIGINT)
                code = run.process.wait(timeout: 10)
                if code == nil { run.process.stop(SIGKILL) }
            }
            let out = run.output
            let traps: Set<Int32> = [132, 133, 134, 139]
            let verdict: String
            #expect(!traps.contains(check.code) && !check.output.contains("Fatal error"),
                    "mutation \(i): preset check trapped (exit \(check.code)): \(check.output.suffix(600))\n--- preset:\n\(shown)")
            #expect(!traps.contains(code ?? 0) && !out.contains("Fatal error"),
                    "mutation \(i): run trapped (exit \(code ?? -1)): \(out.suffix(800))\n--- preset:\n\(shown)")
            switch check.code {
            case 0:
                if ranOn {
                    verdict = "ok, ran"
                    #expect(code == 0, "mutation \(i): check ok, run ran and ended with exit \(code.map(String.init) ?? "none") on SIGINT: \(out.suffix(800))\n--- preset:\n\(shown)")
                    // A take that ran is where it said, with its report beside it, and the report is final.
                    if out.contains(" recording: ") {
                        let file = announcedFile(out) ?? "?"
                        let report = announcedReport(out).flatMap { try? TakeReport.read(from: $0) }
                        #expect(FileManager.default.fileExists(atPath: file) && report?.ended == .stopped,
                                "mutation \(i): the take '\(file)' \(FileManager.default.fileExists(atPath: file) ? "exists" : "does not exist"), its report \(report.map { "says \($0.ended.rawValue)" } ?? "is missing"): \(out.suffix(800))\n--- preset:\n\(shown)")
                    }
                } else if code == 3 {
                    verdict = "ok, no server"
                    #expect(out.contains("JACK"), "mutation \(i): exit 3 without saying why: \(out.suffix(800))")
                } else {
                    verdict = "ok, run exited \(code ?? -1)"
                    // Exit 0 is right when the preset's own duration or stop time ended it.
                    #expect(code == 0 && (out.contains("duration reached") || out.contains("stop time reached")),
                            "mutation \(i): check said ok, run exited \(code.map(String.init) ?? "?") by itself: \(out.suffix(800))\n--- preset:\n\(shown)")
                }
            case 2:
                verdict = "rejected"
                let after = Self.listing(session.path)
                #expect(code == 2 && !ranOn, "mutation \(i): check rejected it (\(check.output.suffix(300))), run \(ranOn ? "started" : "exited \(code ?? -1)"): \(out.suffix(600))\n--- preset:\n\(shown)")
                #expect(!out.contains(" recording: ") && !out.contains("playing item") && before == after,
                        "mutation \(i): check rejected it, run started something (files \(Set(after).subtracting(before).sorted())): \(out.suffix(600))")
            default:
                verdict = "check exit \(check.code)"
                Issue.record("mutation \(i): preset check exited \(check.code): \(check.output.suffix(600))")
            }
            tally[verdict, default: 0] += 1
            lines.append("mutation \(i): check \(check.code), run \(ranOn ? "ran, then " : "")exit \(code.map(String.init) ?? "-"): \(verdict)")
            // Leave the session folder as it was for the next mutation's "nothing written" comparison.
            for f in Self.listing(session.path) where !before.contains(f) {
                try? FileManager.default.removeItem(atPath: session.appendingPathComponent(f).path)
            }
        }
        let summary = "seed \(Self.seed): \(directed.count) directed + \(Self.count) random mutations in \(String(format: "%.1f", Date().timeIntervalSince(started))) s: "
            + tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        try? (([summary] + lines).joined(separator: "\n") + "\n")
            .write(toFile: "/tmp/tandem-preset-run-fuzz.txt", atomically: true, encoding: .utf8)
        print(summary)
        #expect(tally["ok, ran", default: 0] > 0 && tally["rejected", default: 0] > 0, "both verdicts reached: \(summary)")
    }
}
