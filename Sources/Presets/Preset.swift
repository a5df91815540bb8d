import Foundation
import SoundFile

/// What repeats when the player's queue reaches an end.
public enum LoopMode: String, Sendable, Codable, CaseIterable {
    case none, item, all
}

/// When the recorder starts its first take.
public enum RecorderStart: String, Sendable, CaseIterable {
    /// At once.
    case immediately
    /// Running and metering, writing nothing until started (pre-roll kept).
    case armed
    /// A take per JACK transport roll.
    case transport
    /// A take whenever the level says so (`[recorder.trigger]`).
    case level
}

/// When the player starts.
public enum PlayerStart: String, Sendable, CaseIterable {
    case immediately
    /// On a play command.
    case command
    /// On JACK transport roll (and pauses when it stops).
    case transport
    /// On the same cycle as the recorder's first take (record-while-playing, aligned to the frame).
    case withRecorder = "with-recorder"
}

public enum ServerLossPolicy: String, Sendable, CaseIterable {
    /// Keep the process, wait for the server, re-create everything, start a new take.
    case resume
    /// Finalize and exit with a non-zero code.
    case stop
}

/// When a session ends by itself, beyond the rule that always holds (a take with a duration or stop time in start
/// mode `immediately`). `tandem record` and `tandem play` set it from their options.
public enum SessionExit: String, Sendable, CaseIterable {
    /// When a take ends by its duration or stop time (whatever the start mode), or the stop time passes.
    case take
    /// When the player's queue has played out (and the plugin chain's latency and tail have rung out).
    case playback
}

public enum DiskErrorPolicy: String, Sendable, CaseIterable {
    /// Finalize the take and exit with a non-zero code.
    case stop
    /// Finalize the take and stay armed (a new take starts only when asked).
    case continueArmed = "continue"
}

/// What happens when a plugin of a chain cannot run when the session starts (not installed, needs a feature
/// Tandem lacks, does not fit the channels, fails to instantiate, names a control it does not have or a value
/// outside its range). Later failures (a rebuilt chain, a server restart, a re-applied preset) always bypass.
public enum PluginErrorPolicy: String, Sendable, CaseIterable {
    /// An error: exit 2, nothing started.
    case fail
    /// Run without the plugin (or without the setting), and say so in the log, the status, the events and the
    /// take's report.
    case bypass
}

public enum DisconnectPolicy: String, Sendable, CaseIterable {
    /// A connection the user removed stays removed (until the preset changes).
    case respect
    /// Connection rules are enforced: a removed connection is made again.
    case repair
}

/// How a connection rule pairs the ports its two sides match.
public enum PairingMode: String, Sendable, CaseIterable {
    /// First with first, second with second, ... in natural name order.
    case pairs
    /// Every source to every destination.
    case all
}

/// A port name pattern: exact, a glob (`*`, `?`, `[...]`), or a regular expression written `/.../`.
public enum PortPattern: Sendable, Equatable, CustomStringConvertible {
    case exact(String)
    case glob(String)
    case regex(String)

    public init(_ text: String) {
        if text.count >= 2 && text.hasPrefix("/") && text.hasSuffix("/") {
            self = .regex(String(text.dropFirst().dropLast()))
        } else if text.contains(where: { "*?[".contains($0) }) {
            self = .glob(text)
        } else {
            self = .exact(text)
        }
    }

    public var description: String {
        switch self {
        case .exact(let s), .glob(let s): return s
        case .regex(let s): return "/\(s)/"
        }
    }

    /// Why the pattern cannot be used, or nil.
    public var problem: String? {
        switch self {
        case .exact(let s): return s.contains(":") ? nil : "'\(s)' is not a full port name (client:port)"
        case .glob(let s):
            if s.isEmpty { return "empty pattern" }
            // A regular expression written where a glob is read matches nothing ('.' is a dot here): the command
            // line's --connect takes regular expressions, a preset globs, so say which is which.
            if s.contains(".*") || s.contains(".+") {
                let glob = s.replacingOccurrences(of: ".*", with: "*").replacingOccurrences(of: ".+", with: "?*")
                return "'\(s)' is read as a glob, where '.' is a dot and '*' any text: it matches no port name a "
                    + "regular expression would. Write '\(glob)' (a glob) or '/\(s)/' (a regular expression, as "
                    + "--connect takes on the command line)"
            }
            return nil
        case .regex(let s):
            do { _ = try NSRegularExpression(pattern: "^(?:\(s))$") } catch {
                return "'/\(s)/' is not a valid regular expression"
            }
            return nil
        }
    }

