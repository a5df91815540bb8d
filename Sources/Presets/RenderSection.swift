import Foundation
import Realtime
import SoundFile

/// How long a render runs past the end of its input: the chain's tail (a reverb, a delay).
public enum RenderTail: Sendable, Equatable, CustomStringConvertible {
    /// Until the output has stayed below `RenderSection.silenceDBFS` for `RenderSection.silenceSeconds` (at most the
    /// tail limit); the file ends after its last sound, never before the input's end.
    case silence
    /// Exactly this long (0: the output is as long as the input).
    case seconds(Double)

    public var description: String {
        switch self {
        case .silence: return "silence"
        case .seconds(let s): return Limits.number(s)
        }
    }
}

/// When an automation event takes effect: at an input frame, or at a time in seconds from the input's start.
public enum AutomationTime: Sendable, Equatable, CustomStringConvertible {
    case frame(Int)
    case seconds(Double)

    /// The input frame at `rate` (seconds are rounded down to a frame; nil: too far for a frame count).
    public func frame(rate: Int) -> Int? {
        switch self {
        case .frame(let f): return f
        case .seconds(let s): return Limits.frames(seconds: s, rate: Double(rate))
        }
    }

    /// "48000" or "1.5s": as an automation file writes it.
    public var description: String {
        switch self {
        case .frame(let f): return String(f)
        case .seconds(let s): return Limits.number(s) + "s"
        }
    }

    /// "48000", "1.5s", "1.5 s", "250ms": nil when `text` is none of these.
    public init?(_ text: String) {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let f = Int(t), f >= 0 {
            self = .frame(f)
            return
        }
        for (suffix, scale) in [("ms", 0.001), ("s", 1.0)] where t.hasSuffix(suffix) {
            let number = t.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
            if let d = Double(number), d.isFinite, d >= 0, !number.contains("e"), !number.contains("E") {
                self = .seconds(d * scale)
                return
            }
        }
        return nil
    }
}

/// One argument of an automation event's command, as the preset wrote it.
public enum AutomationValue: Sendable, Equatable {
    case text(String)
    case number(Double)
}

/// One `[[render.event]]`: a command of the command model (`command`, `args`) or MIDI bytes (`midi`), at `at`.
public struct AutomationEntry: Sendable, Equatable {
    public var at: AutomationTime
    /// The command's OSC address ("/tandem/plugin/set") and its arguments; nil for a MIDI event.
    public var address: String?
    public var args: [AutomationValue]
    /// A MIDI message for the chain's plugins that take MIDI.
    public var midi: [UInt8]?
    public var line: Int?

    public init(at: AutomationTime, address: String? = nil, args: [AutomationValue] = [], midi: [UInt8]? = nil,
                line: Int? = nil) {
        self.at = at
        self.address = address
        self.args = args
        self.midi = midi
        self.line = line
    }
}

/// The `[render]` table: how `tandem render` runs one of the preset's chains over files, as fast as the machine
/// allows, with no JACK server (docs/RENDER.md). The command line's options override it.
public struct RenderSection: Sendable, Equatable {
    /// The chain: "recorder", "player" or a rack's name (nil: the preset's only rack, else the recorder's chain,
    /// else the player's).
    public var engine: String?
    /// Frames per cycle: the live period the result must equal (nil: `defaultPeriod`).
    public var period: Int?
    /// The chain's rate (nil: each input's own); inputs at another rate are converted with libsoxr.
    public var sampleRate: Int?
    public var resampleQuality: ResampleQuality = .high
    /// Where the input's first frame falls in the first cycle (a live take's `cycleOffset`).
    public var cycleOffset = 0
    /// Silence the chain runs before the input, in seconds (rounded up to whole cycles): a live chain has run before
    /// any take, so plugins that glide to their settings have arrived.
    public var prerollSeconds: Double = 1
    public var tail: RenderTail = .silence
    /// The longest tail `silence` runs.
    public var tailLimitSeconds: Double = 30
    /// The output's format (nil: from the output's extension, else WAV float).
    public var format: AudioFormat?
    /// Files to render (each its own job).
    public var inputs: [String] = []
    /// The output file, or a template for several (`{input}`, `{take}` = job number, `{session}`, `{date}`,
    /// `{time}`).
    public var output: String?
    /// Jobs run at once (each in its own process when there is more than one input).
    public var jobs = 1
    /// A job in its own process that gives no sign of progress for this long is killed and reported as hung (nil:
    /// `defaultJobTimeout`).
    public var jobTimeoutSeconds: Double?
    /// An automation file (lines `AT ADDRESS ARGS...` or `AT midi BYTES...`), and events written in the preset.
    public var automationFile: String?
    public var events: [AutomationEntry] = []
    /// `normalize`: the integrated loudness (LUFS) every output is brought to by one gain, and `true_peak_ceiling`
    /// (dBTP, nil: -1) its true peak may not pass unless a limiter is in the chain (docs/RENDER.md).
    public var normalize: Double?
    public var truePeakCeiling: Double?
    /// The line of the `[render]` header.
    public var line: Int?

