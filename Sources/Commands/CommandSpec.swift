import Presets

/// A command's name, arguments and help, once (see `Command`). `CommandSpec.all` lists every command; the OSC
/// protocol's address table, `tandem ctl`'s words, the fuzzer's list, the HTTP API's routes and docs/CONTROL.md's
/// table are all this list.
public struct CommandSpec: Sendable {
    public enum Kind: String, Sendable, Codable {
        /// Changes something.
        case action
        /// Only tells (status, lists, a value).
        case query
    }

    /// One argument.
    public struct Parameter: Sendable {
        public enum Kind: Sendable, Equatable {
            /// A name, a label, a path or a text form (a number is taken as its text).
            case name
            /// A finite number in `range`, in `unit` (" dB", " s"; empty: none).
            case number(ClosedRange<Double>, unit: String)
            /// A plugin control's value: a finite number, or a text in its unit or one of its labels; its range is the
            /// control's, checked where it is set.
            case value
            /// 1 or 0.
            case flag
            /// A whole number from 0.
            case index
        }
        public let name: String
        public let kind: Kind
        /// May be left out (only trailing parameters are).
        public let optional: Bool
        /// Takes one or more values (only the last parameter does).
        public let repeats: Bool
        public let help: String
        /// The most bytes a text of it may have (`CommandText`).
        public let maxBytes: Int

        public init(_ name: String, _ kind: Kind, optional: Bool = false, repeats: Bool = false, help: String = "",
                    maxBytes: Int = CommandText.maxBytes) {
            self.name = name
            self.kind = kind
            self.optional = optional
            self.repeats = repeats
            self.help = help
            self.maxBytes = maxBytes
        }

        /// "GAIN (dB, -120 to 24 dB)".
        public var usage: String {
            var parts: [String] = []
            if !help.isEmpty { parts.append(help) }
            switch kind {
            case .number(let r, let unit): parts.append(Limits.describe(r, unit: unit))
            case .flag: parts.append("1 or 0")
            case .index: parts.append("a whole number from 0")
            case .value: parts.append("a number, or in its unit (\"-7.5 dB\") or a label")
            case .name: break
            }
            return parts.isEmpty ? name : "\(name) (\(parts.joined(separator: ", ")))"
        }
    }

    public let address: String
    public let parameters: [Parameter]
    public let kind: Kind
    public let help: String

    /// "record start", the words `tandem ctl` takes.
    public var words: String { address.dropFirst("/tandem/".count).replacingOccurrences(of: "/", with: " ") }

    /// "/tandem/plugin/set takes ENGINE (…), PLUGIN (…), SYMBOL and VALUE (a number)".
    public var usage: String {
        guard !parameters.isEmpty else { return "\(address) takes no arguments" }
        let required = parameters.filter { !$0.optional }.map(\.usage)
        let optional = parameters.filter(\.optional).map(\.usage)
        var text = "\(address) takes"
        if !required.isEmpty { text += " " + required.joined(separator: ", ") }
        if !optional.isEmpty { text += (required.isEmpty ? " optionally " : " and optionally ") + optional.joined(separator: " ") }
        if parameters.last?.repeats == true { text += " (one or more)" }
        return text
    }

    /// The OSC type notation the protocol documents ("sssf", "ss[f]", "s..."), for the address table.
    public var signature: String {
        parameters.map { p -> String in
            let t: String
            switch p.kind {
            case .name: t = "s"
            case .value: t = "f|s"
            case .number, .flag, .index: t = "f"
            }
            return p.repeats ? t + "..." : p.optional ? "[\(t)]" : t
        }.joined()
    }

    init(_ address: String, _ kind: Kind, _ parameters: [Parameter] = [], help: String) {
        self.address = address
        self.kind = kind
        self.parameters = parameters
        self.help = help
    }

    static let engine = Parameter("ENGINE", .name, help: "recorder, player or a rack name")
    static let plugin = Parameter("PLUGIN", .name, help: "its name in the chain")
    static let symbol = Parameter("SYMBOL", .name, help: "a control's symbol")
    static let ramp = Parameter("RAMP_MS", .number(Scene.rampRange, unit: " ms"), optional: true,
                                help: "glide (or crossfade) over this many ms; 0 or none: from the next cycle")
    static let scene = Parameter("NAME", .name, help: "a scene's name")