    /// Whether `name` matches (the whole name).
    public func matches(_ name: String) -> Bool {
        switch self {
        case .exact(let s): return s == name
        case .glob(let s): return fnmatch(s, name, 0) == 0
        case .regex(let s):
            guard let r = try? NSRegularExpression(pattern: "^(?:\(s))$") else { return false }
            return r.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) != nil
        }
    }
}

/// "Connect what matches `from` to what matches `to`."
public struct ConnectionRule: Sendable, Equatable {
    public var from: PortPattern
    public var to: PortPattern
    public var mode: PairingMode
    public var line: Int?

    public init(from: PortPattern, to: PortPattern, mode: PairingMode = .pairs, line: Int? = nil) {
        self.from = from
        self.to = to
        self.mode = mode
        self.line = line
    }

    public static func == (a: ConnectionRule, b: ConnectionRule) -> Bool {
        a.from == b.from && a.to == b.to && a.mode == b.mode
    }
}

/// The `[session]` table.
public struct SessionSection: Sendable, Equatable {
    public var name = "session"
    public var server: String?
    public var directory = "."
    /// Create `directory` (and its parents) when it does not exist.
    public var createDirectory = false
    public var onServerLoss: ServerLossPolicy = .resume
    public var onDiskError: DiskErrorPolicy = .stop
    public var onManualDisconnect: DisconnectPolicy = .respect
    /// OSC control port on 127.0.0.1 (nil: no control protocol).
    public var controlPort: Int?
    /// `control_port = "auto"`: the default port, or any free one when it is taken (said where at start).
    public var controlPortAuto = false
    /// Prometheus metrics over HTTP on 127.0.0.1 (nil: none): since the HTTP API, the whole API on 127.0.0.1:N.
    public var metricsPort: Int?
    /// The HTTP and WebSocket API (nil: none).
    public var http: HTTPAddress?
    /// Origins besides the page's own that may use the API from a browser (CORS, the event stream's Origin).
    public var httpOrigins: [String] = []
    /// Bring back plugin state and control values saved by an earlier run of this session.
    public var restorePlugins = true
    /// Save plugin state into the session folder when the session stops and after live control changes
    /// (`tandem record` and `tandem play` leave it off: they write nothing but their takes).
    public var savePlugins = true
    /// With `onServerLoss == .resume`, how long `tandem run` waits at start for a server that is not up yet (at
    /// boot it often is not); 0 fails at once. After a loss the session waits without limit.
    public var serverWaitSeconds: Double = 60
    /// A plugin that cannot run at start: an error (`fail`) or left out (`bypass`).
    public var onPluginError: PluginErrorPolicy = .fail
    /// End the session when a take or the playback ends (nil: only by the rule that always holds).
    public var exitAfter: SessionExit?
    /// Tempo in beats per minute and meter (beats per bar, beat unit): with a tempo, the session's racks offer to be
    /// JACK's timebase master (bars and beats from frame 0), which plugins that follow time:Position hear.
    public var tempo: Double?
    public var meter: Meter = Meter()
    /// EBU R128 loudness meters on every engine that does not say otherwise (docs/LOUDNESS.md).
    public var loudness = false

    /// A time signature, "4/4".
    public struct Meter: Sendable, Equatable, CustomStringConvertible {
        public var beatsPerBar = 4
        public var beatUnit = 4
        public init(beatsPerBar: Int = 4, beatUnit: Int = 4) {
            self.beatsPerBar = beatsPerBar
            self.beatUnit = beatUnit
        }

        /// "N/D" with N 1 to 64 and D a power of two from 1 to 64.
        public init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), (1...64).contains(n),
                  [1, 2, 4, 8, 16, 32, 64].contains(d) else { return nil }
            self.init(beatsPerBar: n, beatUnit: d)
        }

        public var description: String { "\(beatsPerBar)/\(beatUnit)" }
    }

    /// The tempos a preset or the command line may give, in beats per minute.
    public static let tempos = 1.0...999.0
    public init() {}

    /// Where this session keeps a chain's saved plugin state: `<directory>/<name>.plugins/<engine>` ("recorder",
    /// "player"; a rack's under `rack-<rack name>`). A session restores it live, a render of the chain offline.
    public func pluginStateDirectory(engine: String) -> String {
        let folder = engine == "recorder" || engine == "player" ? engine : "rack-\(engine)"
        return "\(directory)/\(name).plugins/\(folder)"
    }
}

