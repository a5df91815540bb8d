import LV2Host
import Realtime

// The chain's real-time path: control values in, ports connected, run, worker responses delivered, output controls
// out. Runs on a JACK process thread; Tandem's side never allocates, locks, logs, throws or waits (what a plugin's
// own run() does is the plugin's business, and the RT-safety test measures it too).

extension ChainState {
    /// Runs every stage over `frames` frames: `inputs` (one buffer per channel, read only) through the chain into
    /// `outputs`, which must not alias `inputs`. Realtime: safe.
    @inline(__always)
    public static func run(_ c: ChainState, inputs: UnsafePointer<UnsafeMutablePointer<Float>>,
                           outputs: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int) {
        var source = inputs
        for k in 0..<c.stageCount {
            let target = k == c.stageCount - 1 ? outputs : UnsafePointer(c.between + (k & 1) * c.channels)
            runStage(c.stages[k], inputs: source, outputs: target, frames: UInt32(frames))
            source = target
        }
    }

    /// Realtime: safe.
    @inline(__always)
    static func runStage(_ s: StageState, inputs: UnsafePointer<UnsafeMutablePointer<Float>>,
                         outputs: UnsafePointer<UnsafeMutablePointer<Float>>, frames: UInt32) {
        for i in 0..<s.instanceCount {
            let inst = s.instances[i]
            for k in 0..<s.controlCount {
                inst.controlValues[k] = Float(bitPattern: UInt32(truncatingIfNeeded: s.controls.load(k)))
            }
            for j in 0..<s.ins {
                inst.connect(inst.handle, inst.audioIn[j], UnsafeMutableRawPointer(inputs[inst.firstChannel + j]))
            }
            for j in 0..<s.outs {
                inst.connect(inst.handle, inst.audioOut[j], UnsafeMutableRawPointer(outputs[inst.firstChannel + j]))
            }
            resetAtoms(inst)
            inst.run(inst.handle, frames)
            if let w = inst.worker { lv2host_worker_deliver(w) }
            if i == 0 {
                for k in 0..<s.outputCount { s.outputs.store(k, Int(inst.outputValues[k].bitPattern)) }
            }
        }
    }

    /// Input sequences become empty, output sequences get their whole capacity back. Realtime: safe.
    @inline(__always)
    static func resetAtoms(_ inst: InstanceState) {
        for a in 0..<inst.atomCount {
            let header = inst.atoms[a].assumingMemoryBound(to: UInt32.self)
            if a < inst.atomInputs {
                header[0] = 8                       // atom.size: an empty sequence body (unit, pad)
                header[1] = inst.sequenceURID
                header[2] = 0
                header[3] = 0
            } else {
                header[0] = inst.atomCapacity - 8   // atom.size: everything after the atom header
                header[1] = inst.chunkURID
            }
        }
    }

    /// The chain's latency in frames as its plugins reported it in their last run (the sum over stages), limited to
    /// `limit`; 0 for a nonsense value. What the recorder delays the dry input by. Realtime: safe.
    @inline(__always)
    public static func latency(_ c: ChainState, limit: Int) -> Int {
        var total = 0
        for k in 0..<c.stageCount {
            let s = c.stages[k]
            guard s.latencyOutput >= 0, s.instanceCount > 0 else { continue }
            let v = s.instances[0].outputValues[s.latencyOutput]
            guard v.isFinite, v >= 0.5 else { continue }
            total += v >= Float(limit) ? limit : Int(v.rounded())
            if total >= limit { return limit }
        }
        return total
    }
}
