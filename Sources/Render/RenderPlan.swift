import Commands
import Foundation
import Plugins
import Presets
import SoundFile

/// What `tandem render` was asked (a preset and its `[render]` table, the command line's options, a take to render
/// again), turned into checked jobs, one per input, before anything runs. Every problem is found and reported at
/// once; a plan with problems runs nothing.
public struct RenderRequest: Sendable {
    /// A loaded preset (nil: the chain comes from `plugins`).
    public var preset: Preset?
    /// Which chain of the preset: "recorder", "player" or a rack's name.
    public var engine: String?
    /// A chain given on the command line (a rack named `rackName`), with its ports' counts when given.
    public var plugins: [PluginSpec] = []
    public var rackName = "rack"
    public var rackInputs: Int?
    public var rackOutputs: Int?
    public var mix: Double?
    public var gainDB: Double?
    /// Input files (each its own job); nil: the `[render]` table's.
    public var inputs: [String] = []
    public var output: String?
    public var format: AudioFormat?
    public var period: Int?
    public var sampleRate: Int?
    public var quality: ResampleQuality?
    public var cycleOffset: Int?
    public var prerollSeconds: Double?
    public var tail: RenderTail?
    public var tailLimitSeconds: Double?
    public var automationFile: String?
    /// The input files' channels to take, from 1 (nil: all).
    public var channels: [Int]?
    /// A take report whose take is rendered again (its sources, chain, control log, period and cycle offset).
    public var take: String?
    public var strict: Bool?
    /// `--normalize` (LUFS) and `--true-peak-ceiling` (dBTP); nil: the `[render]` table's.
    public var normalize: Double?
    public var truePeakCeiling: Double?

    public init() {}
}

/// Every problem a request has, at once.
public struct RenderProblems: Error, Sendable {
    public let list: [String]
    public init(_ list: [String]) { self.list = list }
}

