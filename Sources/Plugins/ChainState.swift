#if canImport(Glibc)
import Glibc   // expf, logf, sinf, cosf: the C library's math, nothing of Foundation on the process thread
#endif
import LV2Host
import Realtime

/// Everything the process thread touches to run one chain: plain pointers built by `PluginChain` before the chain is
/// installed, never changed while it is installed (the atomics in it excepted).
public struct ChainState: BitwiseCopyable {
    let stages: UnsafeMutablePointer<StageState>
    let stageCount: Int
    /// Channels the chain takes and gives (they differ when a plugin changes the channel count).
    public let inputChannels: Int
    public let outputChannels: Int
    /// The widest the path gets: buffers per bank of `between`.
    let width: Int
    /// Two banks of `width` buffers between stages (`Period.maxFrames` frames each).
    let between: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Side inputs of the chain (see `ChainLayout`), and a silent buffer for those nothing feeds.
    public let sideInputs: Int
    /// Extra outputs of the chain (its plugins' CV outputs, see `PluginChain.sideOutputs`): after `run`, buffer k
    /// holds output k for the cycle's frames. An engine copies them to ports of its own or leaves them.
    public let sideOutputs: Int
    public let sideOutputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let silence: UnsafeMutablePointer<Float>
    /// Control thread writes, process thread reads: `Setting` cells (Float bits).
    let settings: AtomicCounterArray
    /// Process thread only: the mix and gain of the last cycle's end (ramped towards `settings` each cycle).
    let current: UnsafeMutablePointer<Float>
    /// The chain's input, mapped to the output channels and delayed by the chain's latency, for the dry/wet mix.
    let dry: DelayLines
    /// Process thread writes, control thread reads: `Count` cells.
    let counts: AtomicCounterArray
    /// URIDs of atom:Sequence and midi:MidiEvent (what the MIDI of `run` is made of).
    let sequenceURID: UInt32
    let midiURID: UInt32
    /// The URIDs time:Position is forged with.
    let timeURIDs: UnsafeMutablePointer<LV2HostTimeURIDs>
    /// Process thread only: 1 once the chain's plugins were told the transport (a new chain tells it at once).
    let timeSent: UnsafeMutablePointer<Int>
    /// Whether some stage takes time:Position (only then does a rack ask JACK for the transport each cycle).
    let takesTime: Bool
    /// What changed at the start of a cycle (a control value, a bypass, the mix, the gain, the chain's first cycle),
    /// each with the cycle's clock: the process thread is its producer, the control thread (`PluginChain.drainChanges`)
    /// its consumer. A take's control log and a render's report are made of these (see `ChainChange`).
    let changes: MessageRing
    /// Process thread only: the mix and gain cells (`settings`) as last applied, for telling a change.
    let seenSettings: UnsafeMutablePointer<Int>

    /// Process thread only: the glides of the mix (0) and the gain (1) under way (see `Glide`).
    let settingGlides: UnsafeMutablePointer<Glide>

    /// `mixRamp`, `gainRamp`: frames the next change of the mix or gain glides over (0: one cycle). `hold`: 0, or
    /// (1 << 32 | a clock): until a cycle starting at that clock, no new control, bypass, mix or gain value is taken
    /// (glides under way go on), so values written to several chains one after the other start in one cycle.
    enum Setting: Int, CaseIterable { case mix, gain, mixRamp, gainRamp, hold }
    /// The longest a hold may lie ahead of a cycle's clock before it counts as stale (the clock jumped: a server
    /// that came back starts its frames again) and is dropped.
    static let holdLimit = 1 << 17
    /// Frames of a slice while a control glides (see `StageState.slices`).
    static let glideBlock = 16
    enum Count: Int, CaseIterable {
        /// Cycles whose length was not the fixed block some plugin was promised (it was passed over, see
        /// `StageState.fixedFrames`).
        case blockMismatches
        case cycles
        /// MIDI events that did not fit a plugin's atom input or the chain's MIDI output, and were left out.
        case midiDropped
        /// MIDI events given to plugins' atom inputs.
        case midiDelivered
        /// Changes not put on `changes` because nobody had read the ones before (the ring was full).
        case changesDropped
    }

