import Testing
import Foundation
@testable import Engine

/// The session's numbered event stream: numbers grow by one per event, a reader catches up from the last number it
/// saw, and one that fell behind the kept events is told it missed some.
@Suite struct EventJournalTests {
    @Test func numbersCatchUpAndMisses() {
        let j = EventJournal()
        #expect(j.last == 0 && j.since(0).events.isEmpty && !j.since(0).missed)
        let first = j.record([.serverBack, .refused("a"), .refused("b")])
        #expect(first.map(\.sequence) == [1, 2, 3] && j.last == 3)
        #expect(j.since(1).events.map(\.sequence) == [2, 3] && !j.since(1).missed)
        for i in 0..<(EventJournal.capacity + 10) { j.record([.refused("\(i)")]) }
        let late = j.since(2)
        #expect(late.missed && late.events.count == EventJournal.capacity, "a reader far behind is told")
        #expect(!j.since(j.last).missed && j.since(j.last).events.isEmpty)
        #expect(!j.since(j.last - 5).missed && j.since(j.last - 5).events.count == 5)
    }
}