public enum RenderPlan {
    /// The jobs `request` asks for, or every problem with it.
    public static func jobs(_ r: RenderRequest, host: PluginHost = .shared) -> Result<[RenderJob], RenderProblems> {
        var problems: [String] = []
        let section = r.preset?.render ?? RenderSection()
        var take: TakeSidecar?
        if let t = r.take {
            do throws(RenderError) { take = try TakeSidecar.read(t) } catch { return .failure(RenderProblems([error.message])) }
        }
        // The chain.
        var chain: RenderChain
        switch chainFor(r, section: section, take: take, host: host) {
        case .failure(let why): return .failure(RenderProblems([why.message]))
        case .success(let c): chain = c
        }
        var notes: [String] = []
        if let take {
            // The chain as it was when the take was asked to start; --mix and --gain start it elsewhere, and the
            // log's later changes still apply at their frames.
            if let start = take.controlLog?.chains?[chain.engine] {
                chain.plugins = start.plugins
                chain.mix = r.mix ?? start.mix
                chain.gainDB = r.gainDB ?? start.gainDB
                chain.startsAsGiven = true
                if let m = r.mix {
                    notes.append("mix \(Limits.number(m)) from --mix, over the take's start of \(Limits.number(start.mix))")
                }
                if let g = r.gainDB {
                    notes.append("gain \(Limits.number(g)) dB from --gain, over the take's start of"
                                 + " \(Limits.number(start.gainDB)) dB")
                }
            } else if chain.kind == .recorder, let specs = take.plugins {
                chain.plugins = specs
                chain.startsAsGiven = true
            }
            if chain.plugins.isEmpty {
                let recorders = chain.kind != .recorder && take.plugins?.isEmpty == false
                return .failure(RenderProblems(["the \(chain.engine) has no plugins" + (recorders
                    ? "; the take's chain is the recorder's (--engine recorder)" : ": nothing to render through")]))
            }
        }
        if let strict = r.strict { chain.strict = strict }
        if take == nil, r.preset == nil, r.rackInputs == nil, let note = followFiles(&chain, r, host: host) {
            notes.append(note)
        }
        if host.canLookUp {
            let found = host.check(chain: chain.plugins, inputs: chain.inputs,
                                   outputs: chain.kind == .rack ? chain.outputs : chain.inputs, midi: chain.kind == .rack)
            // The error names its plugin ("plugin NAME: ..."): said once.
            for list in found where chain.strict {
                for p in list where p.error.stopsStart { problems.append(p.error.description) }
            }
        }

        // The sources: files given, the [render] table's, or the take's.
        var sources: [[RenderInput]] = []
        var midiSources: [String?] = []
        if let take, let t = r.take {
            if !r.inputs.isEmpty { problems.append("give either input files or --take, not both") }
            switch takeSources(take, report: t, chain: chain) {
            case .failure(let why): problems.append(why.message)
            case .success(let inputs):
                let midi = inputs.filter { isMIDI($0.path) }
                if midi.isEmpty {
                    sources = [inputs]
                    midiSources = [nil]
                } else if midi.count == 1 && inputs.count == 1 {
                    sources = [[]]
                    midiSources = [midi[0].path]
                } else {
                    problems.append("take \(take.take) was recorded beside a queue of MIDI and audio files: render them as inputs")
                }
            }
        } else {
            let files = r.inputs.isEmpty ? section.inputs : r.inputs
            if files.isEmpty { problems.append("no input file (give one or more, or inputs = [...] in [render])") }
            for f in files {
                if !FileManager.default.fileExists(atPath: f) {
                    problems.append("'\(f)' does not exist")
                    continue
                }
                if isMIDI(f) {
                    sources.append([])
                    midiSources.append(f)
                } else {
                    sources.append([RenderInput(path: f, channels: r.channels.map { $0.map { $0 - 1 } })])
                    midiSources.append(nil)
                }
            }
        }

        if take == nil { problems += widthProblems(sources, chain: chain, preset: r.preset != nil) }

        // Outputs.
        let outputTemplate = r.output ?? section.output
        guard let outputTemplate else {
            problems.append("no output (-o FILE, a folder, or a template such as \"out/{input}.wav\"; or output in [render])")
            return .failure(RenderProblems(problems))
        }
        let count = sources.count
        if let why = RenderTemplate.problem(isFolder(outputTemplate) ? outputTemplate + "/{input}" : outputTemplate,
                                            inputs: count) {
            problems.append("-o \(outputTemplate): \(why)")
        }
        let newFolder = folderToMake(outputTemplate, problems: &problems)
        var probedFolders = Set<String>()
        let format = r.format ?? section.format ?? formatFromExtension(outputTemplate) ?? take.flatMap(takeFormat)
            ?? AudioFormat()
        let session = r.preset?.session.name ?? take?.session ?? "render"
        var names = Set<String>()
        var jobs: [RenderJob] = []
        var period = r.period ?? section.period ?? RenderSection.defaultPeriod
        var cycleOffset = r.cycleOffset ?? section.cycleOffset
        var sampleRate = r.sampleRate ?? section.sampleRate
        if let take, let log = take.controlLog {
            // A take is rendered again as it was heard: its period, rate and cycle offset come before the [render]
            // table's, and an option that asks for another is refused.
            let given: [(option: String, key: String, asked: Int?, take: Int, what: String, table: Int?)] = [
                ("--period", "period", r.period, log.period, "period of \(log.period) frames", section.period),
                ("--rate", "rate", r.sampleRate, take.sampleRate, "rate of \(take.sampleRate) Hz", section.sampleRate),
                ("--cycle-offset", "cycle_offset", r.cycleOffset, log.cycleOffset,
                 "cycle offset of \(log.cycleOffset)", section.cycleOffset),
            ]
            for g in given {
                if let asked = g.asked, asked != g.take {
                    problems.append("\(g.option) \(asked): take \(take.take) ran at a \(g.what); rendered otherwise, the"
                                    + " result would not be what was heard (leave \(g.option) out)")
                } else if g.asked == nil, let table = g.table, table != g.take, g.key != "cycle_offset" || table != 0 {
                    notes.append("take \(take.take)'s \(g.what), not the preset's [render] \(g.key) = \(table)")
                }
            }
            period = log.period
            cycleOffset = log.cycleOffset
            sampleRate = take.sampleRate
        }
        if !Limits.renderPeriod.contains(period) {
            problems.append("a period of \(period) frames is out of range (\(Limits.renderPeriod.lowerBound) to \(Limits.renderPeriod.upperBound))")
        }
        if cycleOffset < 0 || cycleOffset >= period {
            problems.append("cycle offset \(cycleOffset) is not inside a cycle of \(period) frames (0 to \(period - 1))")
        }
        if let rate = sampleRate, !Limits.renderRate.contains(rate) {
            problems.append("a rate of \(rate) Hz is out of range (\(Limits.renderRate.lowerBound) to \(Limits.renderRate.upperBound) Hz)")
        }
        // Loudness: a target, and its ceiling (which means nothing without one).
        var loudnessTarget: LoudnessTarget?
        let ceiling = r.truePeakCeiling ?? section.truePeakCeiling
        if let lufs = r.normalize ?? section.normalize {
            switch RenderSection.loudnessTarget(lufs) {
            case .failure(let why): problems.append(why.description)
            case .success(let v):
                loudnessTarget = LoudnessTarget(lufs: v, truePeakCeiling: ceiling ?? RenderSection.defaultTruePeakCeiling)
            }
            if let c = ceiling, case .failure(let why) = RenderSection.truePeakCeiling(c) { problems.append(why.description) }
        } else if r.truePeakCeiling != nil {
            problems.append("--true-peak-ceiling is the ceiling of a normalized render: give --normalize too (or normalize"
                            + " in [render])")
        }
        // Automation as written (frames or seconds): resolved per job at its rate.
        var entries: [(AutomationEntry, String)] = []
        if let file = r.automationFile ?? section.automationFile {
            let (list, bad) = AutomationList.read(file)
            problems += bad
            entries += list.map { ($0, "\(file):\($0.line ?? 0)") }
        }
        let presetFile = r.preset?.path ?? "preset"
        entries += section.events.map { ($0, "\(presetFile):\($0.line ?? 0) [[render.event]]") }

        for (k, inputs) in sources.enumerated() {
            let midi = midiSources[k]
            let name = inputs.first.map { ($0.path as NSString).lastPathComponent } ?? midi.map { ($0 as NSString).lastPathComponent } ?? "take"
            let output = outputPath(outputTemplate, input: take.map { "take-\($0.take)" } ?? name, number: k + 1,
                                    session: session, format: format)
            let report = (output as NSString).deletingPathExtension + ".json"
            for p in [output, report] {
                if !names.insert(p).inserted { problems.append("two jobs would write '\(p)': use {input} or {take} in the output") }
                let folder = (p as NSString).deletingLastPathComponent
                let inNewFolder = newFolder == (folder as NSString).standardizingPath
                if !inNewFolder, let why = RenderOutput.problem(p) {
                    problems.append(why.message)
                } else if !inNewFolder, probedFolders.insert(folder).inserted,
                          let why = WritableFolder.problem(folder.isEmpty ? "." : folder) {
                    // Before anything starts: a read-only folder used to fail each job after it had run (exit 4).
                    problems.append("the folder '\(folder.isEmpty ? "." : folder)' of '\(p)' takes no files: \(why)")
                }
            }
            var job = RenderJob(number: k + 1, chain: chain, inputs: inputs, output: output, report: report,
                                format: format, period: period)
            job.midi = midi
            job.sampleRate = sampleRate
            job.notes = notes
            job.quality = r.quality ?? section.resampleQuality
            job.cycleOffset = cycleOffset
            job.prerollSeconds = r.prerollSeconds ?? section.prerollSeconds
            job.tail = r.tail ?? section.tail
            job.tailLimitSeconds = r.tailLimitSeconds ?? section.tailLimitSeconds
            job.session = session
            job.take = r.take
            job.loudnessTarget = loudnessTarget
            // Seconds become frames at the job's rate (the file's own when no rate is given).
            var rate = job.sampleRate ?? 48000
            if job.sampleRate == nil, let first = inputs.first, let sr = try? SoundFileReader(path: first.path).sampleRate {
                rate = sr
            }
            let (events, bad) = AutomationList.events(entries.map(\.0), rate: rate) { e in
                entries.first { $0.0 == e }?.1 ?? "automation"
            }
            if k == 0 { problems += bad }
            job.events = events
            if let take, let t = r.take, let log = take.controlLog {
                job.events += AutomationList.events(log, engine: chain.engine, take: (t as NSString).lastPathComponent)
                job.events = job.events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
            }
            if k == 0 { problems += RenderCheck.events(job.events, chain: chain, host: host) }
            jobs.append(job)
        }
        if problems.isEmpty, let newFolder {
            do {
                try FileManager.default.createDirectory(atPath: newFolder, withIntermediateDirectories: true)
            } catch {
                problems.append("-o \(outputTemplate): cannot make the folder '\(newFolder)': \(error.localizedDescription)")
            }
        }
        return problems.isEmpty ? .success(jobs) : .failure(RenderProblems(problems))
    }

