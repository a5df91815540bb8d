import Foundation
import Logging
import Plugins
import Presets
import Testing

/// Replacing a running chain without a server: the process thread is played by calling `acquire`, cycle by cycle.
@Suite(.serialized) struct ChainHolderTests {
    static func chain(_ gain: Double) -> PluginChain {
        PluginChain(specs: [PluginSpec(uri: PluginChainTests.amp, name: "amp", controls: [.init(symbol: "gain", value: gain)])],
                    channels: 1, sampleRate: 48000, period: 256, label: "test")
    }

    /// The old chain is freed only once the process thread has taken the new one, and `replace` never waits for it
    /// (it used to spin on the control thread for up to 5 s when the process thread was late).
    @Test func aReplacedChainIsFreedOnlyAfterTheProcessThreadLetsGo() {
        let holder = ChainHolder()
        weak var first: PluginChain?
        do {
            let a = Self.chain(0)
            first = a
            holder.install(a)
        }
        #expect(holder.slot.acquire() != nil)          // cycle 1 runs A
        let started = Date()
        holder.replace(with: Self.chain(-6), isRunning: { true }, logger: Logger(label: "test"))
        #expect(Date().timeIntervalSince(started) < 0.5, "replace waited for the process thread")
        #expect(first != nil && holder.retiredCount == 1, "A may still be running: kept")
        holder.collect()
        #expect(first != nil, "not taken yet: still kept")
        let running = holder.slot.acquire()            // cycle 2 takes B
        #expect(running == holder.chain?.state)
        holder.collect()
        #expect(first == nil && holder.retiredCount == 0, "taken: A freed")
    }

    /// Two replacements before the process thread runs again: the middle chain never ran and is dropped at once;
    /// the running one stays until the last offer is taken.
    @Test func anOfferNobodyTookIsWithdrawnAndFreedAtOnce() {
        let holder = ChainHolder()
        weak var running: PluginChain?
        weak var middle: PluginChain?
        do {
            let a = Self.chain(0)
            running = a
            holder.install(a)
            _ = holder.slot.acquire()
            let b = Self.chain(-3)
            middle = b
            holder.replace(with: b, isRunning: { true }, logger: Logger(label: "test"))
        }
        holder.replace(with: Self.chain(-6), isRunning: { true }, logger: Logger(label: "test"))
        #expect(middle == nil, "B never ran: freed when C replaced it")
        #expect(running != nil && holder.retiredCount == 1)
        #expect(holder.slot.acquire() == holder.chain?.state)
        holder.collect()
        #expect(running == nil && holder.retiredCount == 0)
    }

    /// With the process thread stopped, the swap happens at once.
    @Test func withoutAProcessThreadTheSwapIsImmediate() {
        let holder = ChainHolder()
        weak var old: PluginChain?
        do {
            let a = Self.chain(0)
            old = a
            holder.install(a)
        }
        holder.replace(with: nil, isRunning: { false }, logger: Logger(label: "test"))
        #expect(old == nil && holder.slot.acquire() == nil)
    }
}
