import Realtime

/// The buffers a through path runs a chain between: a rack's ports live (`RackState`), a render's blocks offline.
/// Inputs are the main inputs, then one per side input; outputs the main outputs, then one per extra output (the
/// chain's CV outputs). `fade`: one buffer per output (`Period.maxFrames` frames), where the old chain runs once more
/// in the cycle of a swap. Built by its owner before it runs; the buffers it points at may change between cycles.
public struct ChainPath: BitwiseCopyable {
    public let inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    public let inputChannels: Int
    /// The last `sides` inputs are side inputs.
    public let sides: Int
    public let outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    public let outputChannels: Int
    /// The last `sideOutputs` outputs are extra outputs.
    public let sideOutputs: Int
    public let fade: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// URID of atom:Sequence (the pass-through clears the MIDI output with it).
    public let sequenceURID: UInt32

    public init(inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, inputChannels: Int, sides: Int,
                outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, outputChannels: Int, sideOutputs: Int,
                fade: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, sequenceURID: UInt32) {
        self.inputs = inputs
        self.inputChannels = inputChannels
        self.sides = sides
        self.outputs = outputs
        self.outputChannels = outputChannels
        self.sideOutputs = sideOutputs
        self.fade = fade
        self.sequenceURID = sequenceURID
    }
}

// A rack's real-time path, shared by the live rack and the offline render so both run the same code: take the
// chain (crossfading from the old one over the cycle of a swap), run it from the inputs to the outputs, put its CV
// outputs on the extra outputs. Never allocates, locks, logs, throws or waits.
extension ChainPath {
    /// One cycle of `frames` frames (at most `Period.maxFrames`) with the chain `slot` holds: from `inputs` to
    /// `outputs`. Returns whether a chain was swapped in at this cycle's start. `clock`: see `ChainState.run`.
    /// Realtime: safe.
    @inline(__always)
    @discardableResult
    public static func cycle(_ p: ChainPath, slot: ChainSlot, frames n: Int, midi: ChainMIDI, clock: Int) -> Bool {
        let taken = slot.acquireFading()
        run(p, taken.chain, into: UnsafePointer(p.outputs), frames: n, midi: midi, clock: clock)
        guard taken.swapped else { return false }
        // A chain swapped in at this cycle's start: the old path runs once more and fades out under the new one
        // over this cycle, so the switch neither gaps nor clicks. Then the old chain is let go. It hears this
        // cycle's MIDI too; what MIDI it writes is not sent (the new chain's is).
        var quiet = midi
        quiet.output = nil
        run(p, taken.previous, into: UnsafePointer(p.fade), frames: n, midi: quiet, clock: clock)
        slot.finishFade()
        let step = 1 / Float(max(1, n))
        for ch in 0..<p.outputChannels {
            let out = p.outputs[ch], old = p.fade[ch]
            for i in 0..<n {
                let g = Float(i + 1) * step
                out[i] = old[i] + g * (out[i] - old[i])
            }
        }
        return true
    }

    /// One chain (nil: the pass-through) from the inputs into `target` (`outputChannels` buffers). A chain with
    /// more side inputs than the path has leaves them silent rather than read past the inputs. Realtime: safe.
    @inline(__always)
    public static func run(_ p: ChainPath, _ chain: UnsafeMutablePointer<ChainState>?,
                           into target: UnsafePointer<UnsafeMutablePointer<Float>>, frames n: Int, midi: ChainMIDI,
                           clock: Int) {
        let main = p.inputChannels - p.sides
        if let chain {
            let fed = p.sides > 0 && chain.pointee.sideInputs <= p.sides
            ChainState.run(chain.pointee, inputs: p.inputs, outputs: target, frames: n,
                           sides: fed ? UnsafePointer(p.inputs + main) : nil, midi: midi, clock: clock)
            // Main outputs the chain does not write (a chain of CV modules only) are silent; the chain's CV outputs
            // go onto the last outputs (silent where the chain has fewer).
            let mainOut = p.outputChannels - p.sideOutputs
            let c = chain.pointee
            if c.outputChannels < mainOut {
                for ch in c.outputChannels..<mainOut { target[ch].update(repeating: 0, count: n) }
            }
            for k in 0..<p.sideOutputs {
                if k < c.sideOutputs {
                    target[mainOut + k].update(from: c.sideOutputBuffers[k], count: n)
                } else {
                    target[mainOut + k].update(repeating: 0, count: n)
                }
            }
        } else {
            // No chain (none given, or every plugin bypassed at build): the inputs pass through, extra outputs
            // are silent, no MIDI leaves.
            if let out = midi.output { AtomSequence.clear(out, sequenceURID: p.sequenceURID) }
            for ch in 0..<p.outputChannels {
                if ch < main {
                    target[ch].update(from: p.inputs[ch], count: n)
                } else {
                    target[ch].update(repeating: 0, count: n)
                }
            }
        }
    }
}
