@testable import Coordinator
import Testing
import Foundation
@testable import Engine
import Presets

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

/// An isolated rack's changes, shadowed from its events for the setup as it runs (a preset saved, a chain edited).
struct ChainShadowTests {
    @Test func controlsAndBypassesFromARacksEventsAreLaidOverItsSpecs() {
        var shadow = ChainShadow()
        let specs = [PluginSpec(uri: "urn:a", name: "amp", controls: [.init(symbol: "gain", value: -6)]),
                     PluginSpec(uri: "urn:b", name: "eq")]
        #expect(shadow.applied(to: specs) == specs, "nothing changed: the specs as they are")
        shadow.observe(kind: "control-changed", text: "fx amp gain -3.0 http", rack: "fx")
        shadow.observe(kind: "control-changed", text: "fx eq freq 1200.0 osc", rack: "fx")
        shadow.observe(kind: "bypass-changed", text: "fx eq 1 midi", rack: "fx")
        shadow.observe(kind: "control-changed", text: "other amp gain 5 http", rack: "fx")   // another rack's
        shadow.observe(kind: "control-changed", text: "fx amp gain nan http", rack: "fx")     // nonsense
        shadow.observe(kind: "control-changed", text: "fx amp", rack: "fx")
        let after = shadow.applied(to: specs)
        #expect(after[0].controls == [.init(symbol: "gain", value: -3)])
        #expect(after[1].controls == [.init(symbol: "freq", value: 1200)] && after[1].bypass)
        shadow.reset()
        #expect(shadow.applied(to: specs) == specs)
    }
}
