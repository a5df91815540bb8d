import Foundation
import Presets
import Testing
import TestSupport

/// The loudness keys (`[session] loudness`, `[recorder] loudness` and `loudness_groups`, `[player]` and `[[rack]]`
/// `loudness`): what they read to, what they refuse with file, line and key, and that they are written back.
@Suite struct LoudnessPresetTests {
    static let dir = TestEnvironment.temporaryDirectory("loudness-presets")

    static func load(_ body: String) -> (Preset?, [PresetProblem]) {
        PresetLoader.parse("[session]\ndirectory = \"\(dir.path)\"\n" + body, file: "l.toml", baseDirectory: dir.path)
    }

    @Test func groupsReadToRunsOfChannels() throws {
        #expect(LoudnessGroups.pairs(channels: 5).groups == [0..<2, 2..<4, 4..<5])
        #expect(LoudnessGroups.programme(channels: 6).groups == [0..<6])
        #expect(LoudnessGroups.programme(channels: 4).groups == [0..<2, 2..<4])
        let (p, problems) = Self.load("[recorder]\nchannels = 9\nloudness_groups = [\"1-2\", \"3\", \"4-9\"]\n")
        #expect(problems.isEmpty, "\(problems)")
        #expect(p?.recorder?.loudness?.groups == [0..<2, 2..<3, 3..<9])
        let (q, _) = Self.load("[recorder]\nchannels = 4\nloudness = true\n")
        #expect(q?.recorder?.loudness == .pairs(channels: 4))
        let (r, _) = Self.load("loudness = true\n[recorder]\nchannels = 2\nloudness = false\n[player]\nloudness = true\n")
        #expect(r?.session.loudness == true && r?.recorder?.loudnessOff == true && r?.player?.loudness == true)
    }

    @Test(arguments: [
        (#"["1-3"]"#, "3 channels: a programme is 1 (mono), 2 (stereo)"),
        (#"["1-2", "2"]"#, "overlaps another group"),
        (#"["0"]"#, "is not a channel"),
        (#"["x"]"#, "is not a channel"),
        (#"["2-1"]"#, "is not a channel"),
        (#"["1-5"]"#, "names channel 5; there are 4"),
        (#"[]"#, "no groups"),
        (#"["-1"]"#, "is not a channel"),
        (#"["99999999999999999999"]"#, "is not a channel"),
    ])
    func badGroupsAreRefusedWithLineAndKey(groups: String, words: String) throws {
        let (_, problems) = Self.load("[recorder]\nchannels = 4\nloudness_groups = \(groups)\n")
        let p = try #require(problems.first, "\(groups) was taken")
        #expect(p.key == "recorder.loudness_groups" && p.line == 5, "\(p)")
        #expect(p.message.contains(words), "\(p.message)")
    }

    @Test func contradictionsAndWrongTypesAreRefused() {
        let (_, a) = Self.load("[recorder]\nloudness = false\nloudness_groups = [\"1-2\"]\n")
        #expect(a.contains { $0.key == "recorder.loudness_groups" && $0.message.contains("loudness = false") }, "\(a)")
        let (_, b) = Self.load("loudness = \"yes\"\n")
        #expect(b.contains { $0.key == "session.loudness" }, "\(b)")
        let (_, c) = Self.load("[player]\nloudness = 1\n")
        #expect(c.contains { $0.key == "player.loudness" }, "\(c)")
    }

    @Test func theKeysAreWrittenBack() throws {
        let (p, problems) = Self.load("""
            loudness = true
            [recorder]
            channels = 3
            loudness_groups = ["1", "2-3"]
            [player]
            loudness = false
            """)
        #expect(problems.isEmpty, "\(problems)")
        let preset = try #require(p)
        let (back, again) = PresetLoader.parse(preset.toml(), file: "written", baseDirectory: Self.dir.path)
        #expect(again.isEmpty, "\(again)\n\(preset.toml())")
        #expect(back?.session.loudness == true && back?.recorder?.loudness == preset.recorder?.loudness
                && back?.player?.loudnessOff == true)
    }
}

/// One pattern language per surface, and a refusal that names the difference (issue 43, item 6): docs/PRESETS.md's
/// own MIDI example was `a2j:.*keyboard.*`, a regular expression in a preset, where it is read as a glob and connected
/// nothing.
@Suite struct ConnectPatternTests {
    @Test func aRegularExpressionWrittenAsAGlobIsRefusedNamingBothForms() throws {
        let (_, problems) = LoudnessPresetTests.load("""
            [[connect]]
            from = "a2j:.*keyboard.*"
            to = "keys:midi_in"
            """)
        let p = try #require(problems.first { $0.key == "connect.from" }, "\(problems)")
        #expect(p.line == 4 && p.message.contains("'a2j:*keyboard*'") && p.message.contains("'/a2j:.*keyboard.*/'"),
                "\(p)")
        #expect(PortPattern("a2j:*keyboard*").matches("a2j:USB keyboard [24] (capture): USB keyboard MIDI 1"))
        #expect(PortPattern("/a2j:.*keyboard.*/").matches("a2j:USB keyboard MIDI 1"))
        #expect(PortPattern("system:capture_*").problem == nil && PortPattern("system:capture_?").problem == nil)
    }
}
