import Jack
import Plugins
import Realtime

/// Everything the player's process callback touches, in one value built before activation and reached only
/// through the callback's context pointer.
struct PlayerState: EngineState {
    /// The player's transport, as the `transport` counter holds it.
    enum Transport: Int {
        /// Silence, nothing consumed.
        case stopped = 0
        case playing = 1
        /// Fading out over one period, then silence; the play head stays.
        case paused = 2
    }

    enum Counter: Int, CaseIterable {
        /// A `Transport` raw value. Written by the control side.
        case transport
        /// JACK frame time at which to start playing (sample-accurately), or -1 for "at once". Control sets it,
        /// the callback clears it (compare-and-swap) once reached.
        case startAt
        /// Ring position up to which frames are stale (after a seek or a new queue) and are discarded. Written by
        /// the disk reader (the ring's producer) before it writes fresh frames.
        case skipTo
        /// Ring position after which no more frames will come (queue finished), or Int.max. Written by the reader.
        case drainedAt
        /// Target gain, as the bit pattern of a Float. Written by the control side.
        case gainTarget
        /// Gain the last cycle ended on, as Float bits. Callback only.
        case gainNow
        /// Frames delivered from the ring to the ports.
        case playedFrames
        /// Frames of silence output because the ring ran short while playing (underruns), and such cycles.
        case underrunFrames, underrunCycles
        /// JACK frame time the next cycle should have if the server runs every cycle for us (-1: none yet).
        case nextFrameTime
        /// Frames of cycles the server ran without calling us (see `SkippedCycles`), playing or not.
        case missedFrames
        case cycles
        /// JACK frame time of the latest cycle, and the ring position at its start.
        case cycleFrameTime, cycleRingPosition
        /// JACK frame time at which the first ring frame of the current run was played (-1 before).
        case startedAtFrameTime
        /// Ring position the reader had written up to when the callback last woke it. Callback only.
        case wokeReaderAt
        /// `drainedAt` of the queue whose end the callback last announced through `notify`. Callback only.
        case announcedDrain
        /// Frames the next change of `gainTarget` glides over in equal steps of dB (0: one cycle). Written by the
        /// control side before the target.
        case gainRamp
        /// The glide under way: the target it was taken for, its start gain (Float bits), frames done and its
        /// length (0: none). Callback only.
        case gainSeen, gainFrom, gainDone, gainLength
        /// Ring position of the next cue point the control loop waits on (`Player.drainCues`), or Int.max: once
        /// the read position passes it the callback posts `cueWakeup` and sets it to Int.max (compare-and-swap).
        /// Written by the control side.
        case cueAt
    }

    /// The JACK client (for the frame time the glue in `process` hands the cycle); `.none` without a server.
    let client: JackClientHandle
    /// The output ports and this cycle's port buffers (set by `process` before the cycle).
    let outputs: EnginePorts
    let channels: Int
    /// Where this cycle's audio is written: the port buffers, or the chain's input when a chain runs.
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The insert chain's input (`channels` buffers of `Period.maxFrames` frames).
    let chainIn: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The insert chain the callback runs (or none); owned by the player's `ChainHolder`.
    let chain: ChainSlot
    /// `buffers` shifted by a start offset inside a cycle.
    let shifted: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Playback ring: the disk reader owns the writer half, the callback the reader half.
    let ring: FrameRing
    let counters: AtomicCounterArray
    /// Posted when the ring has room for another chunk (once per refill, not every cycle).
    let wakeup: Wakeup
    /// Posted for the control loop when the end of the queue has been played (nil: nobody waits for it).
    let notify: Wakeup?
    /// Posted for the control loop when the play head passes `cueAt` (nil: nobody waits for cues).
    let cueWakeup: Wakeup?
    /// Cost of each process cycle (work inside the callback), in nanoseconds.
    let cycleCost: CycleHistogram
    let wakeSpace: Int
    /// MIDI output ports and the events queued for them (see `PlayerMIDI`).
    /// The outputs' loudness tap (nil: not measured): each cycle's output frames, after the chain.
    let loudness: LoudnessFeed?
    let midi: PlayerMIDI

