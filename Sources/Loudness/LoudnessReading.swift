import Foundation

/// What a loudness meter read: ITU-R BS.1770-4 loudness (LUFS), EBU Tech 3342 loudness range (LU) and true peak
/// (dBTP), as of the frames it was given. A value that cannot be had is nil, and `note` says why in words: a
/// programme shorter than one 400 ms block has no integrated loudness, silence has none either (every block is below
/// the -70 LUFS gate), and silence has no true peak (minus infinity, which JSON cannot carry).
public struct LoudnessReading: Codable, Equatable, Sendable {
    /// Momentary loudness: the last 400 ms, LUFS.
    public var momentary: Double?
    /// Short-term loudness: the last 3 s, LUFS.
    public var shortTerm: Double?
    /// Integrated (gated) loudness of everything given, LUFS.
    public var integrated: Double?
    /// Loudness range (EBU Tech 3342), LU.
    public var range: Double?
    /// The highest true peak (4x oversampled), dBTP.
    public var truePeak: Double?
    /// The highest sample, dBFS.
    public var samplePeak: Double?
    /// The highest momentary and short-term loudness, LUFS.
    public var momentaryMax: Double?
    public var shortTermMax: Double?
    /// How much was measured, in seconds.
    public var seconds: Double
    /// Why a value is missing, for a person ("shorter than 400 ms: no integrated loudness", "silence").
    public var note: String?

    public init(momentary: Double? = nil, shortTerm: Double? = nil, integrated: Double? = nil, range: Double? = nil,
                truePeak: Double? = nil, samplePeak: Double? = nil, momentaryMax: Double? = nil,
                shortTermMax: Double? = nil, seconds: Double = 0, note: String? = nil) {
        self.momentary = momentary
        self.shortTerm = shortTerm
        self.integrated = integrated
        self.range = range
        self.truePeak = truePeak
        self.samplePeak = samplePeak
        self.momentaryMax = momentaryMax
        self.shortTermMax = shortTermMax
        self.seconds = seconds
        self.note = note
    }

    /// A value for a table: one decimal, or "-inf" where there is none.
    public static func text(_ value: Double?) -> String {
        guard let value else { return "-inf" }
        return String(format: "%.1f", value)
    }
}

/// Refusals of the loudness measurement, in words.
public enum LoudnessError: Error, CustomStringConvertible, Equatable {
    case channels(Int)
    case rate(Double)

    public var description: String {
        switch self {
        case .channels(let n):
            return "\(n) channels: BS.1770 weighs 1 (mono), 2 (stereo), 5 (L R C Ls Rs) or 6 (5.1: L R C LFE Ls Rs) "
                + "channels as one programme; measure other layouts as groups of those"
        case .rate(let r):
            return "sample rate \(r) Hz: loudness is measured at 8000 to 768000 Hz"
        }
    }
}

/// BS.1770's channel weights (G_i) by channel count, in WAV's channel order.
public enum LoudnessLayout {
    public static func weights(channels: Int) throws(LoudnessError) -> [Double] {
        switch channels {
        case 1: return [1]
        case 2: return [1, 1]
        case 5: return [1, 1, 1, 1.41, 1.41]
        case 6: return [1, 1, 1, 0, 1.41, 1.41]
        default: throw .channels(channels)
        }
    }
}

