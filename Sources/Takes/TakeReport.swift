import Foundation
import Presets
import Commands
import Loudness

/// Why a take ended, as written in its sidecar.
public enum TakeEnd: String, Codable, Sendable {
    /// Still being written (a sidecar that says this after the process is gone means the process was killed).
    case recording
    case stopped
    case durationReached
    case stopTimeReached
    case diskError
    case serverLost
    /// The server stayed up but ran no cycles for longer than `StallWatch.stallSeconds` (a NetJACK2 slave whose link
    /// or master went away); the take was finalized then, and a new one starts when cycles run again.
    case serverStalled
    /// A level-triggered take ended by its rule (`trigger.ended` says how: quiet, maxLength, minLength).
    case trigger
    /// Found after a crash or kill and completed on a later start.
    case interrupted

    /// How a person reads it ("duration reached"); the raw value is the report's and the API's word.
    public var words: String {
        switch self {
        case .recording, .stopped, .trigger, .interrupted: return rawValue
        case .durationReached: return "duration reached"
        case .stopTimeReached: return "stop time reached"
        case .diskError: return "disk error"
        case .serverLost: return "server lost"
        case .serverStalled: return "server stalled"
        }
    }
}

/// The sidecar written beside every take (JSON): what was recorded, from where, and what went wrong.
public struct TakeReport: Codable, Sendable {
    public struct Port: Codable, Sendable {
        public var name: String
        public var connections: [String]
        public var captureLatency: FrameRange?

        public init(name: String, connections: [String], captureLatency: FrameRange?) {
            self.name = name
            self.connections = connections
            self.captureLatency = captureLatency
        }
    }
    public struct Chunk: Codable, Sendable {
        /// File paths of this chunk (one, or one per channel for stems).
        public var files: [String]
        /// Frame offset of the chunk's first frame within the take.
        public var startFrame: Int
        public var frames: Int
        /// What each of `files` was when the chunk was closed (in the same order): retention deletes a file only
        /// when it still is exactly that (null for a file that could not be read back). Absent while the chunk is
        /// written, and in reports of older versions.
        public var identity: [FileIdentity?]? = nil
    }
    public struct Drop: Codable, Sendable {
        /// Frame offset within the take where the gap starts (filled with silence).
        public var atFrame: Int
        public var frames: Int
        /// Why the frames are missing (absent in reports written before causes were told apart: an overrun).
        public var cause: GapCause? = nil
        /// false: nothing stands in for the missing frames (skipped cycles): the take goes on without a gap and the
        /// server's time jumps by `frames` at `atFrame` (to within one period). Absent: silence in the file.
        public var silence: Bool? = nil
    }
    /// Why a stretch of a take is silence instead of what came in.
    public enum GapCause: String, Codable, Sendable {
        /// The capture ring was full (the disk or the writer could not keep up): counted in `droppedFrames`.
        case overrun
        /// The JACK server ran cycles without calling the recorder (a late client before it, an xrun): the audio
        /// of those cycles never reached Tandem. Counted in `missedFrames`.
        case missedCycles = "missed-cycles"
        /// The recorder's callback, woken late, read a source's buffer after the source had written its next
        /// period into it: the period before `atFrame` is lost (the missed-cycles note before it) and these
        /// `frames` repeat it. Counted in `repeatedFrames`; `silence` is false.
        case repeatedCycle = "repeated-cycle"
    }