    /// Builds the state for `channels` output channels. `ports` are the client's output ports (one per channel), or
    /// none for state driven without a server (tests call `cycle` and read `outputs.buffers`). Throws when the
    /// playback ring's memory cannot be had. Control thread.
    static func allocate(client: JackClientHandle, ports: [JackPort], channels: Int, chain: ChainSlot, ringFrames: Int,
                         wakeSpace: Int, notify: Wakeup?, midiPorts: [JackPort] = [], loudness: LoudnessFeed? = nil,
                         cueWakeup: Wakeup? = nil)
        throws(EngineError) -> UnsafeMutablePointer<PlayerState> {
        let ring: FrameRing
        do { ring = try FrameRing.allocate(channels: channels, capacity: ringFrames) } catch {
            throw EngineError(.memory, "the playback ring (\(ringFrames) frames of \(channels) channels): \(error)")
        }
        let chainIn = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        for c in 0..<channels {
            let b = UnsafeMutablePointer<Float>.allocate(capacity: Period.maxFrames)
            b.initialize(repeating: 0, count: Period.maxFrames)
            (chainIn + c).initialize(to: b)
        }
        let outputs = EnginePorts.allocate(ports: ports, channels: channels)
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        let shifted = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        for c in 0..<channels {
            (buffers + c).initialize(to: outputs.scratchBuffer(c))
            (shifted + c).initialize(to: outputs.scratchBuffer(c))
        }
        let state = UnsafeMutablePointer<PlayerState>.allocate(capacity: 1)
        state.initialize(to: PlayerState(
            client: client, outputs: outputs, channels: channels, buffers: buffers, chainIn: chainIn,
            chain: chain, shifted: shifted,
            ring: ring,
            counters: .allocate(count: Counter.allCases.count), wakeup: .allocate(), notify: notify,
            cueWakeup: cueWakeup, cycleCost: .allocate(),
            wakeSpace: wakeSpace, loudness: loudness, midi: .allocate(ports: midiPorts)))
        state.pointee.resetAfterWarmUp()
        return state
    }

    static func free(_ state: UnsafeMutablePointer<PlayerState>) {
        let s = state.pointee
        s.ring.deallocate()
        s.counters.deallocate()
        s.wakeup.deallocate()
        s.cycleCost.deallocate()
        s.outputs.deallocate()
        s.buffers.deallocate()
        for c in 0..<s.channels { s.chainIn[c].deallocate() }
        s.chainIn.deallocate()
        s.shifted.deallocate()
        s.midi.deallocate()
        state.deallocate()
    }

    /// Control thread, before activation.
    func resetAfterWarmUp() {
        cycleCost.reset()
        ring.reset()
        midi.reset()
        for i in 0..<counters.count { counters.store(i, 0) }
        counters.store(Counter.startAt.rawValue, PlayerState.unset)
        counters.store(Counter.nextFrameTime.rawValue, PlayerState.unset)
        counters.store(Counter.drainedAt.rawValue, PlayerState.notDrained)
        counters.store(Counter.cueAt.rawValue, Int.max)
        counters.store(Counter.startedAtFrameTime.rawValue, PlayerState.unset)
        counters.store(Counter.wokeReaderAt.rawValue, PlayerState.unset)
        counters.store(Counter.announcedDrain.rawValue, PlayerState.unset)
        counters.store(Counter.gainTarget.rawValue, Int(Float(1).bitPattern))
        counters.store(Counter.gainNow.rawValue, Int(Float(1).bitPattern))
    }

    func counter(_ c: Counter) -> Int { counters.load(c.rawValue) }
    func set(_ c: Counter, _ v: Int) { counters.store(c.rawValue, v) }
    var cyclesRun: Int { counter(.cycles) }
    var missedFrames: Int { counter(.missedFrames) }

    /// A counter holding a JACK frame time (or a ring position) that is not set: `startAt` (play at once),
    /// `nextFrameTime` (no cycle yet), `startedAtFrameTime` (nothing played yet), `wokeReaderAt`, `announcedDrain`.
    static var unset: Int { -1 }    // computed, not a global: the RT side reads it
    /// `drainedAt` while the queue has not been read to its end.
    static var notDrained: Int { Int.max }

    /// The least free ring space (frames) at which the callback wakes the reader: two of its chunks' worth and more
    /// (a period longer than this raises it to the period).
    static let minimumWakeSpace = 8192
}
