#if canImport(Glibc)
import Glibc   // expf, logf, sinf, cosf: the C library's math, nothing of Foundation on the process thread
#endif
import LV2Host
import Realtime

// The chain's real-time path: control values in, ports connected, run, worker responses delivered, output controls
// out, bypass crossfades, the dry/wet mix and the output gain. Runs on a JACK process thread; Tandem's side never
// allocates, locks, logs, throws or waits (what a plugin's own run() does is the plugin's business, and the
// RT-safety test measures it too).

extension ChainState {
    /// Runs every stage over `frames` frames: `inputs` (`inputChannels` buffers, read only) through the chain into
    /// `outputs` (`outputChannels` buffers), which must not alias `inputs`. `sides`: one buffer per side input
    /// (`sideInputs`), or nil to leave them all silent. `midi`: the cycle's MIDI for the plugins that take it, and
    /// where the MIDI they write goes (see `ChainMIDI`). `clock`: the cycle's place on the engine's clock (a JACK
    /// frame time; a render's frame), which every change this cycle applies is noted with (see `changes`).
    ///
    /// Floating point: the plugins run with flush-to-zero and denormals-are-zero set (see docs/notes/architecture-history.md,
    /// "Denormals"); the thread's own mode is restored before returning. Realtime: safe.
    @inline(__always)
    public static func run(_ c: ChainState, inputs: UnsafePointer<UnsafeMutablePointer<Float>>,
                           outputs: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int,
                           sides: UnsafePointer<UnsafeMutablePointer<Float>>? = nil, midi: ChainMIDI = .none,
                           clock: Int = 0) {
        let mode = lv2host_fp_enter()
        defer { lv2host_fp_leave(mode) }
        if c.counts.load(Count.cycles.rawValue) == 0 { note(c, .started, clock: clock) }
        if let out = midi.output { lv2host_seq_clear(out, c.sequenceURID) }
        let held = isHeld(c, clock: clock)
        var source = inputs
        for k in 0..<c.stageCount {
            let target = k == c.stageCount - 1 ? outputs : UnsafePointer(c.between + (k & 1) * c.width)
            runStage(c, c.stages[k], index: k, inputs: source, outputs: target, frames: frames, sides: sides,
                     midi: midi, clock: clock, held: held)
            source = target
        }
        mix(c, inputs: inputs, outputs: outputs, frames: frames, clock: clock, held: held)
        c.timeSent.pointee = 1
        _ = c.counts.add(Count.cycles.rawValue, 1)
    }

    /// Whether a hold (`Setting.hold`) keeps this cycle from taking new values; a hold reached (or stale: the clock
    /// jumped) is dropped. Realtime: safe.
    @inline(__always)
    static func isHeld(_ c: ChainState, clock: Int) -> Bool {
        let h = c.settings.load(Setting.hold.rawValue)
        guard h != 0 else { return false }
        let ahead = -Int(Int32(truncatingIfNeeded: clock &- (h & 0xFFFF_FFFF)))
        if ahead > 0 && ahead <= ChainState.holdLimit { return true }
        _ = c.settings.compareExchange(Setting.hold.rawValue, expected: h, desired: 0)
        return false
    }

