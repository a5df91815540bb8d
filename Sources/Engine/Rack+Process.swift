import Jack
import Plugins
import Realtime

// The rack's real-time path: its inputs through the chain to its outputs, in the same cycle. Runs on JACK's process
// thread; never allocates, locks, logs, throws or waits.

extension RackState {
    /// The JACK process callback: the only part that reads libjack (port buffers, frame time), then the cycle.
    /// Realtime: safe.
    static let process: JackProcessCallback = { frames, arg in
        let s = arg!.assumingMemoryBound(to: RackState.self).pointee
        s.inputs.fetch(frames)
        s.outputs.fetch(frames)
        s.midi.gather(frames)
        RackState.cycle(s, frames: Int(frames), frameTime: s.client.lastFrameTime, transport: s.client.transport())
        s.midi.scatter(frames)
        return 0
    }

    /// One cycle from `inputs.buffers` to `outputs.buffers` (`frames` frames, at most `Period.maxFrames`) that began
    /// at JACK frame time `frameTime`. Touches nothing of libjack, so tests drive it cycle by cycle. Realtime: safe.
    @inline(__always)
    static func cycle(_ s: RackState, frames n: Int, frameTime: UInt32,
                      transport: TransportPosition = TransportPosition()) {
        let began = monotonicNanoseconds()
        let c = s.counters
        let jump = SkippedCycles.frames(frameTime: frameTime, expected: c.load(Counter.nextFrameTime.rawValue))
        if jump != 0 { c.add(Counter.missedFrames.rawValue, jump) }
        c.store(Counter.nextFrameTime.rawValue, Int(frameTime &+ UInt32(truncatingIfNeeded: n)))
        let main = s.inputs.channels - s.sides
        if let chain = s.chain.acquire() {
            ChainState.run(chain.pointee, inputs: s.inputs.buffers, outputs: s.outputs.buffers, frames: n,
                           sides: s.sides > 0 ? UnsafePointer(s.inputs.buffers + main) : nil, midi: s.midi.chain(transport: transport, frames: n))
        } else {
            // No chain (none given, or every plugin bypassed at build): the inputs pass through, extra outputs
            // are silent, no MIDI leaves.
            AtomSequence.clear(s.midi.output, sequenceURID: s.midi.sequenceURID)
            for ch in 0..<s.outputs.channels {
                if ch < main {
                    s.outputs.buffers[ch].update(from: s.inputs.buffers[ch], count: n)
                } else {
                    s.outputs.buffers[ch].update(repeating: 0, count: n)
                }
            }
        }
        c.add(Counter.cycles.rawValue, 1)
        s.cycleCost.record(nanoseconds: monotonicNanoseconds() - began)
    }
}
