import Presets
import Foundation
import SoundFile

/// Everything that shapes one recorder: its JACK client, ports, files and take rules.
public struct RecorderConfig: Sendable, Equatable {
    /// JACK client name.
    public var clientName = "tandem-rec"
    /// Short names of the input ports, in channel order.
    public var ports: [String] = ["in_1", "in_2"]
    /// Short names of the MIDI input ports (none: no MIDI file). What they receive during a take goes into
    /// `<take>.mid` beside the audio.
    public var midiPorts: [String] = []
    /// Folder the takes go to (must exist and be writable).
    public var directory = "."
    /// Session name, used in file names.
    public var session = "take"
    /// File name template without extension; see `FileNameTemplate`.
    public var template = FileNameTemplate.defaultTemplate
    public var format = AudioFormat()
    /// One mono file per channel instead of one interleaved file.
    public var stems = false
    /// Start a new chunk file every this many seconds (nil: never).
    public var rotateSeconds: Double?
    /// Start a new chunk file when a file reaches this many bytes (nil: never).
    public var rotateBytes: Int?
    /// Seconds kept in memory while armed; a take starts this long before its start command.
    public var prerollSeconds: Double = 0
    /// A take ends by itself after this many seconds (nil: never).
    public var maxDurationSeconds: Double?
    /// Capture ring size in seconds (on top of the pre-roll).
    public var ringSeconds: Double = 4
    /// Number of the first take (a session that re-creates its recorder continues the count).
    public var firstTake = 1
    /// LV2 insert chain before the ring: what is recorded is what it outputs.
    public var plugins: [PluginSpec] = []
    /// Also record the unprocessed input, as extra channels (or stems) after the processed ones.
    public var recordDry = false
    /// Folder of plugin state saved by an earlier run, restored over the preset's values (nil: none).
    public var pluginState: String?
    /// Test-only fault injection (never set by presets).
    public var faults = RecorderFaults()
    /// Level-triggered takes (`start = "level"`): the rule, in the preset's units. Nil: takes start by command.
    public var trigger: TriggerSection?
    /// Local times to record in (`Schedule` entries as written); nil: any time.
    public var schedule: [String]?
    /// Chunks rotate on the local clock: `rotateSeconds` divides a day and each boundary is the frame of that
    /// wall-clock instant (a new chunk on the hour).
    public var rotateOnClock = false
    /// `[recorder.retention]`, applied by the disk writer at start and after each take or chunk.
    public var retention: RetentionSection?
    /// Loudness meters over these groups of the recorded ports (nil: none): live, and into every take's report.
    public var loudness: LoudnessGroups?
    /// The wall clock the recorder reads: the session's (`SessionEnvironment.clock`).
    public var clock = SessionClock()

    public init() {}

    /// Names of the recorded channels: the ports, then (with `recordDry`) the ports again with "-dry".
    public var recordedChannelNames: [String] { recordDry ? ports + ports.map { "\($0)-dry" } : ports }

    /// Every problem with this configuration, in words (empty when valid). Checks no files.
    public func problems() -> [String] {
        var out: [String] = []
        if let why = Limits.nameProblem(clientName, what: "the client name", bytes: Limits.clientNameBytes, allowSlash: true) { out.append(why) }
        if let why = Limits.nameProblem(session, what: "the session name", bytes: Limits.sessionNameBytes) { out.append(why) }
        if ports.isEmpty { out.append("a recorder needs at least one port") }
        if Set(ports).count != ports.count { out.append("port names must be unique") }
        if Set(midiPorts + ports).count != midiPorts.count + ports.count {
            out.append("MIDI port names must be unique and differ from the audio ports'")
        }
        for p in midiPorts where p.isEmpty || p.contains(":") { out.append("bad MIDI port name '\(p)' (empty or contains ':')") }
        if midiPorts.count > 16 { out.append("at most 16 MIDI ports") }
        if ports.count > Limits.channels.upperBound { out.append("at most \(Limits.channels.upperBound) ports") }
        for p in ports where p.isEmpty || p.contains(":") { out.append("bad port name '\(p)' (empty or contains ':')") }
        if let r = rotateSeconds, !Limits.contains(Limits.rotateSeconds, r) {
            out.append("rotation must be \(Limits.describe(Limits.rotateSeconds, unit: " seconds"))")
        }
        if let r = rotateBytes, !Limits.rotateBytes.contains(r) {
            out.append("rotation size must be \(Limits.describeSize(Limits.rotateBytes)) bytes")
        }
        if !Limits.contains(Limits.prerollSeconds, prerollSeconds) {
            out.append("pre-roll must be \(Limits.describe(Limits.prerollSeconds, unit: " seconds"))")
        }
        if let m = maxDurationSeconds, !Limits.contains(Limits.durationSeconds, m) {
            out.append("duration must be \(Limits.describe(Limits.durationSeconds, unit: " seconds"))")
        }
        if !Limits.contains(Limits.recorderRingSeconds, ringSeconds) {
            out.append("ring must be \(Limits.describe(Limits.recorderRingSeconds, unit: " seconds"))")
        }
        if let q = format.quality, !Limits.contains(Limits.quality, q) { out.append("quality must be 0 to 1") }
        if format.container == .flac && format.sample == .float32 {
            out.append("FLAC stores integers only: sample format int24 or int16")
        }
        if let why = FileNameTemplate(template).lengthProblem(session: session, channels: recordedChannelNames) {
            out.append(why)
        }
        out += FileNameTemplate(template).problems()
        if recordDry && plugins.isEmpty { out.append("recording the dry input needs a plugin chain") }
        if let g = loudness, case .failure(let why) = LoudnessGroups.parse(g.texts, channels: ports.count) {
            out.append("loudness groups: \(why)")
        }
        out += unattendedProblems()
        return out
    }