    /// Realtime: safe.
    @inline(__always)
    static func runStage(_ c: ChainState, _ s: StageState, index: Int, inputs: UnsafePointer<UnsafeMutablePointer<Float>>,
                         outputs: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int,
                         sides: UnsafePointer<UnsafeMutablePointer<Float>>?, midi: ChainMIDI, clock: Int, held: Bool) {
        let runs = s.fixedFrames == 0 || s.fixedFrames == frames
        let bypassCell = held ? s.seen[s.controlCount] : s.bypass.load()
        let bypassed = bypassCell != 0
        let began = monotonicNanoseconds()
        defer { time(s, nanoseconds: monotonicNanoseconds() - began, frames: frames) }
        let entering = bypassed && s.midiBypassed.pointee == 0
        if runs { s.midiBypassed.pointee = bypassed ? 1 : 0 }
        if runs {
            // Each control is read once per cycle, for every instance alike, and a value that differs from the one
            // applied last is noted with this cycle's clock: what a take's control log says is exactly what ran.
            var sliced = false
            if s.instanceCount > 0 {
                // A plugin's own bypass (lv2:enabled) gets its port back from the control's value once the bypass
                // clears (the loops below write 0 there while bypassed).
                if s.enabledControl >= 0 && !bypassed {
                    s.instances[0].controlValues[s.enabledControl] =
                        Float(bitPattern: UInt32(truncatingIfNeeded: s.seen[s.enabledControl]))
                }
                let gliding = takeControls(c, s, index: index, frames: frames, clock: clock, held: held)
                sliced = gliding && s.slices && frames > ChainState.glideBlock
                if !sliced { advanceGlides(s, frames: gliding ? frames : 0) }
            }
            if bypassCell != s.seen[s.controlCount] {
                s.seen[s.controlCount] = bypassCell
                let ramp = s.ramps.load(s.controlCount)
                if ramp > 0 { note(c, .ramp, clock: clock, b: Int64(index), c: Int64(ramp)) }
                note(c, .bypass, clock: clock, b: Int64(index), c: bypassed ? 1 : 0)
                s.crossfade.pointee.step = ramp > 0 ? 1 / Float(ramp) : 0
                s.crossfade.pointee.equalPower = ramp > 0
            }
            if sliced {
                runSliced(c, s, inputs: inputs, outputs: outputs, frames: frames, sides: sides, bypassed: bypassed)
            }
            for i in 0..<s.instanceCount where !sliced {
                let inst = s.instances[i]
                if s.enabledControl >= 0 && bypassed { inst.controlValues[s.enabledControl] = 0 }
                for j in 0..<s.ins {
                    inst.connect(inst.handle, inst.audioIn[j], UnsafeMutableRawPointer(inputs[inst.firstChannel + j]))
                }
                for j in 0..<s.sides {
                    // A plain branch, no closure: nothing here may allocate on the process thread.
                    var buffer = c.silence
                    if let sides { buffer = sides[s.firstSide + j] }
                    inst.connect(inst.handle, inst.sideIn[j], UnsafeMutableRawPointer(buffer))
                }
                for j in 0..<s.outs {
                    inst.connect(inst.handle, inst.audioOut[j], UnsafeMutableRawPointer(outputs[inst.firstOutput + j]))
                }
                if s.ins == 0 && s.outs == 0 {
                    // A MIDI effect: the path goes past it unchanged.
                    for o in 0..<s.widthOut { outputs[o].update(from: inputs[o], count: frames) }
                }
                resetAtoms(inst)
                if s.takesMIDI || s.takesTime { feedMIDI(c, s, inst, midi: midi, bypassed: bypassed, entering: entering) }
                lv2host_run(inst.run, inst.handle, UInt32(frames))
                if let w = inst.worker { lv2host_worker_deliver(w) }
                collectMIDI(c, inst, midi: midi)
                if i == 0 {
                    for k in 0..<s.outputCount { s.outputs.store(k, Int(inst.outputValues[k].bitPattern)) }
                    if s.writesInputs { takeBackInputs(c, s, inst, index: index, clock: clock) }
                }
            }
            if sliced {
                for i in 0..<s.instanceCount {
                    if let w = s.instances[i].worker { lv2host_worker_deliver(w) }
                }
                let inst = s.instances[0]
                for k in 0..<s.outputCount { s.outputs.store(k, Int(inst.outputValues[k].bitPattern)) }
                if s.writesInputs { takeBackInputs(c, s, inst, index: index, clock: clock) }
            }
        } else {
            _ = c.counts.add(Count.blockMismatches.rawValue, 1)
        }
        // The host's bypass: a crossfade over this cycle between the plugin's output and its input (delayed by the
        // plugin's latency, so the switch does not move the signal in time). A plugin with lv2:enabled bypasses
        // itself; a passed-over plugin is dry at once (it wrote nothing).
        // A switch of discrete controls (`takeControls`) fades out the same way, switches, and fades back.
        let delay = s.dry.capacity > 0 ? min(stageLatency(s), s.dry.maxDelay(frames: frames)) : 0
        if s.dry.capacity > 0 { writeDry(s.dry, inputs: inputs, widthIn: s.widthIn, frames: frames) }
        let xf = s.crossfade
        let start = runs ? s.fade.pointee : 1
        let wanted: Float = !runs || (bypassed && s.enabledControl < 0) || xf.pointee.dip == 1 ? 1 : 0
        var end = wanted
        if runs && xf.pointee.step > 0 {
            let move = xf.pointee.step * Float(frames)
            end = wanted > start ? min(wanted, start + move) : max(wanted, start - move)
        }
        s.fade.pointee = end
        if xf.pointee.dip == 1 && end >= 1 { xf.pointee.dip = 2 }
        if start == 0 && end == 0 {
            xf.pointee.equalPower = false
            return
        }
        let equalPower = runs && xf.pointee.equalPower
        for o in 0..<s.widthOut {
            let out = outputs[o]
            for i in 0..<frames {
                let g = start + (end - start) * Float(i + 1) / Float(frames)
                let d = s.dry.capacity > 0 ? readDry(s.dry, channel: o, delay: delay, frames: frames, at: i)
                    : mapped(inputs, widthIn: s.widthIn, widthOut: s.widthOut, channel: o, at: i)
                if g >= 1 {
                    out[i] = d
                } else if equalPower {
                    let a = g * (Float.pi / 2)
                    out[i] = out[i] * cosf(a) + d * sinf(a)
                } else {
                    out[i] = out[i] * (1 - g) + d * g
                }
            }
        }
    }

