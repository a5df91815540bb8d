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
        let taken = s.chain.acquireFading()
        let midi = s.midi.chain(transport: transport, frames: n)
        runPath(s, taken.chain, into: UnsafePointer(s.outputs.buffers), frames: n, midi: midi)
        if taken.swapped {
            // A chain swapped in at this cycle's start: the old path runs once more and fades out under the new one
            // over this cycle, so the switch neither gaps nor clicks. Then the old chain is let go. It hears this
            // cycle's MIDI too; what MIDI it writes is not sent (the new chain's is).
            var quiet = midi
            quiet.output = nil
            runPath(s, taken.previous, into: UnsafePointer(s.fade), frames: n, midi: quiet)
            s.chain.finishFade()
            let step = 1 / Float(max(1, n))
            for ch in 0..<s.outputs.channels {
                let out = s.outputs.buffers[ch], old = s.fade[ch]
                for i in 0..<n {
                    let g = Float(i + 1) * step
                    out[i] = old[i] + g * (out[i] - old[i])
                }
            }
            c.add(Counter.swaps.rawValue, 1)
        }
        c.add(Counter.cycles.rawValue, 1)
        s.cycleCost.record(nanoseconds: monotonicNanoseconds() - began)
    }

    /// One chain (nil: the pass-through) from the inputs into `target` (`outputs.channels` buffers). A chain with
    /// more side inputs than the rack has side ports leaves them silent rather than read past the ports. Realtime:
    /// safe.
    @inline(__always)
    static func runPath(_ s: RackState, _ chain: UnsafeMutablePointer<ChainState>?,
                        into target: UnsafePointer<UnsafeMutablePointer<Float>>, frames n: Int, midi: ChainMIDI) {
        let main = s.inputs.channels - s.sides
        if let chain {
            let fed = s.sides > 0 && chain.pointee.sideInputs <= s.sides
            ChainState.run(chain.pointee, inputs: s.inputs.buffers, outputs: target, frames: n,
                           sides: fed ? UnsafePointer(s.inputs.buffers + main) : nil, midi: midi)
            // Main outputs the chain does not write (a chain of CV modules only) are silent; the chain's CV outputs
            // go onto the rack's last output ports (silent where the chain has fewer).
            let mainOut = s.outputs.channels - s.sideOutputs
            let c = chain.pointee
            if c.outputChannels < mainOut {
                for ch in c.outputChannels..<mainOut { target[ch].update(repeating: 0, count: n) }
            }
            for k in 0..<s.sideOutputs {
                if k < c.sideOutputs {
                    target[mainOut + k].update(from: c.sideOutputBuffers[k], count: n)
                } else {
                    target[mainOut + k].update(repeating: 0, count: n)
                }
            }
        } else {
            // No chain (none given, or every plugin bypassed at build): the inputs pass through, extra outputs
            // are silent, no MIDI leaves.
            if let out = midi.output { AtomSequence.clear(out, sequenceURID: s.midi.sequenceURID) }
            for ch in 0..<s.outputs.channels {
                if ch < main {
                    target[ch].update(from: s.inputs.buffers[ch], count: n)
                } else {
                    target[ch].update(repeating: 0, count: n)
                }
            }
        }
    }
}