    /// Every command, in the order the documentation lists them.
    public static let all: [CommandSpec] = [
        CommandSpec("/tandem/ping", .query, help: "replies pong"),
        CommandSpec("/tandem/status", .query, help: "the session's status as JSON"),
        CommandSpec("/tandem/record/start", .action, help: "starts a take now (with the pre-roll)"),
        CommandSpec("/tandem/record/stop", .action, help: "ends the take after every captured frame"),
        CommandSpec("/tandem/record/arm", .action, help: "ends a running take and stays armed"),
        CommandSpec("/tandem/record/rotate", .action, help: "starts the next chunk file of the running take"),
        CommandSpec("/tandem/record/mark", .action, [Parameter("LABEL", .name, optional: true, maxBytes: CommandText.maxLabelBytes)],
                    help: "a marker in the running take at the frame the request arrived"),
        CommandSpec("/tandem/play/play", .action, help: "plays or resumes"),
        CommandSpec("/tandem/play/pause", .action, help: "pauses (ramped over one period)"),
        CommandSpec("/tandem/play/stop", .action, help: "stops"),
        CommandSpec("/tandem/play/next", .action, help: "skips to the next item"),
        CommandSpec("/tandem/play/seek", .action, [Parameter("SECONDS", .number(Limits.seekSeconds, unit: " s"))],
                    help: "jumps within the current item"),
        CommandSpec("/tandem/play/gain", .action, [Parameter("GAIN", .number(Limits.gainDB, unit: " dB"), help: "dB")],
                    help: "sets the player's gain"),
        CommandSpec("/tandem/play/load", .action, [Parameter("PATH", .name, repeats: true, help: "in the session folder", maxBytes: CommandText.maxPathBytes)],
                    help: "replaces the queue"),
        CommandSpec("/tandem/preset/apply", .action, [Parameter("PATH", .name, help: "a preset in the session folder", maxBytes: CommandText.maxPathBytes)],
                    help: "reads, checks and applies a preset by difference"),
        CommandSpec("/tandem/preset/save", .action, [Parameter("NAME", .name, help: "the file NAME.toml in the session folder")],
                    help: "writes the running setup as a preset"),
        CommandSpec("/tandem/plugin/set", .action, [engine, plugin, symbol, Parameter("VALUE", .value, help: "in the control's range"), ramp],
                    help: "sets a plugin control from the next cycle, or gliding over RAMP_MS"),
        CommandSpec("/tandem/plugin/get", .query, [engine, plugin, symbol], help: "a control's current value"),
        CommandSpec("/tandem/plugin/bypass", .action, [engine, plugin, Parameter("ON", .flag, optional: true), ramp],
                    help: "bypasses a plugin (1) or brings it back (0), crossfading over RAMP_MS; without ON, reads"),
        CommandSpec("/tandem/plugin/mix", .action, [engine, Parameter("MIX", .number(Limits.mix, unit: ""), optional: true, help: "0 dry to 1 wet"), ramp],
                    help: "the chain's dry/wet mix, gliding over RAMP_MS; without MIX, reads"),
        CommandSpec("/tandem/plugin/gain", .action, [engine, Parameter("GAIN", .number(Limits.gainDB, unit: " dB"), optional: true, help: "dB"), ramp],
                    help: "the chain's output gain, gliding over RAMP_MS in dB; without GAIN, reads"),
        CommandSpec("/tandem/plugin/preset", .action, [engine, plugin, Parameter("PRESET", .name, help: "a URI")],
                    help: "loads an LV2 preset on a running plugin"),
        CommandSpec("/tandem/plugin/list", .query, [Parameter("ENGINE", .name, optional: true, help: "recorder, player or a rack name")],
                    help: "every plugin of every chain (or one engine's) with its controls and presets, as JSON"),
        CommandSpec("/tandem/plugin/save", .action, help: "saves every chain's state into the session folder now"),
        CommandSpec("/tandem/plugin/add", .action, [engine, Parameter("PLUGIN", .name, help: "URI[,name=NAME][,SYMBOL=VALUE...] of an installed plugin"),
                                                    Parameter("POSITION", .index, optional: true, help: "0 first; default last")],
                    help: "adds a plugin to a running chain (named NAME, else after its URI, made unique)"),
        CommandSpec("/tandem/plugin/remove", .action, [engine, plugin], help: "removes a plugin from a running chain"),
        CommandSpec("/tandem/plugin/move", .action, [engine, plugin, Parameter("POSITION", .index, help: "0 first")],
                    help: "moves a plugin within its chain"),
        CommandSpec("/tandem/engines", .query, help: "every engine with its client and ports, as JSON"),
        CommandSpec("/tandem/takes", .query, help: "the takes whose reports are in the session folder, as JSON"),
        CommandSpec("/tandem/graph", .query,
                    help: "every port of the JACK graph with its type, direction, latency and connections, as JSON"),
        CommandSpec("/tandem/graph/connect", .action, [Parameter("FROM", .name, help: "an output port"),
                                                       Parameter("TO", .name, help: "an input port")],
                    help: "connects two ports of the graph"),
        CommandSpec("/tandem/graph/disconnect", .action, [Parameter("FROM", .name, help: "an output port"),
                                                          Parameter("TO", .name, help: "an input port")],
                    help: "disconnects two ports of the graph"),
        CommandSpec("/tandem/map/learn", .action,
                    [Parameter("ENGINE", .name, optional: true, help: "recorder, player or a rack name"),
                     Parameter("PLUGIN", .name, optional: true), Parameter("SYMBOL", .name, optional: true),
                     Parameter("MIN", .number(ControlMap.values, unit: ""), optional: true),
                     Parameter("MAX", .number(ControlMap.values, unit: ""), optional: true),
                     Parameter("CURVE", .name, optional: true, help: "linear, log or exp")],
                    help: "binds the next CC on a rack's MIDI input to a control; without arguments, cancels a waiting learn"),
        CommandSpec("/tandem/map/add", .action, [Parameter("MAP", .name, help: "its one-line form, e.g. \"cc 1 7 -> rack:amp:gain -40..0\"")],
                    help: "adds a control map"),
        CommandSpec("/tandem/map/list", .query, help: "the control maps and a waiting learn, as JSON"),
        CommandSpec("/tandem/map/clear", .action, [Parameter("INDEX", .index, optional: true, help: "as listed")],
                    help: "removes one map, or every map and a waiting learn"),
        CommandSpec("/tandem/scene/recall", .action,
                    [scene, Parameter("RAMP_MS", .number(Scene.rampRange, unit: " ms"), optional: true, help: "default the scene's own")],
                    help: "recalls a scene: every value it sets starts changing in the same cycle, gliding over the ramp"),
        CommandSpec("/tandem/scene/save", .action,
                    [scene, Parameter("PATH", .name, optional: true, repeats: true,
                                      help: "ENGINE/PLUGIN/SYMBOL, ENGINE/PLUGIN/@bypass, ENGINE/@mix, ENGINE/@gain or player/@player_gain")],
                    help: "captures the running rig as a scene (every control, or the paths named), replacing one of that name"),
        CommandSpec("/tandem/scene/list", .query, help: "the scenes with their values, as JSON"),
        CommandSpec("/tandem/scene/rename", .action, [Parameter("OLD", .name, help: "a scene's name"),
                                                      Parameter("NEW", .name, help: "its new name")],
                    help: "renames a scene"),
        CommandSpec("/tandem/scene/delete", .action, [scene], help: "deletes a scene"),
        CommandSpec("/tandem/scene/morph", .action,
                    [Parameter("FROM", .name, help: "a scene's name"), Parameter("TO", .name, help: "a scene's name"),
                     Parameter("X", .number(0...1, unit: ""), help: "0 FROM to 1 TO")],
                    help: "sets every value of two scenes between them (continuous ones in their own scale, discrete ones switch at 0.5)"),
    ]

    /// The specs by address.
    public static let named: [String: CommandSpec] = Dictionary(uniqueKeysWithValues: all.map { ($0.address, $0) })

    /// The spec `tandem ctl`'s words name ("record start", "plugin set") and the words left for arguments; nil when
    /// none does.
    public static func matching(words: [String]) -> (spec: CommandSpec, rest: [String])? {
        for count in stride(from: min(2, words.count), through: 1, by: -1) {
            let address = "/tandem/" + words.prefix(count).joined(separator: "/")
            if let spec = named[address] { return (spec, Array(words.dropFirst(count))) }
        }
        return nil
    }
}