    /// Takes the stage's control targets into its first instance's ports: a new target at once, or gliding over the
    /// frames its change asked for (`StageState.ramps`) in the control's scale, or (a discrete control with a ramp)
    /// switched under the stage's crossfade: out over half the ramp, the switch, back over the other half. Each new
    /// target is noted with this cycle's clock (and its ramp), so a take's control log says exactly what ran.
    /// `held`: no new target this cycle (glides and fades under way go on). Realtime: safe.
    /// Returns whether a control glides this cycle (`advanceGlides` moves it).
    @inline(__always)
    static func takeControls(_ c: ChainState, _ s: StageState, index: Int, frames: Int, clock: Int, held: Bool) -> Bool {
        var gliding = false
        let first = s.instances[0].controlValues
        let xf = s.crossfade
        let switching = xf.pointee.dip == 2
        if switching { xf.pointee.dip = 0 }
        for k in 0..<s.controlCount {
            if !held {
                let cell = s.controls.load(k)
                if cell != s.seen[k] {
                    s.seen[k] = cell
                    let ramp = s.ramps.load(k)
                    if ramp > 0 { note(c, .ramp, clock: clock, b: Int64(index) << 32 | Int64(k), c: Int64(ramp)) }
                    note(c, .control, clock: clock, b: Int64(index) << 32 | Int64(k), c: Int64(cell))
                    let target = Float(bitPattern: UInt32(truncatingIfNeeded: cell))
                    if ramp <= 0 || first[k] == target {
                        first[k] = target
                        s.glides[k].length = 0
                        s.pending[k] = StageState.noPending
                    } else if s.scales[k] == ControlScale.discrete.rawValue {
                        s.pending[k] = cell
                        if xf.pointee.dip == 0 {
                            xf.pointee.dip = 1
                            xf.pointee.step = 2 / Float(max(2, ramp))
                            xf.pointee.equalPower = true
                        }
                    } else {
                        s.glides[k] = Glide(from: first[k], to: target, done: 0, length: ramp)
                    }
                }
            }
            if switching && s.pending[k] != StageState.noPending {
                first[k] = Float(bitPattern: UInt32(truncatingIfNeeded: s.pending[k]))
                s.pending[k] = StageState.noPending
            }
            if s.glides[k].length > 0 { gliding = true }
        }
        // A switch that arrived after the fade went out waits for the next dip.
        if switching {
            for k in 0..<s.controlCount where s.pending[k] != StageState.noPending {
                xf.pointee.dip = 1
                break
            }
        }
        return gliding
    }

    /// Moves the stage's glides on by `frames` and gives every instance the first one's values. Realtime: safe.
    @inline(__always)
    static func advanceGlides(_ s: StageState, frames: Int) {
        let first = s.instances[0].controlValues
        if frames > 0 {
            for k in 0..<s.controlCount where s.glides[k].length > 0 {
                first[k] = s.glides[k].advance(frames, scale: s.scales[k])
            }
        }
        for i in 1..<max(1, s.instanceCount) {
            s.instances[i].controlValues.update(from: first, count: s.controlCount)
        }
    }

