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
    }

    /// The JACK client (for the frame time the glue in `process` hands the cycle); `.none` without a server.
    let client: JackClientHandle
    /// The main inputs, then the side inputs (`sides` of them, the last ones).
    let inputs: EnginePorts
    let sides: Int
    let outputs: EnginePorts
    /// The chain the callback runs from the inputs to the outputs (none: the inputs are passed through).
    let chain: ChainSlot
    let counters: AtomicCounterArray
    let cycleCost: CycleHistogram
    /// The MIDI ports and the chain's MIDI sequences (see `RackMIDI`).
    let midi: RackMIDI

    /// `inputs` (main, then side) and `outputs`: the client's ports, or none for state driven without a server;
    /// `channels`: main inputs, side inputs, outputs. Control thread.
    static func allocate(client: JackClientHandle, inputs: [JackPort], outputs: [JackPort], channels: (Int, Int, Int),
                         chain: ChainSlot, midi: RackMIDI) -> UnsafeMutablePointer<RackState> {
        let state = UnsafeMutablePointer<RackState>.allocate(capacity: 1)
        state.initialize(to: RackState(
            client: client, inputs: EnginePorts.allocate(ports: inputs, channels: channels.0 + channels.1),
            sides: channels.1, outputs: EnginePorts.allocate(ports: outputs, channels: channels.2), chain: chain,
            counters: .allocate(count: Counter.allCases.count), cycleCost: .allocate(), midi: midi))
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
        state.deallocate()
    }

    /// Control thread, before activation.
    func resetAfterWarmUp() {
        cycleCost.reset()
        for i in 0..<counters.count { counters.store(i, 0) }
        counters.store(Counter.nextFrameTime.rawValue, -1)
        midi.clear()
        midi.resetCounters()
    }

    func counter(_ c: Counter) -> Int { counters.load(c.rawValue) }
    var cyclesRun: Int { counter(.cycles) }
    var missedFrames: Int { counter(.missedFrames) }
}
