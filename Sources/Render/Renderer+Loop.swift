import Commands
import Foundation
import Logging
import Plugins
import Presets
import Realtime

extension Renderer {
    /// One job's cycle loop and what it keeps between cycles.
    struct Run {
        let job: RenderJob
        let rate: Int
        let period: Int
        let kind: RenderChain.Kind
        let holder = ChainHolder()
        let source: RenderSource
        let logger: Logger
        /// Chain position (frames from the first cycle) of the input's first frame.
        let pad: Int
        let mainOut: Int
        let sides: Int
        let sideOuts: Int
        /// Planar buffers (`Period.maxFrames` each): the chain's inputs (main, then side inputs: silent), its
        /// outputs (main, then extra outputs), the fade buffers of a swap; and pointers into the inputs.
        let inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let shifted: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let fade: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let inputCount: Int
        let outputCount: Int
        /// The MIDI the chain runs with (the rack's sizes) and what it writes (not kept).
        let midiIn: UnsafeMutableRawPointer
        let midiOut: UnsafeMutableRawPointer
        static let midiCapacity = 32768
        /// The output of one cycle, interleaved.
        var interleaved: [Float]

        /// The latency taken out (known after the cycle that holds the input's first frame) and its changes.
        var latency: Int?
        var latencyNow = 0
        var latencyChanges: [RenderReport.Latency.Change] = []
        /// Output frames written; where the input ended (input frames), once known.
        var written = 0
        var inputEnd: Int?
        /// The tail's trailing silence not yet written (interleaved), and how long the output has been silent.
        var pendingSilence: [Float] = []
        var silentRun = 0
        var done = false
        var eventNotes: [RenderReport.Event] = []
        var applied: [TimedCommand] = []
        /// A chain rebuilt for an LV2 preset → the command, noted at its first cycle.
        var presetLoads: [ObjectIdentifier: TimedCommand] = [:]
        var midiDropped = 0
        /// A gain on the chain's input (a normalizing render raising the level into a limiter), linear.
        let inputGain: Float

        init(job: RenderJob, rate: Int, chain: PluginChain, mainOut: Int, source: RenderSource, logger: Logger,
             inputGain: Float = 1) {
            self.job = job
            self.inputGain = inputGain
            self.rate = rate
            period = job.period
            kind = job.chain.kind
            self.source = source
            self.logger = logger
            self.mainOut = mainOut
            let preroll = Limits.frames(seconds: job.prerollSeconds, rate: Double(rate)) ?? 0
            pad = (preroll + period - 1) / period * period + job.cycleOffset
            sides = kind == .rack ? chain.sideInputs.count : 0
            sideOuts = kind == .rack ? chain.sideOutputs.count : 0
            inputCount = job.chain.inputs + sides
            outputCount = kind == .rack ? mainOut + sideOuts : max(mainOut, job.chain.inputs)
            func buffers(_ n: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<Float>> {
                let list = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, n))
                for i in 0..<max(1, n) {
                    list[i] = .allocate(capacity: Period.maxFrames)
                    list[i].initialize(repeating: 0, count: Period.maxFrames)
                }
                return list
            }
            inputs = buffers(inputCount)
            shifted = .allocate(capacity: max(1, inputCount))
            outputs = buffers(outputCount)
            fade = buffers(outputCount)
            midiIn = .allocate(byteCount: Self.midiCapacity, alignment: 8)
            midiOut = .allocate(byteCount: Self.midiCapacity, alignment: 8)
            midiIn.initializeMemory(as: UInt8.self, repeating: 0, count: Self.midiCapacity)
            midiOut.initializeMemory(as: UInt8.self, repeating: 0, count: Self.midiCapacity)
            interleaved = [Float](repeating: 0, count: period * mainOut)
            holder.install(chain.isEmpty ? nil : chain)
        }

        func free() {
            holder.close()
            for (list, n) in [(inputs, inputCount), (outputs, outputCount), (fade, outputCount)] {
                for i in 0..<max(1, n) { list[i].deallocate() }
                list.deallocate()
            }
            shifted.deallocate()
            midiIn.deallocate()
            midiOut.deallocate()
        }

