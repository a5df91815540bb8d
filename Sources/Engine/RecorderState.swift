import Jack
import Plugins
import Realtime

/// Everything the recorder's process callback touches, in one value built before activation and reached only
/// through the callback's context pointer. Nothing else writes it while the client is active; the counters,
/// meters and rings inside are the only channels to other threads.
struct RecorderState: EngineState {
    /// Indices into `counters`.
    enum Counter: Int, CaseIterable {
        /// Frames the callback has seen since activation (captured plus dropped): the stream position.
        case streamFrames
        /// Frames dropped because the capture ring was full.
        case droppedFrames
        /// Process cycles run.
        case cycles
        /// Start of the drop not yet announced to the writer (stream position), and its length (0: none).
        case pendingDropStart, pendingDropFrames
        /// `(JACK frame time << 32) | (stream position & 0xFFFF_FFFF)` at the start of the latest cycle.
        case cycleStamp
        /// Frames summed into the meters since the meters were last read.
        case meterFrames
        /// JACK frame time the next cycle should have if the server runs every cycle for us (-1: none yet).
        case nextFrameTime
        /// Frames of cycles the server ran without calling us (a late client before us in the graph, an xrun):
        /// they never reached the recorder; the take goes on without a gap and its report notes where.
        case missedFrames
        /// The insert chain's latency the ring carries from the latest `GapNote.latency` on: the processed
        /// channels at ring position p are the chain's output for the input of p - latency, and the dry channels
        /// are delayed by as much (see `GapNote.latency`).
        case latency
        /// Frames of cycles that repeated the cycle before them: a callback woken late read a source's buffer after
        /// the source had already written its next period into it (the period before was lost, the next one is
        /// recorded twice). The frame time then steps back; see `RecorderState.repeatsLastCycle`.
        case repeatedFrames
    }

    /// The JACK client (for the frame time the glue in `process` hands the cycle); `.none` without a server.
    let client: JackClientHandle
    /// The input ports and this cycle's input buffers (filled by `process` at the top of each cycle).
    let inputs: EnginePorts
    let channels: Int
    /// Channels going into the ring: `channels`, or twice that when the dry input is recorded too.
    let recordedChannels: Int
    /// The insert chain's output (`channels` buffers of `Period.maxFrames` frames).
    let wet: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// What goes into the ring this cycle, per recorded channel (chain output or port buffer, then dry).
    let recorded: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The insert chain the callback runs (or none); owned by the recorder's `ChainHolder`.
    let chain: ChainSlot
    /// Capture ring; the callback owns its writer half, the disk writer its reader half.
    let ring: FrameRing
    /// Gaps, announced to the writer before any frame that follows them, as `GapNote`s (an overrun: the ring was full;
    /// skipped cycles: take no room in the stream).
    let drops: GapNoteRing
    let counters: AtomicCounterArray
    /// Per-channel peak since last read, as the bit pattern of a non-negative Float (ordering preserved).
    let peaks: AtomicCounterArray
    /// Per-channel sum of squares since last read, in units of 2^-32.
    let sumSquares: AtomicCounterArray
    /// Posted when the ring holds at least `wakeFrames`, or after a drop.
    let wakeup: Wakeup
    /// Cost of each process cycle (work inside the callback), in nanoseconds.
    let cycleCost: CycleHistogram
    let wakeFrames: Int
    /// With the dry input recorded: per channel, the last `dryHistoryFrames` input frames (a power of two), indexed
    /// by stream position, from which the dry channels are read `latency` frames late so that they line up with
    /// the chain's output. Allocated and zeroed before activation; `dryHistoryFrames` is 0 without dry channels.
    let dryHistory: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let dryHistoryFrames: Int
    /// The delayed dry input of this cycle, per channel (`Period.maxFrames` frames each).
    let dryDelayed: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The most latency compensated (frames); a chain reporting more is compensated by this much.
    let latencyLimit: Int
    /// MIDI input ports and the ring of their events (see `RecorderMIDI`).
    let midi: RecorderMIDI
    /// The first `probeFrames` input frames of the last cycle, per channel (`channels * probeFrames`): a cycle whose
    /// frame time steps back and whose input starts with the same samples repeats the cycle before it.
    let probe: UnsafeMutablePointer<Float>
    static let probeFrames = 16

    /// The latency a recorder compensates at most, at this rate: a little over a second.
    static func latencyLimit(sampleRate: Int) -> Int { historyFrames(sampleRate: sampleRate) - Period.maxFrames }

    /// The dry history's length: the power of two that holds a second and the longest period.
    static func historyFrames(sampleRate: Int) -> Int {
        var n = 1
        while n < max(1, sampleRate) + Period.maxFrames { n <<= 1 }
        return n
    }
    static let sumSquaresScale = 4_294_967_296.0

