import Commands
import Foundation
import Loudness
import Presets

/// The report written beside a render's output (`<output name>.json`): what was run (the chain's plugins with the
/// control values they started with, the state restored, the engine and its period), over what (each source file
/// with its checksum), what the automation did at which frames, and what came out.
public struct RenderReport: Codable, Sendable {
    public struct Source: Codable, Sendable, Equatable {
        public var path: String
        public var sha256: String?
        public var frames: Int
        public var sampleRate: Int
        public var channels: Int
        /// The file's channels rendered (from 0), when not all.
        public var channelsTaken: [Int]?
        public var timeReference: UInt64?
    }
    /// An automation event as asked for and as applied.
    public struct Event: Codable, Sendable, Equatable {
        /// The event as written ("48000 /tandem/plugin/set fx amp gain -6").
        public var event: String
        public var origin: String
        /// The input frame of the cycle that applied it (a command takes effect at the start of the first cycle at
        /// or after its frame; MIDI at its own frame).
        public var appliedAt: Int
    }
    /// Latency the chain reported when the input began, taken out so the output lines up with the input; and where
    /// it changed (the output's timeline then moves against the input by the difference; compensation stays).
    public struct Latency: Codable, Sendable, Equatable {
        public var frames: Int
        public var changes: [Change]?
        public struct Change: Codable, Sendable, Equatable {
            public var atFrame: Int
            public var frames: Int
        }
    }

    public var tandemVersion: String
    public var renderedAt: String
    public var host: String
    /// Which chain: "rack", "recorder" or "player", and the engine's name.
    public var kind: String
    public var engine: String
    /// The plugins as they started (preset values, LV2 presets, saved state applied), with their control values.
    public var plugins: [PluginSpec]
    /// Saved plugin state restored (files), and plugins or settings the chain ran without.
    public var stateRestored: [String]
    public var pluginProblems: [String]?
    public var mix: Double
    public var gainDB: Double
    public var playerGainDB: Double?
    public var sampleRate: Int
    public var period: Int
    public var cycleOffset: Int
    public var prerollFrames: Int
    /// The input files were at this rate and were converted with libsoxr (absent when they were not).
    public var resampledFrom: Int?
    public var resampleQuality: String?
    public var sources: [Source]
    public var midi: Source?
    public var inputFrames: Int
    public var latency: Latency
    /// "silence" or seconds, and the frames of tail the output holds past the input's end.
    public var tail: String
    public var tailFrames: Int
    public var events: [Event]
    /// Every change the chain applied, as the command that makes it, at the input frame of its cycle: the same
    /// words as a take's control log.
    public var applied: [TimedCommand]
    public var output: String
    public var format: String
    public var sampleFormat: String
    public var channels: Int
    public var frames: Int
    public var outputSHA256: String?
    /// The output's loudness (BS.1770 / EBU R128), measured on the frames as they were written (absent in reports of
    /// an older Tandem).
    public var loudness: Loudness?
    /// What `--normalize` measured and did (absent without it).
    public var normalization: Normalization?
    /// An output whose channels BS.1770 does not weigh as one programme (not 1, 2, 5 or 6) measured as stereo pairs
    /// (a last odd channel alone), as the player's and racks' outputs are; `loudness` then has only its note.
    public var loudnessGroups: [ProgrammeLoudness]?
    /// The take this job rendered again, when it did.
    public var take: String?
    /// What the render did differently from what it was given to repeat, in words (a take rendered with `--mix`: "mix
    /// 0.5 from --mix, over the take's start of 1"; the take's period used over the preset's `[render]` one).
    public var notes: [String]?
    public var seconds: Double
    /// Audio seconds rendered per second of wall time.
    public var speed: Double

    public func json() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return (try? e.encode(self)) ?? Data()
    }

    public static func read(from path: String) throws -> RenderReport {
        try JSONDecoder().decode(RenderReport.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
