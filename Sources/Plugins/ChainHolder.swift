import Foundation
import Logging

/// The control side of a `ChainSlot`: which chain an engine runs, and replacing it while the engine runs.
///
/// Threads: control thread only (one owner).
public final class ChainHolder: @unchecked Sendable {
    public let slot: ChainSlot
    /// The chain the process thread runs (or will run from its next cycle).
    public private(set) var chain: PluginChain?
    /// Chains the process thread may still hold (a replacement it did not take in time); freed on `close`.
    private var parked: [PluginChain] = []

    public init() { slot = .allocate() }

    /// Installs `chain` before the client is activated: it runs from the first cycle.
    public func install(_ chain: PluginChain?) {
        self.chain = chain
        slot.offer(chain.flatMap { $0.isEmpty ? nil : $0.state })
        slot.takeOffer()
    }

    /// Replaces the running chain: the process thread takes the new one at the start of a cycle, and only then is
    /// the old one freed. `isRunning` says whether the process thread still runs (if not, the swap is done here).
    public func replace(with new: PluginChain?, isRunning: () -> Bool, logger: Logger) {
        let old = chain
        chain = new
        slot.offer(new.flatMap { $0.isEmpty ? nil : $0.state })
        let deadline = Date().addingTimeInterval(5)
        while !slot.taken {
            if !isRunning() {
                slot.takeOffer()
                break
            }
            if Date() > deadline {
                // The process thread is stalled: keep the old chain alive, it may still be running it.
                logger.warning("the process thread did not take the new plugin chain within 5 s; the old one is kept until close")
                if let old { parked.append(old) }
                return
            }
            usleep(500)
        }
        withExtendedLifetime(old) {}
    }

    /// After the client is closed: frees everything.
    public func close() {
        chain = nil
        parked.removeAll()
    }

    deinit { slot.deallocate() }
}