        /// Cycles until the input and its tail are rendered.
        mutating func loop(commands: [(event: AutomationEvent, action: AutomationAction)], midiEvents: [AutomationEvent],
                           tailFixed: Int, output: any RenderSink, progress: Progress?,
                           stop: (() -> Int32?)? = nil) throws(RenderError) {
            let sequence = AtomSequence.sequenceURID, midiType = AtomSequence.midiURID
            let path = ChainPath(inputs: inputs, inputChannels: inputCount, sides: sides, outputs: outputs,
                                 outputChannels: outputCount, sideOutputs: sideOuts, fade: fade, sequenceURID: sequence)
            let limit = Renderer.latencyLimit(sampleRate: rate)
            let tailLimit = Limits.frames(seconds: job.tailLimitSeconds, rate: Double(rate)) ?? 0
            // The player's gain (before its chain), and a normalizing render's gain into a limiter.
            let gainIn = (kind == .player && job.chain.playerGainDB != 0 ? Float(pow(10, job.chain.playerGainDB / 20)) : 1)
                * inputGain
            var nextCommand = 0, nextMIDI = 0, nextFileMIDI = 0
            var q = 0
            var cycles = 0
            var told = DispatchTime.now().uptimeNanoseconds
            let main = job.chain.inputs
            let audio = !job.inputs.isEmpty && main > 0
            while !done {
                let at = q - pad   // the input frame this cycle begins at
                // The input: silence before it and after it.
                for ch in 0..<inputCount { inputs[ch].update(repeating: 0, count: period) }
                if audio && inputEnd == nil && at + period > 0 {
                    let offset = max(0, -at)
                    for ch in 0..<main { shifted[ch] = inputs[ch] + offset }
                    let want = period - offset
                    let got = try source.read(into: shifted, count: want)
                    if got < want { inputEnd = at + offset + got }
                    if gainIn != 1 {
                        for ch in 0..<main { for i in 0..<period { inputs[ch][i] *= gainIn } }
                    }
                } else if !audio && inputEnd == nil && at + period > 0 {
                    // No audio input (an instrument's MIDI file): the MIDI file's length is the input's.
                    if source.frames <= at + period { inputEnd = source.frames }
                }
                // Commands due: taken at the start of this cycle, as a live change is taken at the next cycle.
                while nextCommand < commands.count && commands[nextCommand].event.at <= at {
                    try apply(commands[nextCommand].action, event: commands[nextCommand].event, at: at)
                    nextCommand += 1
                }
                // MIDI at its frames in the cycle: the file's, then the automation's.
                var midi = ChainMIDI.none
                if kind == .rack {
                    AtomSequence.clear(midiIn, sequenceURID: sequence)
                    for e in source.midiEvents(before: at + period, from: &nextFileMIDI) where e.frame >= at {
                        insertMIDI(e.bytes, frame: e.frame - at, type: midiType)
                    }
                    while nextMIDI < midiEvents.count && midiEvents[nextMIDI].at < at + period {
                        let e = midiEvents[nextMIDI]
                        if let bytes = e.midi, e.at >= at {
                            insertMIDI(bytes, frame: e.at - at, type: midiType)
                            eventNotes.append(.init(event: e.line, origin: e.origin, appliedAt: e.at))
                        }
                        nextMIDI += 1
                    }
                    midi = ChainMIDI(input: UnsafeRawPointer(midiIn), inputCapacity: UInt32(Self.midiCapacity),
                                     output: midiOut, outputCapacity: UInt32(Self.midiCapacity), time: ChainTime(),
                                     timeChanged: cycles == 0)
                }
                // The cycle: the live engines' own code.
                if kind == .rack {
                    ChainPath.cycle(path, slot: holder.slot, frames: period, midi: midi, clock: at)
                } else if let c = holder.slot.acquire() {
                    ChainState.run(c.pointee, inputs: inputs, outputs: outputs, frames: period, clock: at)
                } else {
                    for ch in 0..<mainOut { outputs[ch].update(from: inputs[ch], count: period) }
                }
                drainChanges()
                holder.collect()
                cycles += 1
                // Latency: what the chain reports in the cycle that holds the input's first frame is taken out.
                let reported = holder.chain.map { ChainState.latency($0.state.pointee, limit: limit) } ?? 0
                if latency == nil && at + period > 0 {
                    latency = reported
                    latencyNow = reported
                } else if latency != nil && reported != latencyNow {
                    latencyChanges.append(.init(atFrame: at, frames: reported))
                    latencyNow = reported
                }
                if let l = latency {
                    let from = max(q, pad + l)
                    if from < q + period {
                        try emit(offset: from - q, count: q + period - from, tailFixed: tailFixed, tailLimit: tailLimit,
                                 output: output)
                    }
                }
                q += period
                // About ten times a second: progress (a batch's sign of life from this job), and a stop asked for.
                let now = DispatchTime.now().uptimeNanoseconds
                if now &- told >= 100_000_000 {
                    told = now
                    if let signal = stop?() { throw RenderError.stopped(signal) }
                    progress?(written, max(written, source.frames + tailFixed))
                }
            }
            drainChanges()
            progress?(written, written)
        }