    /// Kinds of the messages on `changes` (`RTMessage.kind`); `a` is always the cycle's clock.
    enum Change: Int32 {
        /// b: stage << 32 | control index, c: the value's Float bits.
        case control = 1
        /// b: stage, c: 1 bypassed, 0 running.
        case bypass = 2
        /// c: the Float bits of the wanted mix, or of the wanted linear gain.
        case mix = 3
        case gain = 4
        /// The chain's first cycle (a chain swapped in: an LV2 preset loaded, a rebuilt chain).
        case started = 5
        /// c: the frames the change noted next (always the next message) glides or crossfades over.
        case ramp = 6
    }
    /// How many changes `changes` holds before the process thread drops and counts them.
    static let changeCapacity = 1024
}

/// One plugin of the chain: one instance, or one per group of channels.
struct StageState: BitwiseCopyable {
    /// `pending`'s "nothing waits".
    static let noPending = Int.min
    let instances: UnsafeMutablePointer<InstanceState>
    let instanceCount: Int
    /// Main audio inputs, side inputs and audio outputs of each instance.
    let ins: Int
    let sides: Int
    let outs: Int
    /// Channels of the path before and after the stage.
    let widthIn: Int
    let widthOut: Int
    /// Target value of each input control port (Float bits), written by the control thread.
    let controls: AtomicCounterArray
    let controlCount: Int
    /// Output control ports of the first instance (Float bits), for the control thread to read.
    let outputs: AtomicCounterArray
    let outputCount: Int
    /// Index (among the output controls) of the port that reports latency, or -1.
    let latencyOutput: Int
    /// Index (among the input controls) of the lv2:enabled port, or -1. With one, bypass is the plugin's own.
    let enabledControl: Int
    /// Bypass wanted (0 or 1), written by the control thread.
    let bypass: AtomicCounter
    /// Process thread only: how dry the stage's output was at the end of the last cycle (0 wet ... 1 bypassed).
    let fade: UnsafeMutablePointer<Float>
    /// Frames the next change of each control (`controlCount` cells), then of the bypass, glides or crossfades
    /// over; 0: at once (a bypass: over one cycle). Written by the control thread before the value.
    let ramps: AtomicCounterArray
    /// Process thread only: per control, its glide under way, the value it waits to switch to under a crossfade
    /// (`noPending` for none), and how it moves (`ControlScale`).
    let glides: UnsafeMutablePointer<Glide>
    let pending: UnsafeMutablePointer<Int>
    let scales: UnsafeMutablePointer<UInt8>
    /// Process thread only: how the stage's crossfade moves (see `StageFade`).
    let crossfade: UnsafeMutablePointer<StageFade>
    /// The stage's input mapped to its output channels and delayed by its latency (only for a stage that reports
    /// latency and has no lv2:enabled port; otherwise `capacity` 0 and the dry signal is the input itself).
    let dry: DelayLines
    /// The block length the plugin was promised (buf-size:fixedBlockLength), or 0. A cycle of another length
    /// passes the stage over (dry) rather than break the promise; the chain is rebuilt for the new period.
    let fixedFrames: Int
    /// The chain's side input that feeds each instance's first side port (all instances share them).
    var firstSide: Int
    /// The MIDI channels the stage's MIDI inputs take (bit n: channel n + 1; all 16 unless the spec names one).
    let midiChannels: UInt32
    /// Whether some instance has an atom input that takes MIDI, or time:Position.
    let takesMIDI: Bool
    let takesTime: Bool
    /// Process thread only: whether the stage was bypassed last cycle (1), to send all-notes-off once on the way in.
    let midiBypassed: UnsafeMutablePointer<Int>
    /// What its cycles cost (process thread writes, control thread reads): `StageTiming.Cell` cells.
    let timing: AtomicCounterArray
    /// The cost a cycle of one frame may have before it counts as over budget (`StageTiming.budgetShare` of the
    /// frame's duration), in nanoseconds times 1024 (a cycle of n frames: n times this over 1024).
    let budgetPerFrame: Int
    /// Process thread only: each control cell as last applied (`controlCount` of them), then the bypass cell, for
    /// telling a change (a cycle that applies a new value says so on `ChainState.changes`).
    let seen: UnsafeMutablePointer<Int>
    /// A DSSI synth: its programs and the MIDI controllers it maps write its own input control ports, so after a
    /// cycle the first instance's values are taken back as the controls' targets (and noted as changes).
    var writesInputs: Bool = false
    /// Whether a cycle may run the plugin in slices of `ChainState.glideBlock` frames while a control glides (no
    /// atom or CV ports, no fixed block length): a gain then moves every few frames, not once a period.
    var slices: Bool = false
}