    public static let defaultPeriod = 1024
    public static let defaultJobTimeout = 60.0
    /// What `tail = "silence"` counts as silence, and for how long.
    public static let silenceDBFS = -120.0
    public static let silenceSeconds = 1.0

    public init() {}

    public static func == (a: RenderSection, b: RenderSection) -> Bool {
        a.engine == b.engine && a.period == b.period && a.sampleRate == b.sampleRate
            && a.resampleQuality == b.resampleQuality && a.cycleOffset == b.cycleOffset
            && a.prerollSeconds == b.prerollSeconds && a.tail == b.tail && a.tailLimitSeconds == b.tailLimitSeconds
            && a.format == b.format && a.inputs == b.inputs && a.output == b.output && a.jobs == b.jobs
            && a.jobTimeoutSeconds == b.jobTimeoutSeconds
            && a.automationFile == b.automationFile && a.normalize == b.normalize && a.truePeakCeiling == b.truePeakCeiling
            && a.events.map { AutomationEntry(at: $0.at, address: $0.address, args: $0.args, midi: $0.midi) }
            == b.events.map { AutomationEntry(at: $0.at, address: $0.address, args: $0.args, midi: $0.midi) }
    }
}

extension RenderSection {
    /// The true-peak ceiling of a normalized render when none is given, dBTP.
    public static let defaultTruePeakCeiling = -1.0

    /// A loudness target as written (`-16`, `ebu`): LUFS, or why it is none, in the words `render --normalize`,
    /// `loudness --target` and `preset check` all say.
    public static func loudnessTarget(_ text: String) -> Result<Double, LoudnessWords> {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.lowercased() == "ebu" { return .success(-23) }
        guard let v = Double(t), !t.isEmpty else {
            return .failure(LoudnessWords("'\(text)' is not a loudness target: give LUFS (\(Limits.describe(Limits.loudnessTarget)),"
                                          + " e.g. -16) or ebu (-23)"))
        }
        return loudnessTarget(v)
    }

    public static func loudnessTarget(_ v: Double) -> Result<Double, LoudnessWords> {
        guard Limits.contains(Limits.loudnessTarget, v) else {
            return .failure(LoudnessWords("\(Limits.number(v)) LUFS is not a loudness target: give"
                                          + " \(Limits.describe(Limits.loudnessTarget)) LUFS, or ebu (-23)"))
        }
        return .success(v)
    }

    public static func truePeakCeiling(_ v: Double) -> Result<Double, LoudnessWords> {
        guard Limits.contains(Limits.truePeakCeiling, v) else {
            return .failure(LoudnessWords("\(Limits.number(v)) dBTP is not a true-peak ceiling: give"
                                          + " \(Limits.describe(Limits.truePeakCeiling)) dBTP"))
        }
        return .success(v)
    }
}

/// Why a loudness setting is refused, in words.
public struct LoudnessWords: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Limits {
    /// A loudness target (LUFS) and a true-peak ceiling (dBTP).
    public static let loudnessTarget: ClosedRange<Double> = -70...0
    public static let truePeakCeiling: ClosedRange<Double> = -60...0

    /// A render's rate, period, jobs, pre-roll, tail and cycle offset.
    public static let renderRate: ClosedRange<Int> = 1000...768_000
    public static let renderPeriod: ClosedRange<Int> = 1...Period.maxFrames
    public static let renderJobs: ClosedRange<Int> = 1...256
    public static let renderJobTimeoutSeconds: ClosedRange<Double> = 1...86400
    public static let renderPrerollSeconds: ClosedRange<Double> = 0...60
    public static let renderTailSeconds: ClosedRange<Double> = 0...3600
}