    public var tandemVersion: String
    public var session: String
    public var take: Int
    public var sampleRate: Int
    public var channels: Int
    public var format: String
    public var sampleFormat: String
    public var stems: Bool
    /// Wall-clock time of the take's first frame (ISO 8601, UTC).
    public var startedAt: String
    /// JACK frame time of the take's first frame.
    public var startFrameTime: UInt32
    /// Recorder stream position (frames since the recorder's client was activated) of the first frame.
    public var streamStart: Int
    /// Pre-roll frames included before the start command.
    public var prerollFrames: Int
    public var ports: [Port]
    public var chunks: [Chunk]
    public var frames: Int
    public var xruns: Int
    /// Frames lost to a full ring (overruns), kept as silence.
    public var droppedFrames: Int
    public var drops: [Drop]
    /// Frames of cycles the server skipped for the recorder (they take no room in the file; absent in older
    /// reports).
    public var missedFrames: Int? = nil
    /// Frames recorded twice because a late cycle repeated the one before it (see `GapCause.repeatedCycle`; absent
    /// when none).
    public var repeatedFrames: Int? = nil
    public var ended: TakeEnd
    /// Human-readable detail on how it ended (the disk error's message, for example).
    public var endDetail: String?
    /// What else a reader of this take should know (a resume after a lost server, for example).
    public var notes: [String]?
    /// Playback started on the take's first frame (record-while-playing), if any.
    public var playback: PlaybackAlignment?
    /// The process writing the take, and its host: a report that still says "recording" while that process is
    /// gone belongs to an interrupted take.
    public var pid: Int32?
    public var host: String?
    /// The LV2 insert chain the take was recorded through (plugins, with their control values when the take
    /// started), and the latency it reported in frames when the take was started (removed: see
    /// `latencyCompensation`).
    public var plugins: [PluginSpec]? = nil
    public var pluginLatencyFrames: Int? = nil
    /// How the chain's latency was taken out of the take (present when the take was recorded through plugins).
    public var latencyCompensation: LatencyCompensation? = nil
    /// Plugins that were bypassed (left out of the chain: the take has the audio without them), and settings of
    /// plugins that were ignored, with why (absent when there were none).
    public var pluginProblems: [PluginProblem]? = nil
    /// Isolated racks feeding this take that went down while it recorded (their outputs carried silence until
    /// they were back): absent when none did.
    public var rackIncidents: [RackIncidentNote]? = nil
    /// With the dry input recorded too: the recorded channels' names (processed ones, then `PORT-dry`).
    public var channelNames: [String]? = nil
    /// A level-triggered take: the frame and level that started it and why it ended (absent otherwise).
    public var trigger: TriggerInfo? = nil
    /// Markers added during the take, at their frames (absent when there were none).
    public var markers: [TakeMarker]? = nil
    /// The control changes made while the take recorded (plugin controls, bypass, mix, gain, LV2 presets of every
    /// chain of the session), each at the input frame of the cycle that applied it, with the period and the take's
    /// place in its cycle: what `tandem render --take` applies again at the same frames (absent in older reports).
    public var controlLog: ControlLog? = nil
    /// Each programme's loudness (`[recorder] loudness`): integrated, range, true peak and the maxima of the take's
    /// frames as written, silence of gaps included, so it equals `tandem loudness` of the take's files (absent when
    /// not measured).
    public var loudness: [ProgrammeLoudness]? = nil

    /// Encodes as pretty JSON.
    public func json() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    /// The report in the file at `path`; a `TakeReportError` in words when there is none, it cannot be read, or it
    /// is no take report (it was Foundation's NSCocoaErrorDomain dump).
    public static func read(from path: String) throws(TakeReportError) -> TakeReport {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            var isFolder: ObjCBool = false
            let there = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
            throw TakeReportError(path: path, message: !there ? "no such file (a take's report is the .json beside its audio)"
                                  : isFolder.boolValue ? "a folder, not a take's report" : "cannot be read (\(error.localizedDescription))")
        }
        do {
            return try JSONDecoder().decode(TakeReport.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw TakeReportError(path: path, message: "not a take's report (no '\(key.stringValue)')")
        } catch {
            throw TakeReportError(path: path, message: data.isEmpty ? "an empty file, not a take's report"
                                  : "not a take's report (not the JSON a take writes)")
        }
    }
}

/// A take's report that could not be read: the file and why, in words.
public struct TakeReportError: Error, CustomStringConvertible {
    public var path: String
    public var message: String
    public var description: String { "'\(path)': \(message)" }
}

