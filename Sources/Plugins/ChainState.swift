import Realtime

/// Everything the process thread touches to run one chain: plain pointers built by `PluginChain` before the chain is
/// installed, never changed while it is installed.
public struct ChainState: BitwiseCopyable {
    let stages: UnsafeMutablePointer<StageState>
    let stageCount: Int
    let channels: Int
    /// Two banks of `channels` buffers between stages (`Period.maxFrames` frames each).
    let between: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
}

/// One plugin of the chain: one instance, or one per group of channels.
struct StageState: BitwiseCopyable {
    let instances: UnsafeMutablePointer<InstanceState>
    let instanceCount: Int
    /// Audio inputs and outputs of each instance.
    let ins: Int
    let outs: Int
    /// Target value of each input control port (Float bits), written by the control thread.
    let controls: AtomicCounterArray
    let controlCount: Int
    /// Output control ports of the first instance (Float bits), for the control thread to read.
    let outputs: AtomicCounterArray
    let outputCount: Int
    /// Index (among the output controls) of the port that reports latency, or -1.
    let latencyOutput: Int
}

/// One plugin instance.
struct InstanceState: BitwiseCopyable {
    let handle: UnsafeMutableRawPointer?
    let connect: @convention(c) (UnsafeMutableRawPointer?, UInt32, UnsafeMutableRawPointer?) -> Void
    let run: @convention(c) (UnsafeMutableRawPointer?, UInt32) -> Void
    /// Port indices of the audio inputs and outputs (`ins` and `outs` of the stage).
    let audioIn: UnsafeMutablePointer<UInt32>
    let audioOut: UnsafeMutablePointer<UInt32>
    /// The chain channel the first audio port works on.
    let firstChannel: Int
    /// Storage the input control ports are connected to, in the stage's control order.
    let controlValues: UnsafeMutablePointer<Float>
    /// Storage the output control ports are connected to.
    let outputValues: UnsafeMutablePointer<Float>
    /// Atom sequence buffers (input ports first), reset every cycle.
    let atoms: UnsafeMutablePointer<UnsafeMutableRawPointer>
    let atomInputs: Int
    let atomCount: Int
    let atomCapacity: UInt32
    let sequenceURID: UInt32
    let chunkURID: UInt32
    /// The instance's worker (`LV2HostWorker *`), or nil.
    let worker: OpaquePointer?
}

/// Where a process callback finds its chain, and how the control thread replaces it without a lock.
///
/// Threads: `acquire` on the process thread only; the rest on the control thread. Cells: 0 the running chain, 1 a
/// chain waiting to be taken (0: none, -1: "no chain"). Once the offer is taken (cell 1 back to 0), the process
/// thread has let go of the chain it ran before: it reads cell 0 once per cycle, after taking.
public struct ChainSlot: BitwiseCopyable, @unchecked Sendable {
    let cells: AtomicCounterArray

    public static func allocate() -> ChainSlot { ChainSlot(cells: .allocate(count: 2)) }
    public func deallocate() { cells.deallocate() }

    /// The chain to run this cycle (taking a waiting one first), or nil. Realtime: safe.
    @inline(__always)
    public func acquire() -> UnsafeMutablePointer<ChainState>? {
        let next = cells.exchange(1, 0)
        if next != 0 { cells.store(0, next == -1 ? 0 : next) }
        return UnsafeMutablePointer(bitPattern: cells.load(0))
    }

    /// Offers `chain` to the process thread, replacing an offer it has not taken yet. Returns whether such an offer
    /// was withdrawn (that chain never ran and never will: its owner may free it now). Control thread.
    @discardableResult
    func offer(_ chain: UnsafeMutablePointer<ChainState>?) -> Bool {
        cells.exchange(1, chain.map { Int(bitPattern: $0) } ?? -1) != 0
    }

    /// Whether the offered chain has been taken. Control thread.
    var taken: Bool { cells.load(1) == 0 }

    /// Takes the offer on the process thread's behalf (when it is not running). Control thread.
    func takeOffer() { _ = acquire() }
}
