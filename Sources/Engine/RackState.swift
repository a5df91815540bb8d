import Jack
import Plugins
import Realtime

/// Everything a rack's process callback touches, in one value built before activation and reached only through the
/// callback's context pointer.
struct RackState: EngineState {
    enum Counter: Int, CaseIterable {
        case cycles
        /// JACK frame time the next cycle should have if the server runs every cycle for us (-1: none yet).
        case nextFrameTime
        /// Frames of cycles the server ran without calling us (see `SkippedCycles`).
        case missedFrames
        /// Chains swapped in while running (each crossfaded over its cycle).
        case swaps
    }

    /// The JACK client (for the frame time the glue in `process` hands the cycle); `.none` without a server.
    let client: JackClientHandle
    /// The main inputs, then the side inputs (`sides` of them, the last ones).
    let inputs: EnginePorts
    let sides: Int
    /// The main outputs, then the chain's extra outputs (its plugins' CV outputs: `sideOutputs` of them, the last).
    let outputs: EnginePorts
    let sideOutputs: Int
    /// The chain the callback runs from the inputs to the outputs (none: the inputs are passed through).
    let chain: ChainSlot
    let counters: AtomicCounterArray
    let cycleCost: CycleHistogram
    /// The MIDI ports and the chain's MIDI sequences (see `RackMIDI`).
    let midi: RackMIDI
    /// One buffer per output (`Period.maxFrames` frames, pre-faulted): the old chain's output in the cycle of a
    /// swap, faded out under the new one's.
    let fade: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The outputs' loudness tap (nil: not measured): each cycle's output frames.
    let loudness: LoudnessFeed?

    /// `inputs` (main, then side) and `outputs` (main, then side): the client's ports, or none for state driven
    /// without a server; `channels`: main inputs, side inputs, main outputs, side outputs. Control thread.
    static func allocate(client: JackClientHandle, inputs: [JackPort], outputs: [JackPort],
                         channels: (Int, Int, Int, Int), chain: ChainSlot, midi: RackMIDI,
                         loudness: LoudnessFeed? = nil) -> UnsafeMutablePointer<RackState> {
        let state = UnsafeMutablePointer<RackState>.allocate(capacity: 1)
        let outs = channels.2 + channels.3
        state.initialize(to: RackState(
            client: client, inputs: EnginePorts.allocate(ports: inputs, channels: channels.0 + channels.1),
            sides: channels.1, outputs: EnginePorts.allocate(ports: outputs, channels: outs), sideOutputs: channels.3,
            chain: chain, counters: .allocate(count: Counter.allCases.count), cycleCost: .allocate(), midi: midi,
            fade: allocateBuffers(outs), loudness: loudness))
        state.pointee.resetAfterWarmUp()
        return state
    }

    static func free(_ state: UnsafeMutablePointer<RackState>) {
        let s = state.pointee
        s.inputs.deallocate()
        s.outputs.deallocate()
        s.counters.deallocate()
        s.cycleCost.deallocate()
        s.midi.deallocate()
        for ch in 0..<s.outputs.channels { s.fade[ch].deallocate() }
        s.fade.deallocate()
        state.deallocate()
    }

    /// `count` silent buffers of `Period.maxFrames` frames, written once so no page fault waits on the process thread.
    static func allocateBuffers(_ count: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<Float>> {
        let list = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, count))
        for ch in 0..<count {
            list[ch] = .allocate(capacity: Period.maxFrames)
            list[ch].initialize(repeating: 0, count: Period.maxFrames)
        }
        return list
    }

    /// Control thread, before activation.
    func resetAfterWarmUp() {
        cycleCost.reset()
        for i in 0..<counters.count { counters.store(i, 0) }
        counters.store(Counter.nextFrameTime.rawValue, -1)
        midi.clear()
        midi.resetCounters()
    }

    /// The chain's path over this state's buffers (`ChainPath` runs a rack's chain, live and offline alike).
    /// Realtime: safe.
    @inline(__always)
    var path: ChainPath {
        ChainPath(inputs: inputs.buffers, inputChannels: inputs.channels, sides: sides, outputs: outputs.buffers,
                  outputChannels: outputs.channels, sideOutputs: sideOutputs, fade: fade,
                  sequenceURID: midi.sequenceURID)
    }

    func counter(_ c: Counter) -> Int { counters.load(c.rawValue) }
    var cyclesRun: Int { counter(.cycles) }
    var missedFrames: Int { counter(.missedFrames) }
}