    /// The ring fill (frames) at which the callback wakes the writer: about 50 ms of audio, at least a period.
    static func wakeFrames(sampleRate: Int, period: Int) -> Int { max(period, sampleRate / 20) }

    /// Builds the state for `channels` input channels. `ports` are the client's input ports (one per channel), or
    /// none for state driven without a server (tests fill `buffers` and call `cycle`). Throws when the capture ring's
    /// memory cannot be had. Control thread.
    static func allocate(client: JackClientHandle, ports: [JackPort], channels: Int, recordDry: Bool, chain: ChainSlot,
                         ringFrames: Int, wakeFrames: Int, sampleRate: Int, midiPorts: [JackPort] = [],
                         midiCapacity: Int? = nil)
        throws(EngineError) -> UnsafeMutablePointer<RecorderState> {
        let recordedChannels = recordDry ? 2 * channels : channels
        let ring: FrameRing
        do { ring = try FrameRing.allocate(channels: recordedChannels, capacity: ringFrames) } catch {
            throw EngineError(.memory,
                              "the capture ring (\(ringFrames) frames of \(recordedChannels) channels): \(error)")
        }
        let wet = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        for c in 0..<channels {
            let b = UnsafeMutablePointer<Float>.allocate(capacity: Period.maxFrames)
            b.initialize(repeating: 0, count: Period.maxFrames)
            (wet + c).initialize(to: b)
        }
        let recorded = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: recordedChannels)
        let inputs = EnginePorts.allocate(ports: ports, channels: channels)
        recorded.initialize(repeating: inputs.scratch, count: recordedChannels)
        let historyFrames = recordDry ? historyFrames(sampleRate: sampleRate) : 0
        let dryHistory = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, channels))
        let dryDelayed = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, channels))
        for c in 0..<channels {
            let h = UnsafeMutablePointer<Float>.allocate(capacity: max(1, historyFrames))
            h.initialize(repeating: 0, count: max(1, historyFrames))     // zeroed: every page touched before activation
            (dryHistory + c).initialize(to: h)
            let d = UnsafeMutablePointer<Float>.allocate(capacity: recordDry ? Period.maxFrames : 1)
            d.initialize(repeating: 0, count: recordDry ? Period.maxFrames : 1)
            (dryDelayed + c).initialize(to: d)
        }
        let probe = UnsafeMutablePointer<Float>.allocate(capacity: max(1, channels) * probeFrames)
        probe.initialize(repeating: 0, count: max(1, channels) * probeFrames)
        let state = UnsafeMutablePointer<RecorderState>.allocate(capacity: 1)
        state.initialize(to: RecorderState(
            client: client, inputs: inputs, channels: channels, recordedChannels: recordedChannels,
            wet: wet, recorded: recorded, chain: chain,
            ring: ring,
            drops: .allocate(capacity: GapNoteRing.capacity),
            counters: .allocate(count: Counter.allCases.count),
            peaks: .allocate(count: channels), sumSquares: .allocate(count: channels),
            wakeup: .allocate(), cycleCost: .allocate(), wakeFrames: wakeFrames,
            dryHistory: dryHistory, dryHistoryFrames: historyFrames, dryDelayed: dryDelayed,
            latencyLimit: latencyLimit(sampleRate: sampleRate), midi: .allocate(ports: midiPorts, capacity: midiCapacity), probe: probe))
        return state
    }

    /// Frees everything. Control thread, after the client is closed and the writer has stopped.
    static func free(_ state: UnsafeMutablePointer<RecorderState>) {
        let s = state.pointee
        s.ring.deallocate()
        s.drops.deallocate()
        s.counters.deallocate()
        s.peaks.deallocate()
        s.sumSquares.deallocate()
        s.wakeup.deallocate()
        s.cycleCost.deallocate()
        s.inputs.deallocate()
        for c in 0..<s.channels { s.wet[c].deallocate() }
        s.wet.deallocate()
        s.recorded.deallocate()
        for c in 0..<s.channels {
            s.dryHistory[c].deallocate()
            s.dryDelayed[c].deallocate()
        }
        s.dryHistory.deallocate()
        s.dryDelayed.deallocate()
        s.midi.deallocate()
        s.probe.deallocate()
        state.deallocate()
    }

    /// Undoes what the warm-up call did. Control thread, before activation.
    func resetAfterWarmUp() {
        cycleCost.reset()
        ring.reset()
        drops.reset()
        midi.reset()
        for i in 0..<counters.count { counters.store(i, 0) }
        counters.store(Counter.nextFrameTime.rawValue, -1)
        probe.update(repeating: 0, count: max(1, channels) * Self.probeFrames)
        for c in 0..<channels {
            peaks.store(c, 0)
            sumSquares.store(c, 0)
            if dryHistoryFrames > 0 { dryHistory[c].update(repeating: 0, count: dryHistoryFrames) }
        }
    }

    func counter(_ c: Counter) -> Int { counters.load(c.rawValue) }
    var cyclesRun: Int { counter(.cycles) }
    var missedFrames: Int { counter(.missedFrames) }
    var repeatedFrames: Int { counter(.repeatedFrames) }
}

