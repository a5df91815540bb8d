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

    /// Reads `TANDEM_FAULT_STALL_WRITER` from the environment.
    public static func fromEnvironment() -> RecorderFaults {
        guard let v = ProcessInfo.processInfo.environment["TANDEM_FAULT_STALL_WRITER"] else { return RecorderFaults() }
        let parts = v.split(separator: ":").compactMap { Double($0) }
        guard parts.count == 2 else { return RecorderFaults() }
        return RecorderFaults(stallAfterSeconds: parts[0], stallSeconds: parts[1])
    }
}
