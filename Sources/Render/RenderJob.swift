import Commands
import Foundation
import Presets
import SoundFile

/// The chain a render runs: a rack's, or the recorder's or the player's insert chain, as the live engine would build
/// it (`PluginChain` with the same channels, period, mix, gain and saved state).
public struct RenderChain: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable {
        /// A rack: its main inputs to its outputs, run as `RackState` runs it (`ChainPath`: a chain swapped in is
        /// crossfaded over its cycle), MIDI into its instruments.
        case rack
        /// The recorder's insert chain: its ports' channels in and out, a swap at the cycle boundary.
        case recorder
        /// The player's insert chain: the file (at the player's gain) in, its ports' channels out.
        case player
    }
    public var kind: Kind
    /// The name automation commands use: "recorder", "player" or the rack's name.
    public var engine: String
    public var plugins: [PluginSpec]
    /// Main input channels (an instrument rack: 0) and output channels (nil: what the chain makes).
    public var inputs: Int
    public var outputs: Int?
    public var mix: Double = 1
    public var gainDB: Double = 0
    /// A folder of saved plugin state (`<session>.plugins/<engine>`), restored as a session restores it.
    public var savedState: String?
    /// The player's gain in dB, before its chain.
    public var playerGainDB: Double = 0
    /// A plugin that cannot run: the job fails (true), or it runs without it and says so.
    public var strict = true
    /// The plugins' control values and bypass are where the chain starts, over any saved state (a take rendered
    /// again: the values it started with).
    public var startsAsGiven = false

    public init(kind: Kind, engine: String, plugins: [PluginSpec], inputs: Int, outputs: Int?) {
        self.kind = kind
        self.engine = engine
        self.plugins = plugins
        self.inputs = inputs
        self.outputs = outputs
    }
}

/// One source file of a job; a job's sources play one after another (a take's chunks).
public struct RenderInput: Sendable, Codable, Equatable {
    public var path: String
    /// The file's channels to take, from 0 (nil: all of them).
    public var channels: [Int]?

    public init(path: String, channels: [Int]? = nil) {
        self.path = path
        self.channels = channels
    }
}

/// One automation event as a render applies it: a command of the command model at an input frame (taking effect at
/// the start of the first cycle that begins at or after it, as a live change takes effect at the next cycle), or a
/// MIDI message for the chain's plugins at exactly that frame.
public struct AutomationEvent: Sendable, Codable, Equatable {
    public var at: Int
    /// A command (`TimedCommand` with the same frame), or nil for MIDI.
    public var address: String?
    public var args: [CommandValue]
    public var midi: [UInt8]?
    /// Where it was written ("auto.txt:12", "preset.toml:40", "take 3's log"), for messages.
    public var origin: String
    /// From a take's control log: it may lie before the input's start (applied after the log's start values were
    /// taken and before the take's first frame), and is then applied before the first frame.
    public var logged = false

    public init(at: Int, address: String?, args: [CommandValue] = [], midi: [UInt8]? = nil, origin: String) {
        self.at = at
        self.address = address
        self.args = args
        self.midi = midi
        self.origin = origin
    }

    /// "48000 /tandem/plugin/set fx amp gain -6" or "48000 midi 0x90 60 100".
    public var line: String {
        if let midi { return "\(at) midi " + midi.map { String(format: "0x%02X", $0) }.joined(separator: " ") }
        return TimedCommand(frame: at, address: address ?? "", args: args).line
    }
}

/// Everything one render job needs, resolved: a parent hands it to a child process as JSON (`tandem render --job`).
public struct RenderJob: Sendable, Codable, Equatable {
    /// Its number in the batch, from 1.
    public var number: Int
    public var chain: RenderChain
    /// The audio to render, one file after another; or one MIDI file (`midi`) for an instrument.
    public var inputs: [RenderInput]
    /// A MIDI file whose events reach the chain's plugins at their frames (its length is the input's length when
    /// there is no audio input).
    public var midi: String?
    public var output: String
    public var report: String
    public var format: AudioFormat
    /// The chain's rate (nil: the input's own).
    public var sampleRate: Int?
    public var quality: ResampleQuality = .high
    public var period: Int
    public var cycleOffset = 0
    public var prerollSeconds: Double = 1
    public var tail: RenderTail = .silence
    public var tailLimitSeconds: Double = 30
    public var events: [AutomationEvent] = []
    /// The session name (for the BWF description and `{session}`).
    public var session = "render"
    /// The take report this job renders again, if any.
    public var take: String?
    /// What the plan changed from what a take gives or a preset says, in words; the report's `notes`.
    public var notes: [String] = []
    /// `--normalize`: the loudness the output is brought to, and its true-peak ceiling (nil: written as the chain
    /// gives it).
    public var loudnessTarget: LoudnessTarget?

    public init(number: Int, chain: RenderChain, inputs: [RenderInput], output: String, report: String,
                format: AudioFormat, period: Int) {
        self.number = number
        self.chain = chain
        self.inputs = inputs
        self.output = output
        self.report = report
        self.format = format
        self.period = period
    }

    /// The job's name in progress lines and errors: its input's file name.
    public var name: String {
        ((inputs.first?.path ?? midi ?? "job \(number)") as NSString).lastPathComponent
    }
}

extension RenderTail: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(Double.self) { self = .seconds(s) } else {
            let text = try c.decode(String.self)
            guard text == "silence" else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "tail: 'silence' or seconds")
            }
            self = .silence
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .silence: try c.encode("silence")
        case .seconds(let s): try c.encode(s)
        }
    }
}
