import Foundation
import Logging

/// The control side of a `ChainSlot`: which chain an engine runs, and replacing it while the engine runs.
///
/// A replaced chain is retired, not freed: the process thread may be in the middle of a cycle with it. It is freed by
/// `collect()` once the process thread has taken the newer offer (it then holds no pointer to the old one), or by
/// `close()` after the client is closed. Nothing waits or spins: the control loop calls `collect()` as it polls.
///
/// Threads: control thread only (one owner).
// @unchecked Sendable: `chain` and `retired` change only on the control thread that owns the holder; the process
// thread sees only `slot`, whose cells are atomic.
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

extension ChainSlot {
    /// What a crossfading taker runs this cycle: the chain to run, and whether a swap happened at this cycle's start
    /// (then `previous` is the chain run until now, nil for none, which the taker runs once more to fade from).
    public struct Fading {
        public let chain: UnsafeMutablePointer<ChainState>?
        public let swapped: Bool
        public let previous: UnsafeMutablePointer<ChainState>?
    }

    /// `acquire` for a taker that crossfades from the old chain to the new one over the cycle of a swap (a rack). The
    /// old chain is marked in cell 2 before the offer is taken, so the control thread frees it only after
    /// `finishFade`. Call `finishFade` at the end of every cycle in which `swapped` is true. Realtime: safe.
    @inline(__always)
    public func acquireFading() -> Fading {
        guard cells.load(1) != 0 else {
            return Fading(chain: UnsafeMutablePointer(bitPattern: cells.load(0)), swapped: false, previous: nil)
        }
        let old = cells.load(0)
        cells.store(2, old)
        // Only this thread empties cell 1 and the control thread never does: the offer is still there (perhaps a
        // newer one, which replaced the one seen above before it ran: that one its owner frees).
        let next = cells.exchange(1, 0)
        cells.store(0, next == -1 ? 0 : next)
        return Fading(chain: UnsafeMutablePointer(bitPattern: cells.load(0)), swapped: true,
                      previous: UnsafeMutablePointer(bitPattern: old))
    }

    /// Ends the crossfade begun by `acquireFading`: the old chain is no longer touched. Realtime: safe.
    @inline(__always)
    public func finishFade() { cells.store(2, 0) }
}