    /// Runs a gliding stage in slices of `ChainState.glideBlock` frames, its controls moved on before each (a stage
    /// with `StageState.slices`: audio and control ports only). Realtime: safe.
    @inline(__always)
    static func runSliced(_ c: ChainState, _ s: StageState, inputs: UnsafePointer<UnsafeMutablePointer<Float>>,
                          outputs: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int,
                          sides: UnsafePointer<UnsafeMutablePointer<Float>>?, bypassed: Bool) {
        var offset = 0
        while offset < frames {
            let n = min(ChainState.glideBlock, frames - offset)
            advanceGlides(s, frames: n)
            for i in 0..<s.instanceCount {
                let inst = s.instances[i]
                if s.enabledControl >= 0 && bypassed { inst.controlValues[s.enabledControl] = 0 }
                for j in 0..<s.ins {
                    inst.connect(inst.handle, inst.audioIn[j], UnsafeMutableRawPointer(inputs[inst.firstChannel + j] + offset))
                }
                for j in 0..<s.sides {
                    var buffer = c.silence
                    if let sides { buffer = sides[s.firstSide + j] }
                    inst.connect(inst.handle, inst.sideIn[j], UnsafeMutableRawPointer(buffer + offset))
                }
                for j in 0..<s.outs {
                    inst.connect(inst.handle, inst.audioOut[j], UnsafeMutableRawPointer(outputs[inst.firstOutput + j] + offset))
                }
                lv2host_run(inst.run, inst.handle, UInt32(n))
            }
            offset += n
        }
    }

    /// The input controls a plugin changed itself this cycle (a DSSI program or mapped controller) become their
    /// targets, noted as changes like any other. Realtime: safe.
    @inline(__always)
    static func takeBackInputs(_ c: ChainState, _ s: StageState, _ inst: InstanceState, index: Int, clock: Int) {
        for k in 0..<s.controlCount {
            let now = Int(inst.controlValues[k].bitPattern)
            if now != s.seen[k] {
                s.controls.store(k, now)
                s.seen[k] = now
                note(c, .control, clock: clock, b: Int64(index) << 32 | Int64(k), c: Int64(now))
            }
        }
    }

    /// Counts a stage's cycle in its timing cells. Realtime: safe.
    @inline(__always)
    static func time(_ s: StageState, nanoseconds: Int, frames: Int) {
        typealias Cell = StageTiming.Cell
        _ = s.timing.add(Cell.cycles.rawValue, 1)
        _ = s.timing.add(Cell.nanoseconds.rawValue, nanoseconds)
        s.timing.storeMax(Cell.maximum.rawValue, nanoseconds)
        if nanoseconds * 1024 > s.budgetPerFrame * frames { _ = s.timing.add(Cell.over.rawValue, 1) }
    }

    /// The chain's dry/wet mix and output gain, each ramped over the cycle from the last value to the wanted one.
    /// Realtime: safe.
    @inline(__always)
    static func mix(_ c: ChainState, inputs: UnsafePointer<UnsafeMutablePointer<Float>>,
                    outputs: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int, clock: Int, held: Bool) {
        let mixCell = held ? c.seenSettings[0] : c.settings.load(Setting.mix.rawValue)
        let gainCell = held ? c.seenSettings[1] : c.settings.load(Setting.gain.rawValue)
        let mix0 = c.current[0], gain0 = c.current[1]
        // A new value glides over the frames its change asked for (the gain by equal steps in dB), else over this
        // one cycle.
        if mixCell != c.seenSettings[0] {
            c.seenSettings[0] = mixCell
            let ramp = c.settings.load(Setting.mixRamp.rawValue)
            if ramp > 0 { note(c, .ramp, clock: clock, b: -1, c: Int64(ramp)) }
            note(c, .mix, clock: clock, c: Int64(mixCell))
            c.settingGlides[0] = Glide(from: mix0, to: Float(bitPattern: UInt32(truncatingIfNeeded: mixCell)), done: 0,
                                       length: max(0, ramp))
        }
        if gainCell != c.seenSettings[1] {
            c.seenSettings[1] = gainCell
            let ramp = c.settings.load(Setting.gainRamp.rawValue)
            if ramp > 0 { note(c, .ramp, clock: clock, b: -2, c: Int64(ramp)) }
            note(c, .gain, clock: clock, c: Int64(gainCell))
            c.settingGlides[1] = Glide(from: gain0, to: Float(bitPattern: UInt32(truncatingIfNeeded: gainCell)), done: 0,
                                       length: max(0, ramp))
        }
        let wantMix = c.settingGlides[0].length > 0 ? c.settingGlides[0].advance(frames, scale: ControlScale.linear.rawValue)
            : Float(bitPattern: UInt32(truncatingIfNeeded: mixCell))
        let wantGain = c.settingGlides[1].length > 0
            ? c.settingGlides[1].advance(frames, scale: ControlScale.logarithmic.rawValue)
            : Float(bitPattern: UInt32(truncatingIfNeeded: gainCell))
        c.current[0] = wantMix
        c.current[1] = wantGain
        let latency = latency(c, limit: c.dry.maxDelay(frames: frames))
        writeDry(c.dry, inputs: inputs, widthIn: c.inputChannels, frames: frames)
        if mix0 == 1 && wantMix == 1 && gain0 == 1 && wantGain == 1 { return }
        let dryNeeded = mix0 != 1 || wantMix != 1
        for o in 0..<c.outputChannels {
            let out = outputs[o]
            for i in 0..<frames {
                let t = Float(i + 1) / Float(frames)
                let m = mix0 + (wantMix - mix0) * t, g = gain0 + (wantGain - gain0) * t
                var v = out[i]
                if dryNeeded { v = v * m + readDry(c.dry, channel: o, delay: latency, frames: frames, at: i) * (1 - m) }
                out[i] = v * g
            }
        }
    }