public extension SessionSection {
    /// The keys read only when the session starts (its control, metrics and HTTP servers) whose values differ in
    /// `other`: a reload that changes them keeps the old ones and says so.
    func startOnlyKeysChanged(in other: SessionSection) -> [String] {
        var keys: [String] = []
        if controlPort != other.controlPort || controlPortAuto != other.controlPortAuto { keys.append("control_port") }
        if metricsPort != other.metricsPort { keys.append("metrics_port") }
        if http != other.http { keys.append("http") }
        if httpOrigins != other.httpOrigins { keys.append("http_origins") }
        return keys
    }
}

/// The `[recorder]` table.
public struct RecorderSection: Sendable, Equatable {
    public var client = "tandem-rec"
    public var ports: [String] = ["in_1", "in_2"]
    /// MIDI input ports (`midi_ports`), recorded into `<take>.mid` beside the audio.
    public var midiPorts: [String] = []
    public var format = AudioFormat()
    public var template = "{session}-{take:03}-{date}-{time}"
    public var stems = false
    public var rotateSeconds: Double?
    public var rotateBytes: Int?
    public var prerollSeconds: Double = 0
    public var maxDurationSeconds: Double?
    public var stopAt: String?
    public var start: RecorderStart = .immediately
    public var ringSeconds: Double = 4
    /// LV2 insert chain, in order; what is recorded is what it outputs.
    public var plugins: [PluginSpec] = []
    /// Also record the unprocessed input (extra channels after the processed ones).
    public var recordDry = false
    /// Where each plugin of `plugins` was written (same order), for problems found by looking the plugins up.
    public var pluginSources: [PluginSource] = []
    /// `[recorder.trigger]` (with `start = "level"`).
    public var trigger: TriggerSection?
    /// Local times to record in (`Schedule` entries, as written).
    public var schedule: [String]?
    /// Chunks rotate on the local clock (`rotate` divides a day): a new chunk on the hour.
    public var rotateOnClock = false
    /// `[recorder.retention]`.
    public var retention: RetentionSection?
    /// Loudness meters (`loudness`, `loudness_groups`): which channels are measured as which programme; nil: off
    /// (unless `[session] loudness` turns them on, as stereo pairs).
    public var loudness: LoudnessGroups?
    /// `loudness = false` given: off even where the session turns loudness on.
    public var loudnessOff = false
    public init() {}
}

/// The `[player]` table.
public struct PlayerSection: Sendable, Equatable {
    public var client = "tandem-play"
    public var ports: [String] = ["out_1", "out_2"]
    /// MIDI output ports (`midi_ports`); nil: `midi_out` when the queue holds a MIDI file, else none.
    public var midiPorts: [String]?
    /// Absolute paths (relative ones are resolved against the preset's folder).
    public var queue: [String] = []
    public var loop: LoopMode = .none
    public var gainDB: Double = 0
    public var channelMap: [Int]?
    public var quality: ResampleQuality = .high
    public var seekSeconds: Double = 0
    /// Start at this frame of the first file (instead of `seekSeconds`).
    public var seekFrame: Int?
    public var start: PlayerStart = .immediately
    /// With start mode `immediately`: cue, and start at this local time (HH:MM or HH:MM:SS), on the exact frame.
    public var startAt: String?
    /// With plugins, how long the chain runs on silence past its latency after the queue has played out, before
    /// the playback counts as ended (`exit_after = "playback"`).
    public var tailSeconds: Double = 2
    public var ringSeconds: Double = 2
    /// `loudness = true`: the outputs' loudness is measured; `false` given: not even when the session asks.
    public var loudness = false
    public var loudnessOff = false
    /// `scene_markers = true`: a cue point labelled `scene NAME` in a file the player plays recalls scene NAME when
    /// it plays (off by default: files with cues do not switch a rig unasked).
    public var sceneMarkers = false
    /// LV2 insert chain between the ring and the ports, in order.
    public var plugins: [PluginSpec] = []
    /// Where each plugin of `plugins` was written (same order).
    public var pluginSources: [PluginSource] = []
    public init() {}
}

