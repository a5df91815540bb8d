import Foundation
import Logging

/// The control side of a `ChainSlot`: which chain an engine runs, and replacing it while the engine runs.
///
/// A replaced chain is retired, not freed: the process thread may be in the middle of a cycle with it. It is freed by
/// `collect()` once the process thread has taken the newer offer (it then holds no pointer to the old one), or by
/// `close()` after the client is closed. Nothing waits or spins: the control loop calls `collect()` as it polls.
///
/// Threads: control thread only (one owner).
public final class ChainHolder: @unchecked Sendable {
    public let slot: ChainSlot
    /// The chain the process thread runs (or will run from its next cycle).
    public private(set) var chain: PluginChain?
    /// Chains the process thread may still hold, freed once it has taken the current offer.
    private var retired: [PluginChain] = []

    public init() { slot = .allocate() }

    /// Installs `chain` before the client is activated: it runs from the first cycle.
    public func install(_ chain: PluginChain?) {
        self.chain = chain
        slot.offer(chain.flatMap { $0.isEmpty ? nil : $0.state })
        slot.takeOffer()
    }

    /// Replaces the running chain: the process thread takes the new one at the start of its next cycle. The old one
    /// is retired and freed by a later `collect()`. `isRunning` says whether the process thread still runs (if not,
    /// the swap is done here and the old chain freed at once).
    public func replace(with new: PluginChain?, isRunning: () -> Bool, logger: Logger) {
        let old = chain
        chain = new
        // A withdrawn offer is `old` itself, which never ran: it is dropped here. The chain the process thread runs
        // is then already among the retired ones.
        let withdrawn = slot.offer(new.flatMap { $0.isEmpty ? nil : $0.state })
        if !withdrawn, let old { retired.append(old) }
        if !isRunning() { slot.takeOffer() }
        collect()
    }

    /// Frees the retired chains once the process thread has taken the current offer. Control thread; cheap (one
    /// atomic load) when there is nothing to free.
    public func collect() {
        guard !retired.isEmpty, slot.taken else { return }
        retired.removeAll()
    }

    /// Chains waiting to be freed (for tests and status).
    public var retiredCount: Int { retired.count }

    /// After the client is closed: frees everything.
    public func close() {
        chain = nil
        retired.removeAll()
    }

    deinit { slot.deallocate() }
}
