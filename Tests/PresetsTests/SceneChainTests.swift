import Foundation
@testable import Presets
import Testing

/// A scene's `@mix` or `@gain` of the recorder or the player needs their insert chain (found by attack: such a scene
/// was taken and every recall then said "not applied").
@Suite struct SceneChainTests {
    @Test func aChainsMixOrGainOnAnEngineWithoutPluginsIsRefused() {
        let text = """
            [session]
            name = "s"
            directory = "/tmp"
            [recorder]
            channels = 1
            [player]
            channels = 1
            [[scene]]
            name = "b"
            values = { "recorder/@gain" = -3.0, "player/@mix" = 0.5, "player/@player_gain" = -6.0 }
            """
        let (_, problems) = PresetLoader.parse(text, file: "s.toml", baseDirectory: "/tmp")
        let words = problems.map(\.message)
        #expect(words.contains { $0.contains("'recorder/@gain': the recorder has no plugin chain") }, "\(words)")
        #expect(words.contains { $0.contains("'player/@mix': the player has no plugin chain")
                                 && $0.contains("'player/@player_gain'") }, "\(words)")
        #expect(!words.contains { $0.contains("player_gain':") }, "the player's own gain needs no chain: \(words)")
    }
}

/// Every bad `at` entry is named, not only the first (found by attack).
@Suite struct SceneTimesEveryProblemTests {
    @Test func everyBadEntryIsNamed() {
        guard case .failure(let e) = SceneTimes.parse(["Mon 25:00", "daily 07:00", "Xyz 10:00"]) else {
            Issue.record("bad entries taken")
            return
        }
        #expect(e.description.contains("entry 1: 'Mon 25:00'") && e.description.contains("entry 3: 'Xyz 10:00'")
                && !e.description.contains("entry 2"), "\(e.description)")
    }
}