    /// Puts a change on `changes` (or counts it when the ring is full). Realtime: safe.
    @inline(__always)
    static func note(_ c: ChainState, _ kind: Change, clock: Int, b: Int64 = 0, c value: Int64 = 0) {
        if !c.changes.push(RTMessage(kind: kind.rawValue, a: Int64(clock), b: b, c: value)) {
            _ = c.counts.add(Count.changesDropped.rawValue, 1)
        }
    }

    /// The stage's latency as its first instance last reported it (0 for none or a nonsense value). Realtime: safe.
    @inline(__always)
    static func stageLatency(_ s: StageState) -> Int {
        guard s.latencyOutput >= 0, s.instanceCount > 0 else { return 0 }
        let v = s.instances[0].outputValues[s.latencyOutput]
        guard v.isFinite, v >= 0.5, v < 1e9 else { return 0 }
        return Int(v.rounded())
    }

    /// Channel `channel` of a path of `widthOut` made from one of `widthIn`: the same channel modulo `widthIn` when
    /// the path widens (mono to both sides), the mean of the channels that fold onto it when it narrows.
    /// Realtime: safe.
    @inline(__always)
    static func mapped(_ inputs: UnsafePointer<UnsafeMutablePointer<Float>>, widthIn: Int, widthOut: Int,
                       channel: Int, at i: Int) -> Float {
        if widthIn == 0 { return 0 }   // an instrument that starts the path: its dry signal is silence
        if widthOut >= widthIn { return inputs[channel % widthIn][i] }
        var sum: Float = 0, n: Float = 0
        var c = channel
        while c < widthIn {
            sum += inputs[c][i]
            n += 1
            c += widthOut
        }
        return sum / n
    }

    /// Appends this cycle's input, mapped to the lines' channel count, to the delay lines. Realtime: safe.
    @inline(__always)
    static func writeDry(_ d: DelayLines, inputs: UnsafePointer<UnsafeMutablePointer<Float>>, widthIn: Int,
                         frames: Int) {
        guard d.capacity > 0 else { return }
        let mask = d.capacity - 1, at = d.position.pointee & mask
        // Copies while the path keeps or widens its channels (each line is one input), one pass per line: a loop
        // of `mapped` per frame cost a division per sample (about a microsecond a cycle at period 256).
        let first = min(frames, d.capacity - at), rest = max(0, frames - first)
        for o in 0..<d.channels {
            let line = d.buffers[o]
            if widthIn == 0 {
                (line + at).update(repeating: 0, count: first)
                line.update(repeating: 0, count: rest)
            } else if d.channels >= widthIn {
                let source = inputs[o % widthIn]
                (line + at).update(from: source, count: first)
                line.update(from: source + first, count: rest)
            } else {
                for i in 0..<frames {
                    line[(at + i) & mask] = mapped(inputs, widthIn: widthIn, widthOut: d.channels, channel: o, at: i)
                }
            }
        }
        d.position.pointee = d.position.pointee &+ frames
    }

    /// Frame `i` of this cycle (already written) delayed by `delay` frames. Realtime: safe.
    @inline(__always)
    static func readDry(_ d: DelayLines, channel: Int, delay: Int, frames: Int, at i: Int) -> Float {
        d.buffers[channel][(d.position.pointee &- frames &+ i &- delay) & (d.capacity - 1)]
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