/// A value moving from `from` to `to` over `length` frames, `done` of them run. Process thread only.
struct Glide: BitwiseCopyable {
    var from: Float = 0
    var to: Float = 0
    var done = 0
    /// 0: no glide under way.
    var length = 0

    /// Advances by `frames` and returns the value at the end of them in `scale`; ends the glide at its target.
    /// Realtime: safe.
    @inline(__always)
    mutating func advance(_ frames: Int, scale: UInt8) -> Float {
        done += frames
        if done >= length {
            length = 0
            return to
        }
        let t = Float(done) / Float(length)
        if scale == ControlScale.logarithmic.rawValue && from > 0 && to > 0 {
            return from * expf(logf(to / from) * t)
        }
        return from + (to - from) * t
    }
}

/// How a control moves when it glides: in its own numbers (dB stay dB), logarithmically (frequencies: each step
/// the same ratio), or not at all (toggles, integers, enumerations: they switch under the stage's crossfade).
enum ControlScale: UInt8 {
    case linear = 0
    case logarithmic = 1
    case discrete = 2

    static func of(_ port: PluginPortInfo) -> ControlScale {
        if port.isToggle || port.isInteger || port.isEnumeration { return .discrete }
        let unit = (port.unit ?? "").lowercased(), symbol = (port.unitSymbol ?? "").lowercased()
        if port.isLogarithmic || ["hz", "khz", "mhz"].contains(unit) || ["hz", "khz", "mhz"].contains(symbol) {
            if let lo = port.minimum, let hi = port.maximum, lo > 0, hi > 0 { return .logarithmic }
        }
        return .linear
    }
}

/// How a stage's crossfade between its output (0) and its latency-aligned input (1) moves. Process thread only.
struct StageFade: BitwiseCopyable {
    /// Of the fade's range per frame; 0: the whole way in one cycle, linearly (a plain bypass).
    var step: Float = 0
    /// Equal power (sine and cosine) rather than linear gains: a ramped bypass and a switch's dip.
    var equalPower = false
    /// A switch of discrete controls under the fade: 0 none, 1 fading out to switch, 2 switch at the next cycle.
    var dip: Int8 = 0
}

/// What a plugin's cycles cost, for "which plugin spikes" (status, HTTP, OSC, metrics): cycles run, their mean and
/// largest cost, and how many went over `budgetShare` of the period.
public struct StageTiming: Codable, Sendable, Equatable {
    /// A cycle that takes more than this share of its period counts in `overBudget`.
    public static let budgetShare = 0.25

    public var cycles: Int
    public var meanMicros: Double
    public var maxMicros: Double
    /// Cycles that took more than `budgetShare` of the period.
    public var overBudget: Int
    /// The threshold of `overBudget` (a share of the period), not the plugin's own share: that is `meanShare`.
    public var budgetShare: Double
    /// The mean cost as a share of the period (0.1: a tenth of each cycle's time).
    public var meanShare: Double?

