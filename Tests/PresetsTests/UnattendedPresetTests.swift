import Testing
import Foundation
@testable import Presets
import TestSupport

/// `start = "level"`, `[recorder.trigger]`, `schedule`, `rotate_on_clock` and `[recorder.retention]`: read,
/// validated with file, line and key, and written back to the same value.
@Suite struct UnattendedPresetTests {
    static let dir = TestEnvironment.temporaryDirectory("unattended")

    func parse(_ text: String) -> (Preset?, [PresetProblem]) {
        PresetLoader.parse(text, file: "u.toml", baseDirectory: Self.dir.path)
    }

    static let full = """
        [recorder]
        channels = 4
        preroll = 2
        ring = 4
        rotate = 3600
        rotate_on_clock = true
        start = "level"
        schedule = [
            "Mon-Fri 09:00-17:30",
            "Sat 22:00-02:00",
        ]
        [recorder.trigger]
        measure = "rms"
        window = 0.05
        channels = [1, 3]
        combine = "all"
        threshold = -40
        stop_threshold = -50
        attack = 0.2
        hold = 5
        postroll = 1.5
        min_length = 10
        max_length = 3600
        [recorder.retention]
        keep_days = 30
        min_free = "20G"
        guard = 7200
        dry_run = true
        running_take = "closed-chunks"
        """

    @Test func everyKeyIsRead() throws {
        let (p, problems) = parse(Self.full)
        #expect(problems.isEmpty, "\(problems)")
        let r = try #require(p?.recorder)
        #expect(r.start == .level)
        #expect(r.schedule == ["Mon-Fri 09:00-17:30", "Sat 22:00-02:00"])
        #expect(r.rotateOnClock)
        let g = try #require(r.trigger)
        #expect(g.measure == .rms && g.windowSeconds == 0.05 && g.channels == .listed([1, 3], all: true))
        #expect(g.thresholdDB == -40 && g.stopThresholdDB == -50 && g.attackSeconds == 0.2 && g.holdSeconds == 5)
        #expect(g.postrollSeconds == 1.5 && g.minLengthSeconds == 10 && g.maxLengthSeconds == 3600)
        let k = try #require(r.retention)
        #expect(k.keepDays == 30 && k.minFreeBytes == 20 << 30 && k.guardSeconds == 7200 && k.dryRun)
        #expect(k.runningTake == .closedChunks)
        // The recorder acts on every one of them: nothing is refused as pending.
        #expect(p?.pendingFeatures == [] && p?.pendingProblems.isEmpty == true)
    }

