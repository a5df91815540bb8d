import Presets

/// A command of the command model at a frame: one entry of a take's control log (`ControlLog`), or of an automation
/// list a render applies. `frame` counts input frames from the first frame of the take (or of the rendered input):
/// the command took (or takes) effect at the start of the chain's cycle that began at that input frame.
///
/// Pure; any thread.
public struct TimedCommand: Sendable, Equatable, Codable {
    public var frame: Int
    public var address: String
    public var args: [CommandValue]
    /// Who asked for it ("osc", "midi", "http", "preset"), when known.
    public var source: String?

    public init(frame: Int, address: String, args: [CommandValue], source: String? = nil) {
        self.frame = frame
        self.address = address
        self.args = args
        self.source = source
    }

    public init(frame: Int, command: Command, source: String? = nil) {
        self.init(frame: frame, address: command.address, args: command.values, source: source)
    }

    /// The command it stands for, checked as every surface checks it (`Command.parse`).
    public var command: Result<Command, CommandError> { Command.parse(address: address, values: args) }

    /// The engine it acts on, when it is a plugin command.
    public var engine: String? { try? command.get().engine }

    /// "48000 /tandem/plugin/set fx amp gain -6": the line of an automation file (texts with spaces or quotes are
    /// quoted), which `AutomationList` reads back to this command.
    public var line: String {
        ([String(frame), address] + args.map(\.word)).joined(separator: " ")
    }

    // A change a chain applied, as the command that makes it (`ChainChange` in Plugins).
    // `rampMS`: the glide it started (nil: none), in milliseconds that give its frames back exactly at the rate.
    public static func set(_ frame: Int, engine: String, plugin: String, symbol: String, value: Float,
                           rampMS: Double? = nil, source: String? = nil) -> TimedCommand {
        TimedCommand(frame: frame, command: .pluginSet(engine: engine, plugin: plugin, symbol: symbol,
                                                       value: .number(Limits.double(value)), rampMS: rampMS), source: source)
    }

    public static func bypass(_ frame: Int, engine: String, plugin: String, on: Bool, rampMS: Double? = nil,
                              source: String? = nil) -> TimedCommand {
        TimedCommand(frame: frame, command: .pluginBypass(engine: engine, plugin: plugin, on: on, rampMS: rampMS),
                     source: source)
    }

    public static func mix(_ frame: Int, engine: String, mix: Double, rampMS: Double? = nil,
                           source: String? = nil) -> TimedCommand {
        TimedCommand(frame: frame, command: .pluginMix(engine: engine, mix: mix, rampMS: rampMS), source: source)
    }

    public static func gain(_ frame: Int, engine: String, dB: Double, rampMS: Double? = nil,
                            source: String? = nil) -> TimedCommand {
        TimedCommand(frame: frame, command: .pluginGain(engine: engine, dB: dB, rampMS: rampMS), source: source)
    }

    public static func preset(_ frame: Int, engine: String, plugin: String, uri: String,
                              source: String? = nil) -> TimedCommand {
        TimedCommand(frame: frame, command: .pluginPreset(engine: engine, plugin: plugin, uri: uri), source: source)
    }
}

/// What a take's report says of the control changes made while it recorded: each at the input frame of the cycle
/// that applied it, and what a render needs to apply them again at the same frames (the period, and where the take's
/// first frame fell in its cycle).
public struct ControlLog: Sendable, Equatable, Codable {
    /// Frames per cycle when the take started.
    public var period: Int
    /// The take's first input frame was frame `cycleOffset` of its cycle (0 ..< period).
    public var cycleOffset: Int
    /// The entries; one with a negative frame was applied after `chains` was taken and before the take's first
    /// frame (a render applies it before that frame).
    public var entries: [TimedCommand]
    /// Changes applied that the log does not hold (a chain's change ring was full): the log is incomplete.
    public var dropped: Int?
    /// Every chain of the session's process as it stood when the take was asked to start (its plugins with their
    /// control values and bypass, its mix and gain), by engine name: where the log's changes start from.
    public var chains: [String: ChainStart]?

    /// A chain as it stood when a take started.
    public struct ChainStart: Sendable, Equatable, Codable {
        public var plugins: [PluginSpec]
        public var mix: Double
        public var gainDB: Double

        public init(plugins: [PluginSpec], mix: Double, gainDB: Double) {
            self.plugins = plugins
            self.mix = mix
            self.gainDB = gainDB
        }
    }

    public init(period: Int, cycleOffset: Int, entries: [TimedCommand] = [], dropped: Int? = nil,
                chains: [String: ChainStart]? = nil) {
        self.period = period
        self.cycleOffset = cycleOffset
        self.entries = entries
        self.dropped = dropped
        self.chains = chains
    }
}

extension CommandValue: Codable {
    /// A JSON string or number.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let d = try? c.decode(Double.self) {
            self = .number(d)
        } else {
            self = .text(try c.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .text(let s): try c.encode(s)
        case .number(let d): try c.encode(d)
        }
    }

    /// As a word of a command line or an automation file: a number in full (it reads back to the same Double), a
    /// text as it is, or in double quotes when it has spaces, quotes or backslashes, or would read as a number.
    public var word: String {
        switch self {
        case .number(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)"
        case .text(let s):
            let plain = !s.isEmpty && !s.contains { $0 == " " || $0 == "\t" || $0 == "\"" || $0 == "\\" || $0 == "#" }
                && CommandValue(word: s) == .text(s)
            if plain { return s }
            return "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
    }

    /// Splits a line into words: spaces separate, double quotes group (a backslash escapes the next character
    /// inside them), `#` outside quotes starts a comment. A quoted word is always a text. Nil for an unclosed quote.
    public static func words(_ line: String) -> [CommandValue]? {
        var out: [CommandValue] = []
        var current = ""
        var quoted = false, inQuotes = false, escaped = false, any = false
        for ch in line {
            if inQuotes {
                if escaped {
                    current.append(ch)
                    escaped = false
                } else if ch == "\\" {
                    escaped = true
                } else if ch == "\"" {
                    inQuotes = false
                } else {
                    current.append(ch)
                }
                continue
            }
            if ch == "#" { break }
            if ch == " " || ch == "\t" {
                if any { out.append(quoted ? .text(current) : CommandValue(word: current)) }
                current = ""
                quoted = false
                any = false
                continue
            }
            any = true
            if ch == "\"" {
                inQuotes = true
                quoted = true
            } else {
                current.append(ch)
            }
        }
        if inQuotes { return nil }
        if any { out.append(quoted ? .text(current) : CommandValue(word: current)) }
        return out
    }
}