    enum Cell: Int, CaseIterable { case cycles, nanoseconds, maximum, over }

    public init(cycles: Int, meanMicros: Double, maxMicros: Double, overBudget: Int, budgetShare: Double = Self.budgetShare) {
        self.cycles = cycles
        self.meanMicros = meanMicros
        self.maxMicros = maxMicros
        self.overBudget = overBudget
        self.budgetShare = budgetShare
    }
}

/// One delay line per channel over a power-of-two ring, written every cycle. Process thread only (after building).
struct DelayLines: BitwiseCopyable {
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let channels: Int
    /// Frames per ring (a power of two), 0 for none.
    let capacity: Int
    /// Where the next frame is written (grows; masked on use).
    let position: UnsafeMutablePointer<Int>

    /// The longest delay a line can give for a block of `frames`.
    @inline(__always)
    func maxDelay(frames: Int) -> Int { max(0, capacity - frames) }
}

/// What an atom port carries, as far as the host feeds or reads it.
enum AtomFlag {
    /// atom:supports midi:MidiEvent.
    static let midi: UInt8 = 1
    /// atom:supports time:Position.
    static let time: UInt8 = 2
}

/// One plugin instance.
struct InstanceState: BitwiseCopyable {
    let handle: UnsafeMutableRawPointer?
    let connect: @convention(c) (UnsafeMutableRawPointer?, UInt32, UnsafeMutableRawPointer?) -> Void
    let run: @convention(c) (UnsafeMutableRawPointer?, UInt32) -> Void
    /// Port indices of the main audio inputs, the side inputs and the outputs (`ins`, `sides`, `outs` of the stage).
    let audioIn: UnsafeMutablePointer<UInt32>
    let sideIn: UnsafeMutablePointer<UInt32>
    let audioOut: UnsafeMutablePointer<UInt32>
    /// The path channel the first audio input and the first audio output work on.
    let firstChannel: Int
    let firstOutput: Int
    /// Storage the input control ports are connected to, in the stage's control order.
    let controlValues: UnsafeMutablePointer<Float>
    /// Storage the output control ports are connected to.
    let outputValues: UnsafeMutablePointer<Float>
    /// Atom sequence buffers (input ports first), reset every cycle.
    let atoms: UnsafeMutablePointer<UnsafeMutableRawPointer>
    /// Per atom port (same order): `AtomFlag` bits.
    let atomFlags: UnsafeMutablePointer<UInt8>
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
/// chain waiting to be taken (0: none, -1: "no chain"), 2 the chain a crossfading taker still runs this cycle (see
/// `acquireFading` in ChainHolder.swift; 0: none). Once the offer is taken (cell 1 back to 0) and no fade is under
/// way (cell 2 at 0), the process thread has let go of the chain it ran before: it reads cell 0 once per cycle,
/// after taking.
public struct ChainSlot: BitwiseCopyable, Sendable {
    let cells: AtomicCounterArray

    public static func allocate() -> ChainSlot { ChainSlot(cells: .allocate(count: 3)) }
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

    /// Whether the offered chain has been taken and the chain before it let go (no crossfade under way). Control
    /// thread. Cell 1 is read first: the taker marks a fade in cell 2 before it empties cell 1.
    var taken: Bool { cells.load(1) == 0 && cells.load(2) == 0 }

    /// Takes the offer on the process thread's behalf (when it is not running). Control thread.
    func takeOffer() { _ = acquire() }

    /// Whether the chain the taker runs this cycle takes time:Position: the one it holds, or, while an offer waits,
    /// true (the offered chain is not the taker's to read before it is taken: a newer offer may replace it and its
    /// owner free it). Call before `acquire`/`acquireFading` in the same cycle. Realtime: safe.
    @inline(__always)
    public func takesTime() -> Bool {
        if cells.load(1) != 0 { return true }
        guard let chain = UnsafeMutablePointer<ChainState>(bitPattern: cells.load(0)) else { return false }
        return chain.pointee.takesTime
    }
}
