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
        let frameTime = s.client.lastFrameTime
        s.midi.gather(frames, frameTime: frameTime)
        // The transport only for a chain that tells its plugins the time (a query copies JACK's whole position).
        let transport = s.chain.takesTime() ? s.client.transport() : TransportPosition()
        RackState.cycle(s, frames: Int(frames), frameTime: frameTime, transport: transport)
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
        let midi = s.midi.chain(transport: transport, frames: n)
        if ChainPath.cycle(s.path, slot: s.chain, frames: n, midi: midi, clock: Int(frameTime)) {
            c.add(Counter.swaps.rawValue, 1)
        }
        if let tap = s.loudness { tap.copy(s.outputs.buffers, frames: n) }
        c.add(Counter.cycles.rawValue, 1)
        s.cycleCost.record(nanoseconds: monotonicNanoseconds() - began)
    }
}
