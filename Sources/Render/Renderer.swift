import Commands
import Foundation
import Logging
import Loudness
import Plugins
import Presets
import Realtime
import SoundFile

/// Runs one render job: the chain a live engine would build, cycle by cycle over the job's input, as fast as the
/// machine allows, with no JACK server; the same real-time code the live engines run (`ChainPath` for a rack,
/// `ChainState.run` for the recorder's and the player's insert chains), so the result is what the live rig would
/// have produced, to the sample (docs/RENDER.md says what that takes and what it does not cover).
///
/// How the input meets the chain's cycles: the chain runs `preroll` whole cycles of silence first (a live chain has
/// run before any take), then the input's first frame falls on frame `cycleOffset` of its cycle, as a take's first
/// frame falls in its cycle live. A command takes effect at the start of the first cycle that begins at or after its
/// frame (a live change takes effect at the next cycle), MIDI at its own frame. The latency the chain reports in the
/// cycle holding the input's first frame is taken out, so output frame n is the chain's answer to input frame n; the
/// run goes on past the input's end for the tail.
///
/// Threads: the caller's (a render job's own process, or a test); blocking I/O.
public enum Renderer {
    /// Output frames written so far, and the total as far as known.
    public typealias Progress = (_ frames: Int, _ total: Int) -> Void

    /// What a take's recorder compensates at most: a power of two that holds a second and the longest period, less
    /// that period (`RecorderState.latencyLimit`). A render compensates as much, so a render equals a take.
    public static func latencyLimit(sampleRate: Int) -> Int {
        var n = 1
        while n < max(1, sampleRate) + Period.maxFrames { n <<= 1 }
        return n - Period.maxFrames
    }

