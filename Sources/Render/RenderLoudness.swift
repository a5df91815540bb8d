import Foundation
import Loudness

extension RenderReport {
    /// The loudness of what a render wrote (ITU-R BS.1770-4 / EBU R128, docs/LOUDNESS.md), measured on the frames as
    /// they went to the file, never read back: the same `ProgrammeLoudness` a take's report holds (its `channels`
    /// empty: the output's own), nil where there is no value, and `note` saying why.
    public typealias Loudness = ProgrammeLoudness

    /// What `--normalize` did: the chain's output as measured, the one gain applied to reach the target, and how.
    /// The final loudness is the report's `loudness`.
    public struct Normalization: Codable, Sendable, Equatable {
        /// The target, LUFS, and the true-peak ceiling, dBTP.
        public var target: Double
        public var truePeakCeiling: Double
        /// The chain's output before the gain (with a limiter: the first pass, with no gain).
        public var measured: Loudness
        /// The gain applied, dB: after the chain, or with a limiter at the chain's input (before the limiter).
        public var gainDB: Double
        /// Where the gain went: "output" (the measured output scaled) or "input" (the chain run again with it).
        public var appliedAt: String
        /// The limiter the gain was raised into, by its name in the chain; nil without one.
        public var limiter: String?
        /// Times the chain ran (1 without a limiter; with one, until within 0.1 LU of the target).
        public var passes: Int
    }
}

/// What a render job is to reach: an integrated loudness and a true-peak ceiling.
public struct LoudnessTarget: Sendable, Codable, Equatable {
    /// LUFS, within `Limits.loudnessTarget`.
    public var lufs: Double
    /// dBTP, within `Limits.truePeakCeiling`.
    public var truePeakCeiling: Double

    /// How close a limited chain must come to the target (LU), and how many times it may run to get there.
    public static let tolerance = 0.1
    public static let maxPasses = 8

    public init(lufs: Double, truePeakCeiling: Double = -1) {
        self.lufs = lufs
        self.truePeakCeiling = truePeakCeiling
    }
}

extension LoudnessReading {
    /// A meter for a render's output of `channels` at `rate`, or the words for why there can be none.
    static func meter(channels: Int, rate: Int) -> Result<LoudnessMeter, LoudnessError> {
        do throws(LoudnessError) {
            return .success(try LoudnessMeter(channels: channels, sampleRate: Double(rate)))
        } catch {
            return .failure(error)
        }
    }
}

extension ProgrammeLoudness {
    /// A render output's loudness: the whole (no current values), its channels the output's own.
    public init(_ r: LoudnessReading) { self.init(channels: [], reading: r, summary: true) }

    /// No measurement, and why.
    public init(note: String) { self.init(channels: [], reading: LoudnessReading(note: note), summary: true) }

    /// "-16.0 LUFS, range 4.2 LU, true peak -1.3 dBTP" (or the note).
    public var summary: String {
        guard let integrated else { return note ?? "no loudness" }
        return String(format: "%.1f LUFS, range ", integrated) + LoudnessReading.text(range) + " LU, true peak "
            + LoudnessReading.text(truePeak) + " dBTP"
    }
}