/// One `[[rack]]` table: a JACK client that runs an LV2 chain from its input ports to its output ports in the same
/// cycle.
public struct RackSection: Sendable, Equatable {
    /// The rack's name (unique in the preset): OSC messages and the status name the rack by it.
    public var name = "rack"
    /// JACK client name (default: the name).
    public var client = "rack"
    /// Input and output port names (nil: `in_1..in_N` / `out_1..out_M` with the counts the chain needs).
    public var inputs: [String]?
    public var outputs: [String]?
    /// MIDI input ports (their MIDI, merged in frame order, reaches every plugin atom input that takes MIDI) and
    /// MIDI output ports (the MIDI the plugins write). Nil: `midi_in` when a plugin takes MIDI, `midi_out` when one
    /// writes MIDI, else none.
    public var midiInputs: [String]?
    public var midiOutputs: [String]?
    /// Output gain in dB, and the dry/wet mix (0: only the input, 1: only the chain's output).
    public var gainDB: Double = 0
    public var mix: Double = 1
    /// Run in a child process the session supervises (nil: whenever the session also records).
    public var isolate: Bool?
    /// `loudness = true`: the outputs' loudness is measured; `false` given: not even when the session asks.
    public var loudness = false
    public var loudnessOff = false
    public var plugins: [PluginSpec] = []
    public var pluginSources: [PluginSource] = []
    /// The line of the `[[rack]]` header.
    public var line: Int?
    public init() {}

    public static func == (a: RackSection, b: RackSection) -> Bool {
        a.name == b.name && a.client == b.client && a.inputs == b.inputs && a.outputs == b.outputs
            && a.midiInputs == b.midiInputs && a.midiOutputs == b.midiOutputs
            && a.gainDB == b.gainDB && a.mix == b.mix && a.isolate == b.isolate && a.plugins == b.plugins
    }
}

/// Where one `[[SECTION.plugins]]` table was written: the lines of its keys, so that a problem found by looking
/// the plugin up (`tandem preset check`) names file, line and key like every other preset problem. Never part of
/// equality.
public struct PluginSource: Sendable, Equatable {
    /// "recorder.plugins" or "player.plugins".
    public var key: String
    /// The table's line, and the lines of its `uri`, `preset` and each control value.
    public var line: Int?
    public var uriLine: Int?
    public var presetLine: Int?
    public var controlLines: [String: Int] = [:]
    /// The line of each DSSI configure key.
    public var configureLines: [String: Int] = [:]

    public init(key: String, line: Int? = nil, uriLine: Int? = nil, presetLine: Int? = nil,
                controlLines: [String: Int] = [:]) {
        self.key = key
        self.line = line
        self.uriLine = uriLine
        self.presetLine = presetLine
        self.controlLines = controlLines
    }

    public static func == (a: PluginSource, b: PluginSource) -> Bool { true }
}

/// A whole setup, as read from a preset file.
public struct Preset: Sendable, Equatable {
    /// The file it came from, if any.
    public var path: String?
    public var session = SessionSection()
    public var recorder: RecorderSection?
    public var player: PlayerSection?
    /// `[[rack]]` tables, in file order.
    public var racks: [RackSection] = []
    public var connections: [ConnectionRule] = []
    /// `[[map]]` tables: MIDI from the racks' inputs onto controls, bypasses, presets and markers, in file order.
    public var maps: [ControlMap] = []
    /// `[[scene]]` tables, in file order (program N of a `scenes = []` map recalls the N-th).
    public var scenes: [Scene] = []
    /// `[render]`: how `tandem render` runs one of the chains over files (nil: its defaults).
    public var render: RenderSection?
    public init() {}
}

/// One thing wrong with a preset, located as precisely as known.
public struct PresetProblem: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    /// The dotted key ("recorder.format"), or "" for the file as a whole.
    public var key: String
    public var message: String

    public init(file: String, line: Int?, key: String, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        let place = line.map { "\(file):\($0)" } ?? file
        return key.isEmpty ? "\(place): \(message)" : "\(place): \(key): \(message)"
    }
}

#if canImport(Glibc)
import Glibc
#endif
