import Loudness
import Engine
import Foundation
import Jack
import Plugins
import Presets
import Realtime
import SoundFile
#if canImport(Glibc)
import Glibc
import Takes
#endif

/// A snapshot of the whole session for status displays and the control protocol.
public struct SessionStatus: Codable, Sendable {
    public struct RecorderStatus: Codable, Sendable {
        public var client: String
        public var recording: Bool
        public var take: Int?
        public var frames: Int
        public var seconds: Double
        public var bytes: Int
        public var files: [String]
        public var directory: String
        public var freeBytes: Int?
        /// Recording time the free space leaves at the current format.
        public var secondsLeft: Double?
        public var ringFill: Int
        public var ringCapacity: Int
        public var droppedFrames: Int
        /// Frames of cycles the server ran without the recorder (never reached it; the take's report notes where).
        public var missedFrames: Int
        public var xruns: Int
        public var cycle: CycleCost
        /// What it does between takes: `recording`, `armed` (a take by command), `waiting-transport`, `waiting-level`,
        /// `scheduled` (its next window).
        public var state: String?
    }
    public struct PlayerStatus: Codable, Sendable {
        public var client: String
        public var playing: Bool
        public var paused: Bool
        public var item: Int?
        public var items: Int
        public var path: String?
        public var seconds: Double
        public var duration: Double
        public var underrunFrames: Int
        /// Frames of cycles the server ran without the player (the player was late; the graph heard nothing from it
        /// there, and the file went on where it stopped).
        public var missedFrames: Int
        public var xruns: Int
        public var ringFill: Int
        public var ringCapacity: Int
        public var cycle: CycleCost
        /// The queue (its files, in order) and the gain in dB.
        public var queue: [String]?
        public var gainDB: Double?
    }
    public struct RackStatus: Codable, Sendable {
        public var name: String
        public var client: String
        public var isolated: Bool
        /// Running now (an isolated rack: its process is up and said it is ready).
        public var running: Bool
        public var inputs: Int
        public var outputs: Int
        public var cycles: Int
        public var latencyFrames: Int
        public var xruns: Int?
        public var missedFrames: Int?
        public var cycle: CycleCost?
        /// Isolated racks: crashes, hangs, restarts, the pid, and the last recovery time in seconds.
        public var crashes: Int?
        public var hangs: Int?
        public var restarts: Int?
        public var pid: Int32?
        public var lastRecoverySeconds: Double?
        /// An isolated rack's own OSC control port (its plugins are set there: `tandem ctl --port N plugin set …`).
        public var controlPort: Int?
        /// In-process racks: MIDI events received, and messages for the control maps lost because the session had not
        /// read the last ones (its map ring was full).
        public var midiReceived: Int?
        public var mapDropped: Int?
    }
    public struct CycleCost: Codable, Sendable {
        public var p50Micros: Double
        public var p99Micros: Double
        public var maxMicros: Double
        init(_ s: CycleHistogram.Summary) {
            p50Micros = Double(s.p50) / 1000
            p99Micros = Double(s.p99) / 1000
            maxMicros = Double(s.max) / 1000
        }
    }
    public struct Meter: Codable, Sendable, Equatable {
        public var port: String
        /// Over the last metering interval.
        public var peakDB: Double
        public var rmsDB: Double
        /// Highest peak in the last 1.5 s.
        public var holdDB: Double
        /// A sample reached full scale in the last 3 s.
        public var clip: Bool
    }

    public var session: String
    public var server: String
    public var sampleRate: Int
    public var period: Int
    public var serverLost: Bool
    /// The JACK server's DSP load (percent of the period its cycle took, as JACK reports it) and its xruns since this
    /// session's first client opened.
    public var dspLoad: Double?
    public var xruns: Int?
    public var recorder: RecorderStatus?
    public var player: PlayerStatus?
    public var meters: [Meter]
    public var workers: [String]
    /// Each rack: in this process or isolated, its cycles, costs, and (isolated) how often it went down.
    public var racks: [RackStatus] = []
    /// Each engine's insert chain: plugins, control values, latency.
    public var plugins: [String: ChainStatus]
    /// The preset file the session runs (`path` and `name` absent: it was not started from a file, or its setup was
    /// made by options).
    public var preset = RunningPreset()
    public struct RunningPreset: Codable, Sendable, Equatable {
        public var path: String?
        public var name: String?
        public init(path: String? = nil) {
            self.path = path
            name = path.map { (($0 as NSString).lastPathComponent as NSString).deletingPathExtension }
        }
    }
    /// Connection rules that connect nothing now (a pattern that matches no port yet), each with what it lacks.
    public var idleConnections: [String]? = nil
    /// EBU R128 loudness of each measured programme (`loudness` in the preset; absent when nothing is measured).
    public var loudness: [ProgrammeLoudness]? = nil

    public struct ChainStatus: Codable, Sendable {
        public var plugins: [PluginStatus]
        public var latencyFrames: Int
        /// Plugins left out and settings not applied, in words.
        public var problems: [String]
        /// The chain's dry/wet mix (0 dry … 1 wet) and output gain in dB.
        public var mix: Double?
        public var gainDB: Double?
    }

    public func json() -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return (try? e.encode(self)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }
}