    /// Renders `job`. `progress` is called about ten times a second while the chain runs (a batch's watchdog takes
    /// it as the job's sign of life); `stop`, when it returns a signal number, ends the job at its next cycle with
    /// `stopped`, leaving nothing.
    public static func run(_ job: RenderJob, host: PluginHost = .shared, logger: Logger = Logger(label: "tandem.render"),
                           progress: Progress? = nil, stop: (() -> Int32?)? = nil) throws(RenderError) -> RenderReport {
        let began = Date()
        for p in [job.output, job.report] {
            for stale in RenderOutput.removeStale(for: p) {
                logger.info("removed a partial file of a render that is gone", metadata: ["file": "\(stale)"])
            }
            if let why = RenderOutput.problem(p) { throw why }
        }
        guard Limits.renderPeriod.contains(job.period) else {
            throw RenderError(.badInput, "a period of \(job.period) frames is out of range (\(Limits.renderPeriod.lowerBound) to"
                              + " \(Limits.renderPeriod.upperBound))")
        }
        guard (0..<job.period).contains(job.cycleOffset) else {
            throw RenderError(.badInput, "cycle offset \(job.cycleOffset) is not inside a cycle of \(job.period) frames")
        }
        let kind = job.chain.kind
        if job.inputs.isEmpty && job.midi == nil { throw RenderError(.badInput, "nothing to render: no input file") }
        if job.midi != nil && kind != .rack {
            throw RenderError(.badInput, "a MIDI file goes to a rack's instruments; the \(job.chain.engine)'s insert chain takes no MIDI")
        }
        let rate = try RenderSource.rate(inputs: job.inputs, wanted: job.sampleRate)
        guard Limits.renderRate.contains(rate) else {
            throw RenderError(.badInput, "the chain cannot run at \(rate) Hz (\(Limits.renderRate.lowerBound) to"
                              + " \(Limits.renderRate.upperBound) Hz)")
        }
        let source = try RenderSource(inputs: job.inputs, midiPath: job.midi, rate: rate, chainInputs: job.chain.inputs,
                                      quality: job.quality)
        let checksums = source.checksums()

        // The chain, as the live engine builds it (again for each pass of a normalizing render into a limiter).
        let chainOutputs = kind == .rack ? job.chain.outputs : job.chain.inputs
        let build = {
            PluginChain(specs: job.chain.plugins, inputs: job.chain.inputs, outputs: chainOutputs, sampleRate: rate,
                        period: job.period, label: "render \(job.chain.engine)", savedState: job.chain.savedState,
                        fixedBlock: true, mix: job.chain.mix, gainDB: job.chain.gainDB, midi: kind == .rack, host: host,
                        logger: logger)
        }
        let chain = build()
        let fatal = chain.problems.filter(\.stopsStart)
        if job.chain.strict && !fatal.isEmpty {
            throw RenderError(.badInput, "the \(job.chain.engine)'s chain cannot run as asked at \(rate) Hz: "
                              + fatal.map(\.description).joined(separator: "; "))
        }
        let startAsGiven = { (chain: PluginChain) in
            guard job.chain.startsAsGiven else { return }
            for spec in PluginSpec.uniqueNames(job.chain.plugins) {
                for c in spec.controls { _ = try? chain.set(spec.name, c.symbol, c.value) }
                try? chain.setBypass(spec.name, spec.bypass)
            }
            chain.markApplied()
        }
        startAsGiven(chain)
        if kind == .rack, !chain.takesMIDI, let e = job.events.first(where: { $0.midi != nil }) {
            throw RenderError(.badInput, "\(e.origin): MIDI for the rack '\(job.chain.engine)', but none of its plugins"
                              + " takes MIDI")
        }
        if kind == .rack, job.midi != nil, !chain.takesMIDI, !chain.isEmpty {
            throw RenderError(.badInput, "'\(job.midi ?? "")' is MIDI, but none of the plugins of the rack"
                              + " '\(job.chain.engine)' takes MIDI")
        }
        let startSpecs = chain.currentSpecs
        let mainOut = chainOutputs ?? (chain.isEmpty ? job.chain.inputs : chain.outputChannels)
        guard mainOut > 0 else { throw RenderError(.badInput, "the chain gives no audio output") }
        if let e = job.format.check(channels: mainOut, sampleRate: rate) {
            throw RenderError(.badInput, "cannot write '\(job.output)': \(e.message)")
        }

        // Every event checked against the chain as built, at this rate, and against the input's length.
        let inputFrames = source.frames
        var tailFixed = 0
        if case .seconds(let s) = job.tail { tailFixed = Limits.frames(seconds: s, rate: Double(rate)) ?? 0 }
        var commands: [(event: AutomationEvent, action: AutomationAction)] = []
        var midiEvents: [AutomationEvent] = []
        for e in job.events {
            let action: AutomationAction
            switch e.action(for: job.chain) {
            case .failure(let why): throw why
            case .success(let a): action = a
            }
            if e.at < 0 && !e.logged {
                throw RenderError(.badInput, "\(e.origin): frame \(e.at) is before the input's start")
            }
            if e.at >= inputFrames + tailFixed && e.logged {
                // A change made live after the take's last input frame (while it recorded its tail): outside what
                // is rendered again.
                logger.info("a logged change after the input's end is not applied", metadata: ["event": "\(e.line)"])
                continue
            }
            if e.at >= inputFrames + tailFixed {
                throw RenderError(.badInput, "\(e.origin): frame \(e.at) is past the end of the input (\(inputFrames) frames"
                                  + (tailFixed > 0 ? " and a tail of \(tailFixed)" : "") + ")")
            }
            do throws(PluginError) {
                switch action {
                case .set(let plugin, let symbol, let value, _):
                    try chain.check(plugin, symbol, try chain.number(plugin, symbol, value))
                case .bypass(let plugin, _, _): _ = try chain.isBypassed(plugin)
                case .preset(let plugin, let uri):
                    guard let spec = chain.specs.first(where: { $0.name == plugin }) else {
                        throw PluginError(.unknownPlugin, plugin: plugin, "no plugin named '\(plugin)' in the chain")
                    }
                    guard host.plugin(spec.uri)?.presets.contains(where: { $0.uri == uri }) == true else {
                        throw PluginError(.preset, plugin: plugin, "<\(spec.uri)> has no preset '\(uri)'")
                    }
                case .mix, .gain, .midi: break
                }
            } catch {
                throw RenderError(.badInput, "\(e.origin): \(error.description)")
            }
            if case .midi = action { midiEvents.append(e) } else { commands.append((e, action)) }
        }

        // The output's loudness is measured on the frames as they are written (docs/LOUDNESS.md); where BS.1770 does
        // not measure (a channel count it does not weigh, a rate below 8 kHz) the report says why, and a target is
        // refused.
        let meter = { () -> LoudnessMeter? in try? LoudnessReading.meter(channels: mainOut, rate: rate).get() }
        var unmeasured: String?
        var groups: ProgrammeMeters?
        if case .failure(let why) = LoudnessReading.meter(channels: mainOut, rate: rate) {
            unmeasured = why.description
            if case .channels = why {
                groups = try? ProgrammeMeters(groups: LoudnessGroups.pairs(channels: mainOut).groups, channels: mainOut,
                                              names: (1...mainOut).map(String.init), sampleRate: Double(rate))
                if groups != nil { unmeasured = (unmeasured ?? "") + " (measured as stereo pairs: loudnessGroups)" }
            }
        }
        if job.loudnessTarget != nil, let unmeasured {
            throw RenderError(.badInput, "cannot normalize '\(job.output)': \(unmeasured)")
        }

        var run = Run(job: job, rate: rate, chain: chain, mainOut: mainOut, source: source, logger: logger)
        defer { run.free() }
        let output = try RenderOutput(path: job.output, format: job.format, channels: mainOut, sampleRate: rate,
                                      broadcast: broadcast(job, source: source, rate: rate), meter: meter(), groups: groups)
        // The audio is finished and its checksums taken under its partial name; then the report is published, and
        // the audio last: a process killed at any point leaves no output without its report.
        let finished: String
        var normalization: RenderReport.Normalization?
        do throws(RenderError) {
            if let target = job.loudnessTarget {
                let limiter = job.inputs.isEmpty ? nil : Self.limiter(in: chain, host: host)
                let again = { (gain: Double) throws(RenderError) -> Run in
                    let c = build()
                    startAsGiven(c)
                    let s = try RenderSource(inputs: job.inputs, midiPath: job.midi, rate: rate, chainInputs: job.chain.inputs,
                                             quality: job.quality)
                    return Run(job: job, rate: rate, chain: c, mainOut: mainOut, source: s, logger: logger,
                               inputGain: Float(pow(10, gain / 20)))
                }
                normalization = try Self.normalize(target, run: &run, again: again, limiter: limiter, output: output,
                                                   meter: meter, mainOut: mainOut, commands: commands,
                                                   midiEvents: midiEvents, tailFixed: tailFixed, progress: progress,
                                                   stop: stop)
            } else {
                try run.loop(commands: commands, midiEvents: midiEvents, tailFixed: tailFixed, output: output,
                             progress: progress, stop: stop)
            }
            finished = try output.finish()
        } catch {
            output.discard()
            throw error
        }
        let loudness = output.meter.map { RenderReport.Loudness($0.reading) }
            ?? RenderReport.Loudness(note: unmeasured ?? "not measured")
        let (files, midi) = checksums.wait()
        let outputSHA256 = SHA256.file(finished)
        let seconds = Date().timeIntervalSince(began)
        let frames = run.written
        let report = RenderReport(
            tandemVersion: RenderVersion.string, renderedAt: ISO8601DateFormatter().string(from: began),
            host: ProcessInfo.processInfo.hostName, kind: kind.rawValue, engine: job.chain.engine, plugins: startSpecs,
            stateRestored: chain.restoredFrom, pluginProblems: chain.problems.isEmpty ? nil : chain.problems.map(\.description),
            mix: job.chain.mix, gainDB: job.chain.gainDB, playerGainDB: kind == .player ? job.chain.playerGainDB : nil,
            sampleRate: rate, period: job.period, cycleOffset: job.cycleOffset, prerollFrames: run.pad - job.cycleOffset,
            resampledFrom: source.resampledFrom, resampleQuality: source.resampledFrom != nil ? job.quality.rawValue : nil,
            sources: files.map(Self.source), midi: midi.map(Self.source), inputFrames: run.inputEnd ?? source.frames,
            latency: RenderReport.Latency(frames: run.latency ?? 0, changes: run.latencyChanges.isEmpty ? nil : run.latencyChanges),
            tail: job.tail.description, tailFrames: max(0, frames - (run.inputEnd ?? source.frames)),
            events: run.eventNotes, applied: run.applied, output: job.output, format: job.format.container.rawValue,
            sampleFormat: job.format.sample.rawValue, channels: mainOut, frames: frames,
            outputSHA256: outputSHA256, loudness: loudness, normalization: normalization,
            loudnessGroups: groups?.readings(summary: true), take: job.take,
            notes: Self.notes(job.notes, normalization: normalization, loudness: loudness), seconds: seconds,
            speed: seconds > 0 ? Double(frames) / Double(rate) / seconds : 0)
        do throws(RenderError) {
            if let signal = stop?() { throw RenderError.stopped(signal) }
            try RenderOutput.writeNew(report.json(), to: job.report)
        } catch {
            output.discard()
            throw error
        }
        do throws(RenderError) {
            try output.publish()
        } catch {
            // A report without its output describes nothing: it goes too.
            unlink(job.report)
            output.discard()
            throw error
        }
        return report
    }

    static func source(_ f: RenderSource.FileFacts) -> RenderReport.Source {
        RenderReport.Source(path: f.path, sha256: f.sha256, frames: f.frames, sampleRate: f.sampleRate, channels: f.channels,
                            channelsTaken: f.taken, timeReference: f.timeReference)
    }

    /// The output's BWF header: the input's time reference when it has one (a take's), and what was rendered.
    static func broadcast(_ job: RenderJob, source: RenderSource, rate: Int) -> BroadcastInfo {
        let now = Date()
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.dateFormat = "yyyy-MM-dd"
        let time = DateFormatter()
        time.locale = Locale(identifier: "en_US_POSIX")
        time.dateFormat = "HH:mm:ss"
        var reference: UInt64 = 0
        if let r = source.files.first?.timeReference, let fileRate = source.files.first?.sampleRate, fileRate > 0 {
            reference = UInt64((Double(r) * Double(rate) / Double(fileRate)).rounded())
        }
        return BroadcastInfo(timeReference: reference,
                             description: "\(job.session): \(job.name) through the \(job.chain.engine) chain",
                             originator: "Tandem render", originationDate: day.string(from: now),
                             originationTime: time.string(from: now))
    }
}

public enum RenderVersion {
    public static let string = "0.1.0"
}