extension TakeReport {
    /// The chain's latency, removed: frame k of the take holds the chain's output for the input captured at
    /// `startFrameTime + k` and, with the dry input recorded, that same input. The processed and dry channels are
    /// aligned to the frame.
    public struct LatencyCompensation: Codable, Sendable, Equatable {
        /// Frames of latency removed (the chain's latency where the take starts, at most a little over a second).
        public var frames: Int
        /// How, in words.
        public var method: String
        /// Where the chain's latency changed during the take (a control change, a rebuilt chain): from `atFrame`
        /// on, `frames` are removed. Processed and dry stay aligned; the take's timeline moves against the input
        /// by the difference there.
        public var changes: [Change]? = nil

        public struct Change: Codable, Sendable, Equatable {
            public var atFrame: Int
            public var frames: Int
        }

        static let how = "the take starts and ends this many frames later in the processed stream, so it holds the"
            + " chain's output for its input frames (the run-on past the stop is the chain's tail for the last ones);"
            + " the dry input is delayed by as much before the capture ring"
    }

    /// A plugin the chain runs without, or a setting of one that was ignored.
    public struct PluginProblem: Codable, Sendable, Equatable {
        /// The plugin's name in the chain.
        public var plugin: String
        /// What went wrong (notInstalled, missingFeature, instantiateFailed, channels, unsupportedPort,
        /// unknownControl, badValue, preset, state, worker).
        public var code: String
        /// true: the plugin was left out (the take has the audio without it); false: it ran, the setting ignored.
        public var bypassed: Bool
        public var message: String
        /// Take frame from which it applies (absent: from the take's start).
        public var atFrame: Int? = nil

        public init(plugin: String, code: String, bypassed: Bool, message: String, atFrame: Int? = nil) {
            self.plugin = plugin
            self.code = code
            self.bypassed = bypassed
            self.message = message
            self.atFrame = atFrame
        }
    }
}

/// A player start lined up with a take: both began at `startFrameTime`.
public struct PlaybackAlignment: Codable, Sendable {
    public var files: [String]
    /// JACK frame time of the first played frame (equal to the take's `startFrameTime`).
    public var startFrameTime: UInt32
    /// The queue item (0-based) and file frame the player started from, when it was not the top of the queue (a
    /// `seek`, or a player going on after a server restart); nil: item 0, frame 0.
    public var startItem: Int?
    public var startFrame: Int?
    public init(files: [String], startFrameTime: UInt32, from position: PlayerPosition? = nil) {
        self.files = files
        self.startFrameTime = startFrameTime
        if let p = position, let item = p.item, item != 0 || p.frame != 0 {
            startItem = item
            startFrame = p.frame
        }
    }
}

public enum TandemVersion {
    public static let string = "0.1.0"
}

/// An isolated rack whose output this take records went down (crashed or hung) and came back.
public struct RackIncidentNote: Codable, Sendable, Equatable {
    public var rack: String
    /// "crashed: killed by signal 11 (SIGSEGV)", "hung for 1.6 s".
    public var what: String
    /// Take frames from the moment the session noticed, to the moment the rack was back (nil while it is not).
    public var atFrame: Int
    public var backAtFrame: Int?
    /// The take's channels fed from the rack's outputs.
    public var channels: [String]

    public init(rack: String, what: String, atFrame: Int, backAtFrame: Int? = nil, channels: [String]) {
        self.rack = rack
        self.what = what
        self.atFrame = atFrame
        self.backAtFrame = backAtFrame
        self.channels = channels
    }
}

/// A range of frames (a port's capture latency as JACK reported it when the take started).
public struct FrameRange: Codable, Sendable, Equatable {
    public var min: UInt32
    public var max: UInt32

    public init(min: UInt32, max: UInt32) {
        self.min = min
        self.max = max
    }
}

extension TakeReport {
    /// The MIDI file of the take whose report is `sidecar` (`.mid` for `.json`).
    public static func midiPath(sidecar: String) -> String {
        (sidecar.hasSuffix(".json") ? String(sidecar.dropLast(5)) : sidecar) + ".mid"
    }
}