    @Test func defaultsAndTheRoundTrip() throws {
        let (p, problems) = parse(Self.full)
        let preset = try #require(p, "\(problems)")
        let text = preset.toml()
        let (back, backProblems) = PresetLoader.parse(text, file: "written", baseDirectory: Self.dir.path)
        #expect(backProblems.isEmpty, "\(backProblems)\n\(text)")
        #expect(back?.recorder == preset.recorder, "\(text)")
        // A minimal trigger: stop 6 dB under the threshold, peak over 10 ms, any channel.
        let (m, mp) = parse("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -20\n")
        #expect(mp.isEmpty, "\(mp)")
        #expect(m?.recorder?.trigger?.stopThresholdDB == -26 && m?.recorder?.trigger?.channels == .any)
        #expect(m?.recorder?.trigger?.measure == .peak)
        let again = try #require(m).toml()
        #expect(PresetLoader.parse(again, file: "w", baseDirectory: Self.dir.path).preset?.recorder?.trigger
                == m?.recorder?.trigger)
        // Nothing of it: no pending features.
        #expect(parse("[recorder]\n").0?.pendingFeatures == [])
    }

    /// Each bad value, the key and the line it is reported at.
    @Test(arguments: [
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = 3\n", "recorder.trigger.threshold", 4, "out of range"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -130\n", "recorder.trigger.threshold", 4, "out of range"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -30\nstop_threshold = -20\n", "recorder.trigger.stop_threshold", 5, "above the start threshold"),
        ("[recorder]\nstart = \"level\"\nring = 0.5\n[recorder.trigger]\nthreshold = -30\nwindow = 0.8\n", "recorder.trigger.window", 6, "longer than the ring"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -30\nwindow = 2\n", "recorder.trigger.window", 5, "out of range"),
        ("[recorder]\nstart = \"level\"\nring = 1\n[recorder.trigger]\nthreshold = -30\nattack = 0.995\n", "recorder.trigger.attack", 6, "must fit in the ring"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -30\nchannels = [1, 3]\n", "recorder.trigger.channels", 5, "1 to 2"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -30\nchannels = \"some\"\n", "recorder.trigger.channels", 5, "not allowed"),
        ("[recorder]\nstart = \"level\"\npreroll = 5\n[recorder.trigger]\nthreshold = -30\nmax_length = 5\n", "recorder.trigger.max_length", 6, "before its start is decided"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthreshold = -30\nmin_length = 60\nmax_length = 30\n", "recorder.trigger.max_length", 6, "shorter than min_length"),
        ("[recorder]\nstart = \"level\"\n[recorder.trigger]\nthresold = -30\n", "recorder.trigger.thresold", 4, "did you mean 'threshold'"),
        ("[recorder]\nstart = \"level\"\n", "recorder.start", 2, "needs a [recorder.trigger]"),
        ("[recorder]\n[recorder.trigger]\nthreshold = -30\n", "recorder.trigger", 2, "needs start = \"level\""),
        ("[recorder]\nschedule = [\"Mon-Fri 09:00-10:00\", \"daily 00:00-24:00\"]\n", "recorder.schedule", 2, "overlaps"),
        ("[recorder]\nschedule = [\n  \"Mon-Fri 09:00-10:00\",\n  \"Moonday 09:00-10:00\",\n]\n", "recorder.schedule", 4, "entry 2: 'Moonday 09:00-10:00': 'moonday' is not a day"),
        ("[recorder]\nschedule = [\"Mon 9-10\"]\n", "recorder.schedule", 2, "'9' is not a time of day"),
        ("[recorder]\nschedule = [\"Mon-Fri\"]\n", "recorder.schedule", 2, "expected DAYS START-END"),
        ("[recorder]\nstart = \"transport\"\nschedule = [\"Mon 09:00-10:00\"]\n", "recorder.schedule", 3, "not \"transport\""),
        ("[recorder]\nrotate_on_clock = true\n", "recorder.rotate_on_clock", 2, "needs 'rotate'"),
        ("[recorder]\nrotate = 420\nrotate_on_clock = true\n", "recorder.rotate_on_clock", 3, "does not divide a day"),
        ("[recorder]\n[recorder.retention]\nkeep_days = 7\nguard = 0\n", "recorder.retention.guard", 4, "a guard of 0"),
        ("[recorder]\n[recorder.retention]\nguard = 600\n", "recorder.retention", 2, "needs 'keep_days', 'min_free'"),
        ("[recorder]\n[recorder.retention]\nmin_free = \"12Q\"\n", "recorder.retention.min_free", 3, "not a size"),
        ("[recorder]\n[recorder.retention]\nkeep_days = 0.01\n", "recorder.retention.keep_days", 3, "within the guard time"),
        ("[recorder]\nrotate = 86400\n[recorder.retention]\nkeep_days = 1\nrunning_take = \"closed-chunks\"\n", "recorder.retention.keep_days", 4, "take being written"),
        ("[recorder]\n[recorder.retention]\nkeep_days = 7\nrunning_take = \"all\"\n", "recorder.retention.running_take", 4, "not allowed"),
    ] as [(String, String, Int, String)])
    func badValuesAreNamed(text: String, key: String, line: Int, words: String) {
        let (p, problems) = parse(text)
        #expect(p == nil)
        #expect(problems.contains { $0.key == key && $0.line == line && $0.message.contains(words) },
                "wanted \(key) at line \(line) saying '\(words)'; got \(problems.map(\.description))")
    }

    @Test func everyProblemIsListedAtOnce() {
        let (_, problems) = parse("""
            [recorder]
            start = "level"
            schedule = ["Mon 25:00-26:00"]
            [recorder.trigger]
            threshold = 10
            hold = -1
            [recorder.retention]
            guard = 0
            """)
        #expect(Set(problems.map(\.key)) == ["recorder.schedule", "recorder.trigger.threshold", "recorder.trigger.hold",
                                            "recorder.retention.guard", "recorder.retention"])
        #expect(problems.allSatisfy { $0.description.hasPrefix("u.toml:") })
    }
}