        mutating func insertMIDI(_ bytes: [UInt8], frame: Int, type: UInt32) {
            let fits = bytes.withUnsafeBytes {
                AtomSequence.insert(midiIn, capacity: UInt32(Self.midiCapacity), frame: Int64(frame), type: type,
                                    bytes: $0.baseAddress!, size: UInt32($0.count))
            }
            if !fits { midiDropped += 1 }
        }

        /// Hands this cycle's output frames `offset ..< offset + count` on: written, or held back while the tail is
        /// silent; ends the run at the input's end plus its tail.
        mutating func emit(offset: Int, count: Int, tailFixed: Int, tailLimit: Int, output: any RenderSink) throws(RenderError) {
            let threshold = Float(pow(10, RenderSection.silenceDBFS / 20))
            let hold = Limits.frames(seconds: RenderSection.silenceSeconds, rate: Double(rate)) ?? rate
            var staged = 0
            // A block wholly before the input's end decides nothing about the tail: its frames go out as they are,
            // interleaved channel by channel, and only its trailing silence is counted (the loop below, frame by
            // frame, took a sixth of a 16-channel render's time).
            if pendingSilence.isEmpty, inputEnd.map({ written + count <= $0 }) ?? true {
                var trailing = 0
                back: for n in stride(from: count - 1, through: 0, by: -1) {
                    for ch in 0..<mainOut where !(abs(outputs[ch][offset + n]) <= threshold) { break back }
                    trailing += 1
                }
                silentRun = trailing == count ? silentRun + count : trailing
                let channels = mainOut
                interleaved.withUnsafeMutableBufferPointer { dst in
                    for ch in 0..<channels {
                        let src = outputs[ch] + offset
                        var j = ch
                        for n in 0..<count {
                            dst[j] = src[n]
                            j += channels
                        }
                    }
                }
                staged = count
                try write(&staged, output: output)
                return
            }
            for n in 0..<count {
                let frame = written + staged + pendingSilence.count / mainOut   // the output frame this one becomes
                if let end = inputEnd {
                    switch job.tail {
                    case .seconds: done = frame >= end + tailFixed
                    case .silence: done = frame >= end + tailLimit || (frame >= end && silentRun >= hold)
                    }
                    if done { break }
                }
                let i = offset + n
                var silent = true
                for ch in 0..<mainOut where !(abs(outputs[ch][i]) <= threshold) { silent = false }
                silentRun = silent ? silentRun + 1 : 0
                if case .silence = job.tail, let end = inputEnd, frame >= end, silent {
                    // Trailing silence is held back: written only if sound follows.
                    try write(&staged, output: output)
                    for ch in 0..<mainOut { pendingSilence.append(outputs[ch][i]) }
                    continue
                }
                if !pendingSilence.isEmpty {
                    // Sound after a silence in the tail: the silence belongs to the output.
                    try write(&staged, output: output)
                    try writePending(output)
                }
                for ch in 0..<mainOut { interleaved[staged * mainOut + ch] = outputs[ch][i] }
                staged += 1
            }
            try write(&staged, output: output)
            if done { pendingSilence = [] }
        }

