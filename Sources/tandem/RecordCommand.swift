import Coordinator
import Plugins
import Presets
import ArgumentParser
import Engine
import Foundation
import Jack
import Logging
import SoundFile
import Takes

struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record JACK input ports to files until stopped (SIGINT/SIGTERM), a duration or a stop time.",
        discussion: """
            Signals: SIGINT or SIGTERM end the take after every captured frame and exit 0; SIGUSR1 starts a take \
            (with --armed), SIGUSR2 ends the running take and keeps the recorder armed; with --trigger-threshold or \
            --schedule (the recorder runs by itself) SIGUSR2 adds a marker instead.
            Takes that run themselves: --trigger-threshold starts a take per burst of sound (with --preroll kept \
            before it and --postroll after), --schedule records in local time windows, --rotate-on-clock cuts chunks \
            on the wall clock, --keep-days / --min-free delete old takes of this session.
            """)

    @OptionGroup var server: ServerOptions

    @Option(name: .long, help: "JACK client name.")
    var client = "tandem-rec"

    @Option(name: [.short, .long], help: "Number of input ports (in_1..in_N), when --port is not given.")
    var channels: Int?

    @Option(name: .long, help: "Input port short name, once per port, in channel order (repeatable).")
    var port: [String] = []

    @Option(name: .long, help: "MIDI input port short name (repeatable): what it receives during a take is written to <take>.mid beside the audio.")
    var midiPort: [String] = []

    @Option(name: .long, help: "Source port (exact name or regular expression) to connect, in channel order (repeatable).")
    var connect: [String] = []

    @Option(name: [.short, .long], help: "Output directory (must exist).")
    var dir = "."

    @Option(name: .long, help: "Session name, used in file names.")
    var session = "take"

    @Option(name: .long, help: "File name template without extension: {session} {take} {take:03} {date} {time} {channel} {chunk}.")
    var template = FileNameTemplate.defaultTemplate

    @Option(name: [.short, .long], help: "Container: wav (RF64 past 4 GiB), rf64, flac, ogg, opus, mp3.")
    var format = "wav"

    @Option(name: .long, help: "Sample format for wav/rf64/flac: float32, int24, int16 (default: float32; int24 for flac, which stores integers only).")
    var sample: String?

    /// The sample format asked for, else the container's default (FLAC refuses float32, the others' default).
    var sampleFormat: SampleFormat {
        sample.flatMap(SampleFormat.init(rawValue:)) ?? (Container(rawValue: format) == .flac ? .int24 : .float32)
    }

    @Option(name: .long, help: "Encoder quality 0...1 (Vorbis/Opus/MP3 quality, FLAC compression).")
    var quality: Double?

    @Flag(name: .long, help: "One mono file per channel instead of one interleaved file.")
    var stems = false

    @Option(name: .long, help: "Start a new chunk file every N seconds (sample-accurate).")
    var rotate: Double?

    @Option(name: .long, help: "Start a new chunk file at this size (bytes; K, M, G suffixes allowed).")
    var rotateSize: String?

    @Option(name: .long, help: "Seconds kept while armed; a take starts this long before its start command.")
    var preroll: Double = 0

    @Option(name: [.customShort("t"), .long], help: "End the take (and exit) after this many seconds.")
    var duration: Double?

    @Option(name: .long, help: "End the take (and exit) at this local time, HH:MM or HH:MM:SS.")
    var stopAt: String?

    @Flag(name: .long, help: "Start armed: record nothing until SIGUSR1.")
    var armed = false

    @Option(name: .long, help: "Capture ring size in seconds.")
    var ring: Double = 4

    @OptionGroup var plugins: PluginOptions

    @Flag(name: .long, help: "Also record the unprocessed input, as extra channels after the processed ones (needs --plugin).")
    var dry = false

    @Option(name: .long, help: "When the JACK server goes away: stop (finalize, exit 3) or resume (wait for it, then a new take).")
    var onServerLoss = "stop"

    @Option(name: .long, help: "On a disk error: stop (finalize, exit 4) or continue (finalize, stay armed).")
    var onDiskError = "stop"

    @Option(name: .long, parsing: .unconditional, help: "Level trigger: start a take when the level stays at or over this many dBFS for --trigger-attack (a take per trigger).")
    var triggerThreshold: Double?

    @Option(name: .long, parsing: .unconditional, help: "Level trigger: the take ends when the level stays under this many dBFS for --trigger-hold (default: 6 dB under the threshold).")
    var triggerStopThreshold: Double?

    @Option(name: .long, help: "Level trigger: peak or rms.")
    var triggerMeasure = "peak"

    @Option(name: .long, help: "Level trigger: the level's window in seconds.")
    var triggerWindow: Double = 0.01

    @Option(name: .long, help: "Level trigger: channels watched: any, all, or 1-based numbers like 1,3.")
    var triggerChannels = "any"

    @Option(name: .long, help: "Level trigger with listed channels: any or all of them must be loud.")
    var triggerCombine: String?

    @Option(name: .long, help: "Level trigger: seconds the level must stay over the threshold.")
    var triggerAttack: Double = 0.01

    @Option(name: .long, help: "Level trigger: seconds the level must stay under the stop threshold before the take ends.")
    var triggerHold: Double = 2

    @Option(name: .long, help: "Level trigger: seconds kept after the hold.")
    var postroll: Double = 0

    @Option(name: .long, help: "Level trigger: a take is at least this many seconds long.")
    var minLength: Double = 0

    @Option(name: .long, help: "Level trigger: a take is at most this many seconds long (the next one starts on the next frame).")
    var maxLength: Double?

    @Flag(name: .long, help: "Measure EBU R128 loudness (momentary, short-term, integrated, range, true peak) of each stereo pair live and into every take's report.")
    var loudness = false

    @Option(name: .long, help: "Loudness programmes as channel runs, e.g. 1-2,3 (1, 2, 5 or 6 channels each; implies --loudness).")
    var loudnessGroups: String?

    @Option(name: .long, help: "Record only in these local times, e.g. 'Mon-Fri 09:00-17:30' (repeatable).")
    var schedule: [String] = []

    @Flag(name: .long, help: "Cut chunks on the wall clock: --rotate divides a day and each chunk starts on its boundary (a new chunk on the hour with --rotate 3600).")
    var rotateOnClock = false

    @Option(name: .long, help: "Retention: delete this session's chunks that ended more than this many days ago.")
    var keepDays: Double?

    @Option(name: .long, help: "Retention: delete this session's oldest chunks while less than this is free (K, M, G, T suffixes).")
    var minFree: String?

    @Option(name: .long, help: "Retention: never delete a chunk younger than this many seconds.")
    var retentionGuard: Double = 3600

    @Flag(name: .long, help: "Retention: log what would be deleted, delete nothing.")
    var retentionDryRun = false

    @Option(name: .long, help: "Retention and the take being written: keep (none of its chunks) or closed-chunks.")
    var retentionRunningTake = "keep"

    @OptionGroup var controlOptions: ControlOptions

    func validate() throws {
        if let channels, !Limits.channels.contains(channels) { throw ValidationError("--channels must be 1 to \(Limits.channels.upperBound)") }
        if channels != nil && !port.isEmpty { throw ValidationError("give either --channels or --port, not both") }
        if Container(rawValue: format) == nil {
            throw ValidationError("unknown --format '\(format)' (wav, rf64, flac, ogg, opus, mp3)")
        }
        if let sample, SampleFormat(rawValue: sample) == nil {
            throw ValidationError("unknown --sample '\(sample)' (float32, int24, int16)")
        }
        if let rotateSize, Preset.bytes(rotateSize) == nil {
            throw ValidationError("--rotate-size '\(rotateSize)' is not a size (e.g. 500M, 2G, 1048576)")
        }
        if let stopAt, Preset.secondsOfDay(stopAt) == nil {
            throw ValidationError("--stop-at '\(stopAt)' is not a time of day (HH:MM or HH:MM:SS)")
        }
        if ServerLossPolicy(rawValue: onServerLoss) == nil {
            throw ValidationError("unknown --on-server-loss '\(onServerLoss)' (stop, resume)")
        }
        if DiskErrorPolicy(rawValue: onDiskError) == nil {
            throw ValidationError("unknown --on-disk-error '\(onDiskError)' (stop, continue)")
        }
        if let loudnessGroups, case .failure(let why) = LoudnessGroups.parse(
            loudnessGroups.split(separator: ",").map(String.init), channels: port.isEmpty ? (channels ?? 2) : port.count) {
            throw ValidationError("--loudness-groups '\(loudnessGroups)': \(why)")
        }
        if TriggerMeasure(rawValue: triggerMeasure) == nil {
            throw ValidationError("unknown --trigger-measure '\(triggerMeasure)' (peak, rms)")
        }
        if triggerChannelsValue == nil {
            throw ValidationError("--trigger-channels '\(triggerChannels)' is not any, all or a list of channel numbers like 1,3")
        }
        if let c = triggerCombine, TriggerCombine(rawValue: c) == nil {
            throw ValidationError("unknown --trigger-combine '\(c)' (any, all)")
        }
        if let minFree, Preset.bytes(minFree) == nil {
            throw ValidationError("--min-free '\(minFree)' is not a size (e.g. 20G)")
        }
        if RunningTakeRetention(rawValue: retentionRunningTake) == nil {
            throw ValidationError("unknown --retention-running-take '\(retentionRunningTake)' (keep, closed-chunks)")
        }
        if triggerThreshold != nil && armed { throw ValidationError("give --armed or --trigger-threshold, not both") }
        if !schedule.isEmpty && armed { throw ValidationError("--schedule records in its windows by itself: not with --armed") }
        let problems = makeConfig().problems()
        if !problems.isEmpty { throw ValidationError(problems.joined(separator: "\n")) }
    }

    /// The recorder configuration the session builds from `makePreset()` (what `validate` checks).
    func makeConfig() -> RecorderConfig {
        let p = makePreset()
        return RecorderConfig(section: p.recorder ?? RecorderSection(), session: p.session)
    }

    /// The session this command runs: a preset with one recorder, built from the options (what `run` would read
    /// from a file saying the same).
    func makePreset() -> Preset {
        var p = Preset()
        p.session = SessionRunner.oneShotSession(name: session, server: server.server, directory: dir,
                                                 onServerLoss: onServerLoss, strictPlugins: plugins.strict,
                                                 controlPort: controlOptions.controlPort)
        p.session.onDiskError = DiskErrorPolicy(rawValue: onDiskError) ?? .stop
        p.session.exitAfter = duration != nil || stopAt != nil ? .take : nil
        var r = RecorderSection()
        r.client = client
        r.ports = !port.isEmpty ? port : (1...(channels ?? 2)).map { "in_\($0)" }
        r.midiPorts = midiPort
        r.format = AudioFormat(container: Container(rawValue: format) ?? .wav,
                               sample: sampleFormat, quality: quality)
        r.template = template
        r.stems = stems
        r.rotateSeconds = rotate
        r.rotateBytes = rotateSize.flatMap(Preset.bytes)
        r.prerollSeconds = preroll
        r.maxDurationSeconds = duration
        r.stopAt = stopAt
        r.start = armed ? .armed : triggerThreshold != nil ? .level : .immediately
        if let threshold = triggerThreshold {
            var g = TriggerSection()
            g.measure = TriggerMeasure(rawValue: triggerMeasure) ?? .peak
            g.windowSeconds = triggerWindow
            g.channels = triggerChannelsValue ?? .any
            g.thresholdDB = threshold
            g.stopThresholdDB = triggerStopThreshold ?? max(Limits.triggerDBFS.lowerBound, threshold - 6)
            g.attackSeconds = triggerAttack
            g.holdSeconds = triggerHold
            g.postrollSeconds = postroll
            g.minLengthSeconds = minLength
            g.maxLengthSeconds = maxLength
            r.trigger = g
        }
        r.schedule = schedule.isEmpty ? nil : schedule
        r.rotateOnClock = rotateOnClock
        if keepDays != nil || minFree != nil {
            var k = RetentionSection()
            k.keepDays = keepDays
            k.minFreeBytes = minFree.flatMap(Preset.bytes)
            k.guardSeconds = retentionGuard
            k.dryRun = retentionDryRun
            k.runningTake = RunningTakeRetention(rawValue: retentionRunningTake) ?? .keep
            r.retention = k
        }
        r.ringSeconds = ring
        r.plugins = plugins.specs
        r.recordDry = dry
        if let loudnessGroups,
           case .success(let g) = LoudnessGroups.parse(loudnessGroups.split(separator: ",").map(String.init),
                                                       channels: r.ports.count) {
            r.loudness = g
        } else if loudness {
            r.loudness = .pairs(channels: r.ports.count)
        }
        p.recorder = r
        return p
    }

    /// `--trigger-channels` (with `--trigger-combine`) as the preset says it; nil when unreadable.
    var triggerChannelsValue: TriggerChannels? {
        switch triggerChannels {
        case "any": return .any
        case "all": return .all
        default:
            let list = triggerChannels.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard !list.isEmpty, list.allSatisfy({ $0 != nil }) else { return nil }
            return .listed(list.compactMap { $0 }, all: triggerCombine == "all")
        }
    }

    func run() throws {
        let runner = SessionRunner(server: server, json: controlOptions.json, noView: controlOptions.noView, liveViewOnPipes: false)
        var preset = makePreset()
        // Connected before the first take starts, so the take's first frame is the sources' and its report names
        // them: armed by the first apply, started after the second.
        let start = preset.recorder?.start
        // (A level-triggered or scheduled recorder decides its takes by itself: it starts as it is.)
        let selfRunning = start == .level || preset.recorder?.schedule != nil
        if !connect.isEmpty && !selfRunning { preset.recorder?.start = .armed }
        runner.checkHTTP(controlOptions.httpAddress)
        runner.start(preset)
        guard let recorder = runner.session.recorder else { fail(.failure, "the recorder did not start") }
        for r in recorder.recovered {
            say("recovered interrupted take \(r.report.take): \(r.report.frames) frames; report \(r.sidecar)")
        }
        if connect.isEmpty {
            Console.err("tandem: note: \(recorder.ports.count) input port(s) \(recorder.client.name):\(recorder.ports.first?.shortName ?? "")... "
                        + "are not connected: silence is recorded until a patchbay or jack_connect connects them "
                        + "(or give --connect 'system:capture_.*')\n")
        } else {
            preset.connections = runner.rules(connect, ports: recorder.ports, towardUs: true, option: "--connect",
                                              owner: "the recorder \(recorder.client.name)", widen: port.isEmpty ? "-c" : nil)
            preset.recorder?.start = start ?? .immediately
            runner.reapply(preset)
            if start == .immediately && !selfRunning { runner.session.startTake() }
        }
        runner.openControl(explicit: controlOptions.controlPort, fallback: nil)
        runner.openHTTP(controlOptions.httpAddress)
        runner.exit(runner.loop())
    }
}
