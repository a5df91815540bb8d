import ArgumentParser
import Foundation
import Logging
import Plugins
import Presets
import Render
import SoundFile

/// `tandem render`: a chain over files, offline, as fast as the machine allows, with no JACK server; the result is
/// what the live rig would have produced (docs/RENDER.md).
struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render files through a rack's chain, or the recorder's or player's insert chain, offline.",
        discussion: """
            The chain comes from a preset (its [[rack]], [recorder] or [player] plugins, saved plugin state and \
            [render] table) or from --plugin options. Each input is its own job and its own output (several inputs \
            need a template: -o 'out/{input}.wav'); a MIDI file plays into an instrument rack. Nothing is ever \
            overwritten; an output appears only when it is complete, with its report (NAME.json) beside it. \
            --take renders a take again, through the chain it was recorded with and the control changes made while \
            it recorded, at the same frames. Exit codes: 0 every job rendered, 2 bad input (nothing started, or a \
            job's input was refused), 4 a disk error, 1 a job failed otherwise (a plugin crashed: its signal is said; \
            or hung: killed after --job-timeout), 130/143 stopped by SIGINT/SIGTERM (nothing unfinished is left).
            """)

    @Argument(help: ArgumentHelp("A preset (.toml), then the input files; or the input files alone with --preset or --plugin.",
                                 valueName: "PRESET-OR-INPUT"))
    var files: [String] = []

    @Option(name: .shortAndLong, help: ArgumentHelp("The output file; for several inputs a folder or a template with {input} or {take} (also {session}, {date}, {time}).", valueName: "FILE|TEMPLATE"))
    var output: String?

    @Option(name: .long, help: "Preset file (instead of a first argument ending in .toml).")
    var preset: String?

    @Option(name: .long, help: "Override a preset key, e.g. --set render.period=256 (repeatable).")
    var set: [String] = []

    @Option(name: .long, help: ArgumentHelp("Which chain of the preset: recorder, player or a rack's name (default: its only rack).", valueName: "ENGINE"))
    var engine: String?

    @OptionGroup var plugins: PluginOptions

    @Option(name: .long, help: "The rack's name with --plugin (automation commands name it).")
    var name = "rack"

    @Option(name: .long, help: "Input channels of a --plugin chain (default: what its first plugin takes).")
    var inputs: Int?

    @Option(name: .long, help: "Output channels of a --plugin chain (default: what the chain gives).")
    var outputs: Int?

    @Option(name: .long, help: "The chain's dry/wet mix, 0 to 1.")
    var mix: Double?

    @Option(name: .long, help: "The chain's output gain in dB (negative values as --gain=-6).")
    var gain: Double?

    @Option(name: .long, help: "Frames per cycle: the live period the result must equal (default 1024, or [render] period).")
    var period: Int?

    @Option(name: .long, help: "The chain's rate in Hz (default: each input's own; other rates are converted with libsoxr).")
    var rate: Int?

    @Option(name: .long, help: ArgumentHelp("Resampling quality: low, medium, high, very-high.", valueName: "QUALITY"))
    var resampleQuality: String?

    @Option(name: .long, help: "Where the input's first frame falls in its cycle (a take's cycleOffset).")
    var cycleOffset: Int?

    @Option(name: .long, help: "Seconds of silence the chain runs before the input (default 1).")
    var preroll: Double?

    @Option(name: .long, help: ArgumentHelp("How long to run past the input's end: 'silence' (until the output stays silent, the default) or seconds.", valueName: "silence|SECONDS"))
    var tail: String?

    @Option(name: .long, help: "The longest tail 'silence' runs, in seconds (default 30).")
    var tailLimit: Double?

    @Option(name: .long, help: ArgumentHelp("Output format: wav, rf64, flac, ogg, opus, mp3 (default: from the output's extension).", valueName: "FORMAT"))
    var format: String?

    @Option(name: .long, help: ArgumentHelp("Sample format: float32, int24, int16.", valueName: "SAMPLE"))
    var sample: String?

    @Option(name: .long, help: "Encoder quality 0 to 1 (lossy formats, FLAC compression).")
    var quality: Double?

    @Option(name: .long, help: ArgumentHelp("An automation file: lines 'AT ADDRESS ARGS...' or 'AT midi BYTES...' (docs/RENDER.md).", valueName: "FILE"))
    var automation: String?

    @Option(name: .long, help: ArgumentHelp("The input files' channels to render, from 1, e.g. 3,4.", valueName: "LIST"))
    var channels: String?

    @Option(name: .long, help: ArgumentHelp("A take's report: render that take again (its dry channels or its playback, its control log).", valueName: "REPORT"))
    var take: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Bring each output to this integrated loudness (LUFS, -70 to 0; 'ebu' is -23) with one gain, measured on the chain's output (docs/RENDER.md).", valueName: "LUFS|ebu"))
    var normalize: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("With --normalize: the true peak an output may reach (dBTP, -60 to 0; default -1); a gain that would pass it is refused unless a limiter is in the chain.", valueName: "DBTP"))
    var truePeakCeiling: Double?

    @Option(name: .long, help: "Jobs run at once (each in its own process).")
    var jobs: Int?

    @Option(name: .long, help: ArgumentHelp("A job that gives no sign of progress for this long is killed and reported as hung (default 60; jobs in their own process).", valueName: "SECONDS"))
    var jobTimeout: Double?

    @Flag(name: .long, inversion: .prefixedNo, help: "Run each job in its own process, so a crashing plugin fails only its job and a hanging one is killed (default: when there is more than one input, or a job timeout is given).")
    var isolate: Bool?

    @Flag(name: .long, help: "Progress and results as JSON lines on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log more.")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Log only warnings and errors.")
    var quiet = false

    /// A child of a batch: reads its job as JSON on stdin and answers on fd 3.
    @Flag(name: .long, help: .hidden)
    var job = false

    func validate() throws {
        if job { return }
        if let n = jobs, !Limits.renderJobs.contains(n) { throw ValidationError("--jobs must be 1 to \(Limits.renderJobs.upperBound)") }
        if let t = jobTimeout, !Limits.contains(Limits.renderJobTimeoutSeconds, t) {
            throw ValidationError("--job-timeout must be \(Limits.describe(Limits.renderJobTimeoutSeconds)) seconds")
        }
        if isolate == false, let n = jobs, n > 1 {
            throw ValidationError("--no-isolate runs the jobs one after another in this process: it cannot run \(n) at"
                                  + " once (--jobs \(n)); leave out one of them")
        }
        if isolate == false, jobTimeout != nil {
            throw ValidationError("--job-timeout needs each job in its own process to kill a hung one: it cannot be used"
                                  + " with --no-isolate")
        }
        if let p = period, !Limits.renderPeriod.contains(p) {
            throw ValidationError("--period must be \(Limits.renderPeriod.lowerBound) to \(Limits.renderPeriod.upperBound)")
        }
        if let r = rate, !Limits.renderRate.contains(r) {
            throw ValidationError("--rate must be \(Limits.renderRate.lowerBound) to \(Limits.renderRate.upperBound) Hz")
        }
        if let t = tail, t != "silence", !(Double(t).map { Limits.contains(Limits.renderTailSeconds, $0) } ?? false) {
            throw ValidationError("--tail is 'silence' or seconds (\(Limits.describe(Limits.renderTailSeconds)))")
        }
        if let t = tailLimit, !Limits.contains(Limits.renderTailSeconds, t) {
            throw ValidationError("--tail-limit must be \(Limits.describe(Limits.renderTailSeconds)) seconds")
        }
        if let p = preroll, !Limits.contains(Limits.renderPrerollSeconds, p) {
            throw ValidationError("--preroll must be \(Limits.describe(Limits.renderPrerollSeconds)) seconds")
        }
        if let m = mix, !Limits.contains(Limits.mix, m) { throw ValidationError("--mix must be 0 to 1") }
        if let g = gain, !Limits.contains(Limits.gainDB, g) { throw ValidationError("--gain must be \(Limits.describe(Limits.gainDB, unit: " dB"))") }
        if let q = quality, !Limits.contains(Limits.quality, q) { throw ValidationError("--quality must be 0 to 1") }
        if let f = format, Container(rawValue: f) == nil {
            throw ValidationError("unknown --format '\(f)' (\(Container.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        if let s = sample, SampleFormat(rawValue: s) == nil {
            throw ValidationError("unknown --sample '\(s)' (\(SampleFormat.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        if let q = resampleQuality, ResampleQuality(rawValue: q) == nil {
            throw ValidationError("unknown --resample-quality '\(q)' (\(ResampleQuality.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        if channelList == nil && channels != nil { throw ValidationError("--channels is a list of channels from 1, e.g. 1,2") }
        if let n = normalize, case .failure(let why) = RenderSection.loudnessTarget(n) {
            throw ValidationError("--normalize \(n): \(why.description)")
        }
        if let c = truePeakCeiling, case .failure(let why) = RenderSection.truePeakCeiling(c) {
            throw ValidationError("--true-peak-ceiling: \(why.description)")
        }
        if let n = inputs, !(0...Limits.channels.upperBound).contains(n) { throw ValidationError("--inputs must be 0 to \(Limits.channels.upperBound)") }
        if let n = outputs, !Limits.channels.contains(n) { throw ValidationError("--outputs must be 1 to \(Limits.channels.upperBound)") }
    }

    var channelList: [Int]? {
        guard let channels else { return nil }
        let list = channels.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !list.isEmpty, list.allSatisfy({ ($0 ?? 0) >= 1 && ($0 ?? 0) <= Limits.channels.upperBound }) else { return nil }
        return list.compactMap { $0 }
    }

    func run() throws {
        bootstrapLogging()
        if job { RenderChild.run() }
        let stop = RenderStop.install()
        var request = RenderRequest()
        var inputs = files
        var presetPath = preset
        if presetPath == nil, let first = inputs.first, first.hasSuffix(".toml") {
            presetPath = first
            inputs.removeFirst()
        }
        if let p = presetPath {
            let path = resolvePreset(p)
            let (loaded, problems) = PresetLoader.load(path: path, overrides: set)
            guard let loaded, problems.isEmpty else {
                for p in problems { Console.err("\(p)\n") }
                Foundation.exit(ExitStatus.badInput.rawValue)
            }
            request.preset = loaded
        } else if !set.isEmpty {
            fail(.badInput, "--set needs a preset")
        }
        request.engine = engine
        request.plugins = plugins.specs
        request.rackName = name
        request.rackInputs = inputs.isEmpty ? self.inputs : self.inputs
        request.rackOutputs = outputs
        request.mix = mix
        request.gainDB = gain
        request.inputs = inputs.map { HomeFolder.expand($0) }
        request.output = output.map { HomeFolder.expand($0) }
        if format != nil || sample != nil || quality != nil {
            let container = format.flatMap(Container.init(rawValue:)) ?? request.preset?.render?.format?.container ?? .wav
            let s = sample.flatMap(SampleFormat.init(rawValue:)) ?? (container == .flac ? .int24 : .float32)
            request.format = AudioFormat(container: container, sample: s, quality: quality)
        }
        request.period = period
        request.sampleRate = rate
        request.quality = resampleQuality.flatMap(ResampleQuality.init(rawValue:))
        request.cycleOffset = cycleOffset
        request.prerollSeconds = preroll
        request.tail = tail.map { $0 == "silence" ? .silence : .seconds(Double($0) ?? 0) }
        request.tailLimitSeconds = tailLimit
        request.automationFile = automation
        request.channels = channelList
        request.take = take
        request.normalize = normalize.flatMap { try? RenderSection.loudnessTarget($0).get() }
        request.truePeakCeiling = truePeakCeiling
        if request.preset == nil || plugins.onPluginError != "fail" { request.strict = plugins.strict }

        let planned: [RenderJob]
        switch RenderPlan.jobs(request) {
        case .failure(let problems):
            for p in problems.list { Console.err("tandem: \(p)\n") }
            Foundation.exit(ExitStatus.badInput.rawValue)
        case .success(let j): planned = j
        }
        let section = request.preset?.render
        let parallel = jobs ?? section?.jobs ?? 1
        if isolate == false && parallel > 1 {
            fail(.badInput, "--no-isolate runs the jobs one after another in this process: it cannot run \(parallel) at"
                 + " once (the preset's [render] jobs = \(parallel)); give --jobs 1 or leave out --no-isolate")
        }
        if isolate == false, let t = section?.jobTimeoutSeconds {
            fail(.badInput, "--no-isolate cannot kill a hung job: the preset's [render] job_timeout = \(Limits.number(t))"
                 + " needs each job in its own process; leave out --no-isolate")
        }
        let timeout = jobTimeout ?? section?.jobTimeoutSeconds
        let batch = RenderBatch(jobs: planned, parallel: parallel,
                                isolate: isolate ?? (planned.count > 1 || timeout != nil), json: json,
                                jobTimeout: timeout ?? RenderSection.defaultJobTimeout, stop: stop)
        Foundation.exit(batch.run())
    }

    func bootstrapLogging() {
        let level: Logger.Level = verbose ? .debug : quiet || json ? .warning : .info
        LoggingSystem.bootstrap { label in
            var h = ConsoleLogHandler(label: label)
            h.logLevel = level
            return h
        }
    }
}