        /// Writes the first `staged` frames of `interleaved`.
        mutating func write(_ staged: inout Int, output: any RenderSink) throws(RenderError) {
            guard staged > 0 else { return }
            let frames = staged
            try interleaved.withUnsafeBufferPointer { (b) throws(RenderError) in
                try output.write(b.baseAddress!, frames: frames)
            }
            written += frames
            staged = 0
        }

        mutating func writePending(_ output: any RenderSink) throws(RenderError) {
            let frames = pendingSilence.count / mainOut
            try pendingSilence.withUnsafeBufferPointer { (b) throws(RenderError) in
                try output.write(b.baseAddress!, frames: frames)
            }
            written += frames
            pendingSilence.removeAll(keepingCapacity: true)
        }

        /// Carries out a command on the chain as the session does live: a value, a bypass, the mix or the gain is
        /// set for the next cycle; an LV2 preset rebuilds the chain with the other plugins' current values, swapped in
        /// at the next cycle (a rack crossfades over it).
        mutating func apply(_ action: AutomationAction, event: AutomationEvent, at: Int) throws(RenderError) {
            guard let chain = holder.chain else { return }
            eventNotes.append(.init(event: event.line, origin: event.origin, appliedAt: at))
            do throws(PluginError) {
                switch action {
                case .set(let plugin, let symbol, let value, let ms):
                    try chain.set(plugin, symbol, try chain.number(plugin, symbol, value),
                                  rampFrames: PluginChain.rampFrames(ms: ms, sampleRate: rate))
                case .bypass(let plugin, let on, let ms):
                    try chain.setBypass(plugin, on, rampFrames: PluginChain.rampFrames(ms: ms, sampleRate: rate))
                case .mix(let m, let ms): chain.setMix(m, rampFrames: PluginChain.rampFrames(ms: ms, sampleRate: rate))
                case .gain(let d, let ms): chain.setGain(dB: d, rampFrames: PluginChain.rampFrames(ms: ms, sampleRate: rate))
                case .preset(let plugin, let uri):
                    drainChanges()
                    guard let index = chain.specs.firstIndex(where: { $0.name == plugin }) else { return }
                    var specs = chain.currentSpecs
                    specs[index].preset = uri
                    specs[index].controls = []
                    // As live: a rack's rebuilt chain keeps the mix and gain; the recorder's and player's start afresh.
                    let new = PluginChain(specs: specs, inputs: job.chain.inputs,
                                          outputs: kind == .rack ? job.chain.outputs : job.chain.inputs, sampleRate: rate,
                                          period: period, label: "render \(job.chain.engine)", savedState: nil,
                                          fixedBlock: true, mix: kind == .rack ? chain.mix : 1,
                                          gainDB: kind == .rack ? chain.gainDB : 0, midi: kind == .rack, logger: logger)
                    presetLoads[ObjectIdentifier(new)] = .preset(0, engine: job.chain.engine, plugin: plugin, uri: uri)
                    holder.replace(with: new, isRunning: { true }, logger: logger)
                case .midi: break
                }
            } catch {
                throw RenderError(.badInput, "\(event.origin): \(error.description)")
            }
        }

        /// What the chain applied since the last look, as commands at their input frames (the report's `applied`).
        mutating func drainChanges() {
            guard let chain = holder.chain else { return }
            let engine = job.chain.engine
            let rate = self.rate
            func ms(_ c: ChainChange) -> Double? { PluginChain.rampMS(frames: c.rampFrames, sampleRate: rate) }
            for c in chain.drainChanges() {
                switch c.what {
                case .control(let p, let s, let v):
                    applied.append(.set(c.clock, engine: engine, plugin: p, symbol: s, value: v, rampMS: ms(c)))
                case .bypass(let p, let on): applied.append(.bypass(c.clock, engine: engine, plugin: p, on: on, rampMS: ms(c)))
                case .mix(let m): applied.append(.mix(c.clock, engine: engine, mix: m, rampMS: ms(c)))
                case .gain(let d): applied.append(.gain(c.clock, engine: engine, dB: d, rampMS: ms(c)))
                case .started:
                    if var p = presetLoads.removeValue(forKey: ObjectIdentifier(chain)) {
                        p.frame = c.clock
                        applied.append(p)
                    }
                }
            }
        }
    }
}