    /// The folder an output ending in '/' names when it is not there yet (nil: none to make), made once the plan
    /// holds no problem; a problem when it cannot be made (a file of that name, a folder above it that takes no
    /// files).
    static func folderToMake(_ output: String, problems: inout [String]) -> String? {
        let folder = (output as NSString).standardizingPath
        guard output.hasSuffix("/"), !FileManager.default.fileExists(atPath: folder) || !isFolder(folder) else { return nil }
        var ancestor = folder
        while !ancestor.isEmpty && !FileManager.default.fileExists(atPath: ancestor) {
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
        if !ancestor.isEmpty && !isFolder(ancestor) {
            problems.append("-o \(output): '\(ancestor)' is a file, not a folder")
            return nil
        }
        if let why = WritableFolder.problem(ancestor.isEmpty ? "." : ancestor) {
            problems.append("-o \(output): the folder cannot be made in '\(ancestor.isEmpty ? "." : ancestor)': \(why)")
            return nil
        }
        return folder
    }

    /// The channels a source's files give (the `--channels` taken), nil when its first file cannot be read (the
    /// job says why when it runs).
    static func width(_ inputs: [RenderInput]) -> Int? {
        guard let first = inputs.first else { return nil }
        return first.channels?.count ?? (try? SoundFileReader(path: first.path))?.channels
    }

    /// A `--plugin` chain given no `--inputs` takes its files' channels when they all give the same number but one
    /// (a mono file feeds any chain) and the chain runs at that width: the mono amplifier on a stereo file runs as
    /// two instances, as a rack given `--inputs 2` does. Returns the note each job says it with (nil: unchanged).
    static func followFiles(_ chain: inout RenderChain, _ r: RenderRequest, host: PluginHost) -> String? {
        let taken = r.channels.map { $0.map { $0 - 1 } }
        let widths = Set(r.inputs.filter { !isMIDI($0) && FileManager.default.fileExists(atPath: $0) }
            .compactMap { width([RenderInput(path: $0, channels: taken)]) }).subtracting([1])
        guard chain.inputs > 0, widths.count == 1, let w = widths.first, w != chain.inputs, host.canLookUp else {
            return nil
        }
        let shape = ChainLayout.throughShape(chain.plugins, inputs: w, outputs: r.rackOutputs,
                                             label: "rack \(r.rackName)", host: host)
        let found = host.check(chain: chain.plugins, inputs: w, outputs: shape.outputs, midi: true)
        guard !found.contains(where: { $0.contains { $0.error.stopsStart } }) else { return nil }
        let first = chain.inputs
        chain.inputs = w
        chain.outputs = shape.outputs
        return "the chain takes the file's \(w) channels, as with --inputs \(w) (its first plugin takes \(first);"
            + " --inputs \(first) --channels \((1...first).map(String.init).joined(separator: ",")) renders \(first))"
    }

    /// Files whose channels the chain cannot take (neither mono nor the chain's width), each with what to give
    /// instead: before anything runs, so no job starts only to fail.
    static func widthProblems(_ sources: [[RenderInput]], chain: RenderChain, preset: Bool) -> [String] {
        guard chain.inputs > 0 else { return [] }
        let n = chain.inputs
        return sources.compactMap { inputs -> String? in
            guard let w = width(inputs), w != 1, w != n, let file = inputs.first?.path else { return nil }
            let key = !preset ? "--inputs \(w)"
                : chain.kind == .rack ? "inputs = \(w) in the preset's [[rack]] '\(chain.engine)'"
                : "channels = \(w) in the preset's [\(chain.engine)]"
            let owner = !preset ? "the chain" : chain.kind == .rack ? "the chain of rack '\(chain.engine)'"
                : "the \(chain.engine)'s chain"
            return "'\(file)' gives \(w) channels and \(owner) takes \(n): give the chain \(w) inputs (\(key)),"
                + " choose \(n) of the file's channels (--channels \((1...min(n, w)).map(String.init).joined(separator: ",")))"
                + ", or give a mono file"
        }
    }

    /// The chain the request names.
    static func chainFor(_ r: RenderRequest, section: RenderSection, take: TakeSidecar?,
                         host: PluginHost) -> Result<RenderChain, RenderError> {
        guard let p = r.preset else {
            guard !r.plugins.isEmpty else {
                return .failure(RenderError(.badInput, "give a preset or at least one --plugin"))
            }
            let shape = ChainLayout.throughShape(r.plugins, inputs: r.rackInputs, outputs: r.rackOutputs,
                                                 label: "rack \(r.rackName)", host: host)
            var c = RenderChain(kind: .rack, engine: r.rackName, plugins: r.plugins, inputs: shape.inputs,
                                outputs: shape.outputs)
            c.mix = r.mix ?? 1
            c.gainDB = r.gainDB ?? 0
            return .success(c)
        }
        if !r.plugins.isEmpty {
            return .failure(RenderError(.badInput, "give either a preset or --plugin, not both"))
        }
        let chains = (p.recorder.map { _ in ["recorder"] } ?? []) + (p.player.map { _ in ["player"] } ?? []) + p.racks.map(\.name)
        var engine = r.engine ?? section.engine
        if engine == nil, let take {
            engine = take.dryChannels != nil && take.plugins?.isEmpty == false ? "recorder"
                : p.racks.count == 1 ? p.racks[0].name : nil
        }
        if engine == nil {
            if p.racks.count == 1 { engine = p.racks[0].name }
            else if p.racks.isEmpty, p.recorder?.plugins.isEmpty == false { engine = "recorder" }
            else if p.racks.isEmpty, p.player?.plugins.isEmpty == false { engine = "player" }
        }
        guard let engine else {
            return .failure(RenderError(.badInput, "which chain? give --engine (this preset has: "
                                        + chains.joined(separator: ", ") + ")"))
        }
        let saved = { (e: String) in p.session.restorePlugins ? p.session.pluginStateDirectory(engine: e) : nil }
        var c: RenderChain
        switch engine {
        case "recorder":
            guard let rec = p.recorder else { return .failure(RenderError(.badInput, "the preset has no [recorder]")) }
            c = RenderChain(kind: .recorder, engine: "recorder", plugins: rec.plugins, inputs: rec.ports.count,
                            outputs: rec.ports.count)
        case "player":
            guard let pl = p.player else { return .failure(RenderError(.badInput, "the preset has no [player]")) }
            c = RenderChain(kind: .player, engine: "player", plugins: pl.plugins, inputs: pl.ports.count,
                            outputs: pl.ports.count)
            c.playerGainDB = pl.gainDB
        default:
            guard let rack = p.racks.first(where: { $0.name == engine }) else {
                return .failure(RenderError(.badInput, "'\(engine)' is not a chain of this preset (chains: "
                                            + chains.joined(separator: ", ") + ")"))
            }
            let shape = ChainLayout.throughShape(rack.plugins, inputs: rack.inputs?.count, outputs: rack.outputs?.count,
                                                 label: "rack \(rack.name)", host: host)
            c = RenderChain(kind: .rack, engine: rack.name, plugins: rack.plugins, inputs: shape.inputs,
                            outputs: shape.outputs)
            c.mix = rack.mix
            c.gainDB = rack.gainDB
        }
        if c.plugins.isEmpty && take == nil {
            // (With a take, the chain may come from its report: checked once it has.)
            return .failure(RenderError(.badInput, "the \(engine) has no plugins: nothing to render through"))
        }
        if let m = r.mix { c.mix = m }
        if let g = r.gainDB { c.gainDB = g }
        c.savedState = saved(engine)
        c.strict = p.session.onPluginError != .bypass
        return .success(c)
    }

    /// What a take gives a render of `chain`: the take's own dry channels (the recorder's chain), or the files the
    /// player played beside it (a rack's or the player's chain).
    static func takeSources(_ take: TakeSidecar, report: String, chain: RenderChain) -> Result<[RenderInput], RenderError> {
        let name = (report as NSString).lastPathComponent
        guard take.controlLog != nil else {
            return .failure(RenderError(.badInput, "\(name) has no control log (a report of an older Tandem): render its"
                                        + " sources with --period and --cycle-offset instead"))
        }
        let base = (report as NSString).deletingLastPathComponent
        func absolute(_ p: String) -> String { p.hasPrefix("/") || base.isEmpty ? p : (base as NSString).appendingPathComponent(p) }
        if chain.kind == .recorder {
            guard let dry = take.dryChannels else {
                return .failure(RenderError(.badInput, "take \(take.take) has no dry channels to render again (record"
                                            + " with dry = true in [recorder])"))
            }
            guard !take.stems else {
                return .failure(RenderError(.badInput, "take \(take.take) is in stems: render its dry files as inputs"))
            }
            return .success(take.chunks.flatMap(\.files).map { RenderInput(path: absolute($0), channels: dry) })
        }
        guard let playback = take.playback, !playback.files.isEmpty else {
            return .failure(RenderError(.badInput, "take \(take.take) was not recorded beside the player (with-recorder):"
                                        + " give the files the \(chain.engine) took as inputs"))
        }
        guard (playback.startItem ?? 0) == 0, (playback.startFrame ?? 0) == 0 else {
            return .failure(RenderError(.badInput, "take \(take.take)'s playback did not start at its queue's top"))
        }
        return .success(playback.files.map { RenderInput(path: absolute($0)) })
    }

    /// Whether `path` is a Standard MIDI File (it starts with `MThd`).
    static func isMIDI(_ path: String) -> Bool {
        guard let h = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? h.close() }
        return (try? h.read(upToCount: 4)) == Data("MThd".utf8)
    }