/// What the process callback tells the disk writer about the stream between its frames, carried through the
/// `drops` message ring as an `RTMessage` (kind, a, b). Decoding an unknown kind gives nil (it is skipped, never
/// taken for a drop).
///
/// Threads: built on the process thread (Realtime: safe, a plain value), decoded on the disk-writer thread.
enum GapNote: Equatable {
    /// The ring was full: `frames` frames from stream position `at` were dropped (the writer keeps the timeline
    /// with silence there).
    case overrun(at: Int, frames: Int)
    /// The server skipped cycles: time jumped by `frames` at stream position `at`, recorded without a gap
    /// (negative: a correction of the jump before, read one cycle early; see `SkippedCycles`).
    case skippedCycles(at: Int, frames: Int)
    /// The chain's latency changed: from stream position `at` on, the ring carries compensation `frames`. Sent by
    /// the callback only when no gap is pending (so notes stay in stream order); when it cannot be sent the old
    /// value stays in force, so the writer always knows exactly which latency each ring frame carries.
    case latency(at: Int, frames: Int)
    /// The cycle at stream position `at` repeated the `frames` before it (see `Counter.repeatedFrames`); the
    /// skipped-cycle jump before it stands (a period was lost).
    case repeatedCycle(at: Int, frames: Int)

    static let overrunKind: Int32 = 1
    static let skippedCyclesKind: Int32 = 3
    static let latencyKind: Int32 = 4
    static let repeatedCycleKind: Int32 = 5

    /// The ring message. Realtime: safe.
    @inline(__always)
    var message: RTMessage {
        switch self {
        case .overrun(let at, let frames): return RTMessage(kind: Self.overrunKind, a: Int64(at), b: Int64(frames))
        case .skippedCycles(let at, let frames): return RTMessage(kind: Self.skippedCyclesKind, a: Int64(at), b: Int64(frames))
        case .latency(let at, let frames): return RTMessage(kind: Self.latencyKind, a: Int64(at), b: Int64(frames))
        case .repeatedCycle(let at, let frames):
            return RTMessage(kind: Self.repeatedCycleKind, a: Int64(at), b: Int64(frames))
        }
    }

    init?(_ m: RTMessage) {
        switch m.kind {
        case Self.overrunKind: self = .overrun(at: Int(m.a), frames: Int(m.b))
        case Self.skippedCyclesKind: self = .skippedCycles(at: Int(m.a), frames: Int(m.b))
        case Self.latencyKind: self = .latency(at: Int(m.a), frames: Int(m.b))
        case Self.repeatedCycleKind: self = .repeatedCycle(at: Int(m.a), frames: Int(m.b))
        default: return nil
        }
    }

    /// The stream position the note belongs to.
    var at: Int {
        switch self {
        case .overrun(let at, _), .skippedCycles(let at, _), .latency(let at, _), .repeatedCycle(let at, _): return at
        }
    }
}

/// The ring of `GapNote`s from the process callback to the disk writer: typed on both ends, so neither side reads a
/// kind or a field by number.
///
/// Threads: the process thread pushes (Realtime: safe); the disk writer peeks and pops. `allocate`, `reset` and
/// `deallocate` are control-thread only, while neither side runs.
struct GapNoteRing: BitwiseCopyable {
    /// Notes the ring holds: a full ring means the writer is far behind; the callback then keeps the note pending.
    static let capacity = 1024
    let messages: MessageRing

    static func allocate(capacity: Int) -> GapNoteRing { GapNoteRing(messages: .allocate(capacity: capacity)) }
    func deallocate() { messages.deallocate() }
    func reset() { messages.reset() }

    /// Queues a note; false when the ring is full. Realtime: safe.
    @inline(__always)
    func push(_ note: GapNote) -> Bool { messages.push(note.message) }

    /// What the writer finds at the head of the ring.
    enum Head: Equatable {
        case empty
        case note(GapNote)
        /// A message of a kind this writer does not know: skipped, never taken for a drop.
        case unknown
    }

    /// The oldest note, without taking it. Disk writer.
    func peek() -> Head {
        guard let m = messages.peek() else { return .empty }
        return GapNote(m).map { .note($0) } ?? .unknown
    }

    /// Takes the oldest note. Disk writer.
    func pop() { _ = messages.pop() }

    /// Notes waiting. Any thread.
    var count: Int { messages.count }
}