    /// Problems of the trigger, schedule, clock rotation and retention (the preset loader finds the same ones with
    /// file, line and key; this is the check for settings made by command-line options).
    func unattendedProblems() -> [String] {
        var out: [String] = []
        if let g = trigger {
            for (name, v) in [("threshold", g.thresholdDB), ("stop threshold", g.stopThresholdDB)]
            where !Limits.contains(Limits.triggerDBFS, v) {
                out.append("trigger \(name) must be \(Limits.describe(Limits.triggerDBFS, unit: " dBFS"))")
            }
            if g.stopThresholdDB > g.thresholdDB { out.append("trigger stop threshold must be at or under the threshold") }
            if !Limits.contains(Limits.triggerWindowSeconds, g.windowSeconds) {
                out.append("trigger window must be \(Limits.describe(Limits.triggerWindowSeconds, unit: " seconds"))")
            } else if g.windowSeconds > ringSeconds {
                out.append("trigger window (\(Limits.number(g.windowSeconds)) s) is longer than the ring (\(Limits.number(ringSeconds)) s)")
            } else if g.attackSeconds + g.windowSeconds > ringSeconds {
                out.append("trigger attack + window must fit in the ring (\(Limits.number(ringSeconds)) s)")
            }
            if !Limits.contains(Limits.triggerAttackSeconds, g.attackSeconds) {
                out.append("trigger attack must be \(Limits.describe(Limits.triggerAttackSeconds, unit: " seconds"))")
            }
            if !Limits.contains(Limits.triggerHoldSeconds, g.holdSeconds) {
                out.append("trigger hold must be \(Limits.describe(Limits.triggerHoldSeconds, unit: " seconds"))")
            }
            if !Limits.contains(Limits.prerollSeconds, g.postrollSeconds) {
                out.append("post-roll must be \(Limits.describe(Limits.prerollSeconds, unit: " seconds"))")
            }
            if !Limits.contains(Limits.triggerMinLengthSeconds, g.minLengthSeconds) {
                out.append("minimum length must be \(Limits.describe(Limits.triggerMinLengthSeconds, unit: " seconds"))")
            }
            if let m = g.maxLengthSeconds {
                if !Limits.contains(Limits.durationSeconds, m) {
                    out.append("maximum length must be \(Limits.describe(Limits.durationSeconds, unit: " seconds"))")
                } else if m < g.minLengthSeconds {
                    out.append("maximum length is shorter than the minimum length")
                } else if m <= prerollSeconds + g.attackSeconds + g.windowSeconds {
                    out.append("maximum length must be longer than pre-roll + attack + window")
                }
            }
            if case .listed(let list, _) = g.channels {
                if list.isEmpty || list.contains(where: { !(1...ports.count).contains($0) }) {
                    out.append("trigger channels are numbers 1 to \(ports.count) (the recorder's ports)")
                }
            }
        }
        if let texts = schedule {
            if texts.isEmpty { out.append("an empty schedule never records") }
            out += Schedule.parse(texts).problems.map { "schedule \($0)" }
        }
        if rotateOnClock {
            if let r = rotateSeconds {
                if r != r.rounded() || r < 1 || 86_400 % Int(r) != 0 {
                    out.append("clock rotation needs a rotation that divides a day in whole seconds (60, 300, 900, 1800, 3600 ...)")
                }
            } else {
                out.append("clock rotation needs a rotation time (e.g. 3600: a new chunk on every hour)")
            }
        }
        if let k = retention {
            if k.keepDays == nil && k.minFreeBytes == nil { out.append("a retention policy needs keep days, min free or both") }
            if let d = k.keepDays, !Limits.contains(Limits.retentionKeepDays, d) {
                out.append("retention keep days must be \(Limits.describe(Limits.retentionKeepDays, unit: " days"))")
            }
            if let f = k.minFreeBytes, !Limits.retentionFreeBytes.contains(f) { out.append("retention min free must be 64K to 1P") }
            if !Limits.contains(Limits.retentionGuardSeconds, k.guardSeconds) {
                out.append("retention guard must be \(Limits.describe(Limits.retentionGuardSeconds, unit: " seconds"))")
            }
            if let d = k.keepDays, d * 86_400 <= k.guardSeconds { out.append("retention keep days is within the guard time") }
        }
        return out
    }
}

/// Faults a test can inject into the disk writer, to prove what happens when the disk misbehaves.
/// The command line reads them from `TANDEM_FAULT_STALL_WRITER=AFTER_SECONDS:STALL_SECONDS`.
public struct RecorderFaults: Sendable, Equatable {
    /// Once a take holds this many seconds, the writer stalls (as a slow disk would) ...
    public var stallAfterSeconds: Double?
    /// ... for this long, once.
    public var stallSeconds: Double = 0

    public init(stallAfterSeconds: Double? = nil, stallSeconds: Double = 0) {
        self.stallAfterSeconds = stallAfterSeconds
        self.stallSeconds = stallSeconds
    }

    /// Reads `TANDEM_FAULT_STALL_WRITER` from `environment` (once, by `SessionEnvironment.fromProcess`).
    public static func from(environment: [String: String]) -> RecorderFaults {
        guard let v = environment["TANDEM_FAULT_STALL_WRITER"] else { return RecorderFaults() }
        let parts = v.split(separator: ":").compactMap { Double($0) }
        guard parts.count == 2 else { return RecorderFaults() }
        return RecorderFaults(stallAfterSeconds: parts[0], stallSeconds: parts[1])
    }
}
