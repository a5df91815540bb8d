@testable import Coordinator
import Testing
@testable import Engine

/// When a session may save a chain's change: only after its engine ran a whole cycle with it, so a control value that
/// hangs a plugin (its cycle never ends) is never saved and a restarted rack does not come back hung.
@Suite struct PluginSaveMarkTests {
    final class Chain {}
    let a = ObjectIdentifier(Chain.self)
    let b = ObjectIdentifier(Int.self)

    /// The loop's looks at one chain: (dirty, edits, cycles) each time; the looks at which it would save.
    func saves(_ looks: [(Bool, Int, Int)], chain: (Int) -> ObjectIdentifier = { _ in ObjectIdentifier(Chain.self) })
        -> [Int] {
        var mark: PluginSaveMark?
        var out: [Int] = []
        for (i, look) in looks.enumerated() {
            let r = PluginSaveMark.look(mark, chain: chain(i), dirty: look.0, edits: look.1, cycles: look.2)
            mark = r.mark
            if r.settled { out.append(i) }
        }
        return out
    }

    @Test func aChangeIsSavedOnlyAfterTwoMoreCycles() {
        // Seen at cycle 10: the cycle then running may have begun before the change; 12 proves one ran with it.
        #expect(saves([(true, 1, 10), (true, 1, 11), (true, 1, 12), (true, 1, 13)]) == [2, 3])
    }

    @Test func aChangeThatHangsThePluginIsNeverSaved() {
        // The set lands, one cycle that began before it ends, then the counter stands still: the race the old
        // "did the counter move since the last look" check lost (it saved the hanging value).
        #expect(saves([(true, 1, 100), (true, 1, 101), (true, 1, 101), (true, 1, 101)]).isEmpty)
    }

    @Test func aNewerChangeNewChainOrRestartedCounterMarksAfresh() {
        #expect(saves([(true, 1, 10), (true, 2, 12), (true, 2, 13), (true, 2, 14)]) == [3])
        #expect(saves([(true, 1, 10), (true, 1, 12), (true, 1, 13)], chain: { $0 == 0 ? a : b }) == [])
        #expect(saves([(true, 1, 500), (true, 1, 3), (true, 1, 4), (true, 1, 5)]) == [3])
        // Saved (no longer dirty): nothing to save until the next change, which waits its own two cycles.
        #expect(saves([(true, 1, 10), (false, 1, 12), (true, 2, 12), (true, 2, 14)]) == [3])
    }
}
