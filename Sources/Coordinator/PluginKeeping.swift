import Engine
import Foundation

/// When changed plugin state is saved (`save_plugins`), as a value: each chain's change is marked when first seen and
/// saved once it has run two whole cycles unchanged, at most once a second over all chains.
struct PluginKeeping {
    /// What the session sees of one engine's chain at a look.
    struct Chain {
        var engine: ChainEngine
        var chain: ObjectIdentifier
        var dirty: Bool
        var edits: Int
        var cycles: Int
    }

    /// Per engine, the change to its chain waiting to be saved.
    private(set) var marks: [ChainEngine: PluginSaveMark] = [:]
    private var lastSave = Date.distantPast
    /// The shortest time between two saves.
    static let gap = 1.0

    /// The engines whose chains to save now, at real time `now` (none until `gap` after the last save).
    mutating func look(_ chains: [Chain], at now: Date) -> [ChainEngine] {
        var next: [ChainEngine: PluginSaveMark] = [:]
        var settled: [ChainEngine] = []
        for c in chains {
            let look = PluginSaveMark.look(marks[c.engine], chain: c.chain, dirty: c.dirty, edits: c.edits, cycles: c.cycles)
            next[c.engine] = look.mark
            if look.settled { settled.append(c.engine) }
        }
        marks = next
        guard !settled.isEmpty, now.timeIntervalSince(lastSave) >= Self.gap else { return [] }
        lastSave = now
        return settled
    }
}

/// When a chain's change may be saved: once its engine's process thread has run a whole cycle with it. The loop
/// notes the engine's cycle count when it first sees the change; the cycle running then may have begun before the
/// change, so the count must grow by two (engines count a cycle at its end). A value that hangs a plugin never
/// completes a cycle, so it is never saved, and a rack restarted after the hang comes back with the state before it.
struct PluginSaveMark: Equatable {
    /// The chain and its change count when the mark was taken, and the engine's cycles then.
    let chain: ObjectIdentifier
    let edits: Int
    let cycles: Int

    /// The mark after one look (nil: nothing to save), and whether the change it marks has run a whole cycle. A new
    /// change, a new chain or a counter that went back (a new engine) marks afresh.
    static func look(_ mark: PluginSaveMark?, chain: ObjectIdentifier, dirty: Bool, edits: Int,
                     cycles: Int) -> (mark: PluginSaveMark?, settled: Bool) {
        guard dirty else { return (nil, false) }
        if let mark, mark.chain == chain, mark.edits == edits, cycles >= mark.cycles {
            return (mark, cycles >= mark.cycles + 2)
        }
        return (PluginSaveMark(chain: chain, edits: edits, cycles: cycles), false)
    }
}