    /// Whether `path` names a folder: one that is there, or any path ending in '/' (made when the render starts, see
    /// `folderToMake`; without the rule `-o out/` wrote `./out.wav`).
    static func isFolder(_ path: String) -> Bool {
        if path.hasSuffix("/") { return true }
        var d: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &d) && d.boolValue
    }

    /// The container an output's extension names (nil: none known).
    static func formatFromExtension(_ path: String) -> AudioFormat? {
        switch (path as NSString).pathExtension.lowercased() {
        case "wav": return AudioFormat(container: .wav)
        case "rf64": return AudioFormat(container: .rf64)
        case "flac": return AudioFormat(container: .flac, sample: .int24)
        case "ogg": return AudioFormat(container: .ogg)
        case "opus": return AudioFormat(container: .opus)
        case "mp3": return AudioFormat(container: .mp3)
        default: return nil
        }
    }

    static func takeFormat(_ t: TakeSidecar) -> AudioFormat? {
        guard let c = Container(rawValue: t.format) else { return nil }
        return AudioFormat(container: c, sample: SampleFormat(rawValue: t.sampleFormat) ?? .float32)
    }

    /// The output file of job `number` (from 1) over `input`.
    static func outputPath(_ template: String, input: String, number: Int, session: String, format: AudioFormat) -> String {
        var folder = (template as NSString).deletingLastPathComponent
        var name = (template as NSString).lastPathComponent
        if isFolder(template) {
            folder = template
            name = "{input}"
        }
        var ext = (name as NSString).pathExtension
        if formatFromExtension(name) != nil { name = (name as NSString).deletingPathExtension } else { ext = format.container.fileExtension }
        let stem = (input as NSString).deletingPathExtension
        let safe = stem.replacingOccurrences(of: "{", with: "_").replacingOccurrences(of: "}", with: "_")
        let named = name.replacingOccurrences(of: "{input}", with: safe)
        let rendered = FileNameTemplate(named).render(.init(session: session, take: number, date: Date()), fileExtension: ext)
        return folder.isEmpty ? rendered : (folder as NSString).appendingPathComponent(rendered)
    }
}
