import Presets

/// One thing a surface asks a running session to do or tell: the one model of commands under every surface (OSC,
/// `tandem ctl`, control maps, HTTP). Each has a spec (`CommandSpec.all`: its address, its words, its arguments with
/// their kinds and ranges, its help); every surface parses into a `Command` through `Command.parse`, so the same
/// input gets the same checks and the same error words wherever it comes from. The session carries it out
/// (`Session.execute`) and answers with a `CommandReply`.
///
/// Pure: no JACK, no session; any thread.
public enum Command: Sendable, Equatable {
    case ping
    case status
    case engines
    case takes
    /// Every port of the JACK graph with its type, direction, latency and connections.
    case graph
    /// Connects or disconnects two ports of the graph (any clients', as a patchbay does).
    case connect(from: String, to: String)
    case disconnect(from: String, to: String)
    case recordStart
    case recordStop
    case recordArm
    case recordRotate
    case recordMark(label: String)
    case play
    case pause
    case stop
    case next
    case seek(seconds: Double)
    case playerGain(dB: Double)
    case load(paths: [String])
    case presetApply(path: String)
    case presetSave(name: String)
    /// `rampMS`: glide there over that many milliseconds (a toggle, integer or enumeration switches under a
    /// crossfade instead); nil or 0: from the next cycle. The same for bypass (a crossfade), mix and gain.
    case pluginSet(engine: String, plugin: String, symbol: String, value: ControlSetting, rampMS: Double? = nil)
    case pluginGet(engine: String, plugin: String, symbol: String)
    /// `on` nil: read only.
    case pluginBypass(engine: String, plugin: String, on: Bool?, rampMS: Double? = nil)
    case pluginMix(engine: String, mix: Double?, rampMS: Double? = nil)
    case pluginGain(engine: String, dB: Double?, rampMS: Double? = nil)
    case pluginPreset(engine: String, plugin: String, uri: String)
    case pluginList(engine: String?)
    case pluginSave
    /// Edits a running chain: a plugin added (at `at`, else at the end), removed, or moved to `to`. `spec` is the
    /// command line's form, `URI[,name=NAME][,preset=URI][,bypass][,SYMBOL=VALUE...]`.
    case pluginAdd(engine: String, spec: String, at: Int?)
    case pluginRemove(engine: String, plugin: String)
    case pluginMove(engine: String, plugin: String, to: Int)
    /// nil: cancel a waiting learn.
    case mapLearn(MapLearn?)
    case mapAdd(text: String)
    case mapList
    /// nil: every map (and a waiting learn).
    case mapClear(index: Int?)
    /// Recalls a scene: its values glide (or switch under a crossfade) over `rampMS` (nil: the scene's own ramp).
    case sceneRecall(name: String, rampMS: Double?)
    /// Captures the running rig as scene `name` (replacing one of that name): every control, mix and gain, or only
    /// `paths` (each a `ScenePath`'s text form, checked when parsed).
    case sceneSave(name: String, paths: [String])
    case sceneList
    case sceneRename(from: String, to: String)
    case sceneDelete(name: String)
    /// Sets every value `from` and `to` have between the two: `position` 0 is `from`, 1 is `to`.
    case sceneMorph(from: String, to: String, position: Double)

    /// What `/tandem/map/learn` asks for: the control a CC is to drive, over an optional range and curve.
    public struct MapLearn: Sendable, Equatable {
        public var engine: String
        public var plugin: String
        public var symbol: String
        public var minimum: Double?
        public var maximum: Double?
        public var curve: ControlMap.Curve?

        public init(engine: String, plugin: String, symbol: String, minimum: Double? = nil, maximum: Double? = nil,
                    curve: ControlMap.Curve? = nil) {
            self.engine = engine
            self.plugin = plugin
            self.symbol = symbol
            self.minimum = minimum
            self.maximum = maximum
            self.curve = curve
        }
    }

    /// The command's spec.
    public var spec: CommandSpec { CommandSpec.named[address]! }

    /// The OSC address it has (its identity on every surface).
    public var address: String {
        switch self {
        case .ping: "/tandem/ping"
        case .status: "/tandem/status"
        case .engines: "/tandem/engines"
        case .takes: "/tandem/takes"
        case .graph: "/tandem/graph"
        case .connect: "/tandem/graph/connect"
        case .disconnect: "/tandem/graph/disconnect"
        case .recordStart: "/tandem/record/start"
        case .recordStop: "/tandem/record/stop"
        case .recordArm: "/tandem/record/arm"
        case .recordRotate: "/tandem/record/rotate"
        case .recordMark: "/tandem/record/mark"
        case .play: "/tandem/play/play"
        case .pause: "/tandem/play/pause"
        case .stop: "/tandem/play/stop"
        case .next: "/tandem/play/next"
        case .seek: "/tandem/play/seek"
        case .playerGain: "/tandem/play/gain"
        case .load: "/tandem/play/load"
        case .presetApply: "/tandem/preset/apply"
        case .presetSave: "/tandem/preset/save"
        case .pluginSet: "/tandem/plugin/set"
        case .pluginGet: "/tandem/plugin/get"
        case .pluginBypass: "/tandem/plugin/bypass"
        case .pluginMix: "/tandem/plugin/mix"
        case .pluginGain: "/tandem/plugin/gain"
        case .pluginPreset: "/tandem/plugin/preset"
        case .pluginList: "/tandem/plugin/list"
        case .pluginSave: "/tandem/plugin/save"
        case .pluginAdd: "/tandem/plugin/add"
        case .pluginRemove: "/tandem/plugin/remove"
        case .pluginMove: "/tandem/plugin/move"
        case .mapLearn: "/tandem/map/learn"
        case .mapAdd: "/tandem/map/add"
        case .mapList: "/tandem/map/list"
        case .mapClear: "/tandem/map/clear"
        case .sceneRecall: "/tandem/scene/recall"
        case .sceneSave: "/tandem/scene/save"
        case .sceneList: "/tandem/scene/list"
        case .sceneRename: "/tandem/scene/rename"
        case .sceneDelete: "/tandem/scene/delete"
        case .sceneMorph: "/tandem/scene/morph"
        }
    }

    /// The engine a plugin command names (the chain it acts on), or nil.
    public var engine: String? {
        switch self {
        case .pluginSet(let e, _, _, _, _), .pluginGet(let e, _, _), .pluginBypass(let e, _, _, _), .pluginMix(let e, _, _),
             .pluginGain(let e, _, _), .pluginPreset(let e, _, _), .pluginAdd(let e, _, _), .pluginRemove(let e, _),
             .pluginMove(let e, _, _):
            return e
        case .pluginList(let e): return e
        default: return nil
        }
    }

    /// The arguments as a surface would send them again (OSC's, the command line's words): `parse` of these gives
    /// back this command.
    public var values: [CommandValue] {
        switch self {
        case .recordMark(let label): return label.isEmpty ? [] : [.text(label)]
        case .seek(let s): return [.number(s)]
        case .playerGain(let d): return [.number(d)]
        case .load(let paths): return paths.map { .text($0) }
        case .presetApply(let p): return [.text(p)]
        case .presetSave(let n): return [.text(n)]
        case .pluginSet(let e, let p, let s, let v, let r):
            let ramp: [CommandValue] = r.map { [.number($0)] } ?? []
            switch v {
            case .number(let d): return [.text(e), .text(p), .text(s), .number(d)] + ramp
            case .text(let t): return [.text(e), .text(p), .text(s), .text(t)] + ramp
            }
        case .pluginGet(let e, let p, let s): return [.text(e), .text(p), .text(s)]
        case .pluginBypass(let e, let p, let on, let r):
            return [.text(e), .text(p)] + (on.map { [.number($0 ? 1 : 0)] + (r.map { [.number($0)] } ?? []) } ?? [])
        case .pluginMix(let e, let m, let r): return [.text(e)] + (m.map { [.number($0)] + (r.map { [.number($0)] } ?? []) } ?? [])
        case .pluginGain(let e, let d, let r): return [.text(e)] + (d.map { [.number($0)] + (r.map { [.number($0)] } ?? []) } ?? [])
        case .pluginPreset(let e, let p, let u): return [.text(e), .text(p), .text(u)]
        case .pluginList(let e): return e.map { [.text($0)] } ?? []
        case .pluginAdd(let e, let spec, let at): return [.text(e), .text(spec)] + (at.map { [.number(Double($0))] } ?? [])
        case .pluginRemove(let e, let p): return [.text(e), .text(p)]
        case .pluginMove(let e, let p, let to): return [.text(e), .text(p), .number(Double(to))]
        case .mapLearn(let l):
            guard let l else { return [] }
            var v: [CommandValue] = [.text(l.engine), .text(l.plugin), .text(l.symbol)]
            if let lo = l.minimum, let hi = l.maximum { v += [.number(lo), .number(hi)] }
            if let c = l.curve { v.append(.text(c.rawValue)) }
            return v
        case .mapAdd(let t): return [.text(t)]
        case .mapClear(let i): return i.map { [.number(Double($0))] } ?? []
        case .connect(let a, let b), .disconnect(let a, let b): return [.text(a), .text(b)]
        case .sceneRecall(let n, let ramp): return [.text(n)] + (ramp.map { [.number($0)] } ?? [])
        case .sceneSave(let n, let paths): return [.text(n)] + paths.map { .text($0) }
        case .sceneRename(let a, let b): return [.text(a), .text(b)]
        case .sceneDelete(let n): return [.text(n)]
        case .sceneMorph(let a, let b, let x): return [.text(a), .text(b), .number(x)]
        default: return []
        }
    }
}

/// A plugin control's value as a surface gives it: its number, or a text in the control's unit ("-7.5 dB",
/// "1.2 kHz", "250 ms", "40 %") or one of its labels ("Lowpass"), which the session reads with the plugin's own
/// metadata (`ControlUnits`).
public enum ControlSetting: Sendable, Equatable, CustomStringConvertible {
    case number(Double)
    case text(String)

    public var description: String {
        switch self {
        case .number(let d): return Limits.number(d)
        case .text(let t): return "'\(t)'"
        }
    }
}

/// One argument as a surface hands it over: OSC's strings, symbols and numbers of every width, a command line's
/// words (a word that reads as a number is a number), JSON's strings and numbers.
public enum CommandValue: Sendable, Equatable, CustomStringConvertible {
    case text(String)
    case number(Double)

    /// A command line's word: a number when it reads as one.
    public init(word: String) {
        if let d = Double(word), !word.isEmpty, word.first != "+", word.lowercased() != "nan", !word.lowercased().contains("inf") {
            self = .number(d)
        } else {
            self = .text(word)
        }
    }

    /// As a name: a number is taken as its text (`ctl plugin set fx 2 …` names a plugin "2").
    public var name: String {
        switch self {
        case .text(let s): return s
        case .number(let d): return Limits.number(d)
        }
    }

    public var number: Double? {
        if case .number(let d) = self { return d }
        return nil
    }

    public var description: String {
        switch self {
        case .text(let s): return "'\(s)'"
        case .number(let d): return Limits.number(d)
        }
    }
}

/// What a command answered: done or refused, and a detail for a person (the status JSON, a value, why not).
public struct CommandReply: Sendable, Equatable {
    public var ok: Bool
    public var detail: String
    /// Why a refusal was one (nil when done): what a surface with status codes answers with.
    public var refusal: Refusal?

    /// What kind of refusal: something named that the session does not have (HTTP 404), a value it does not take
    /// (400), or a request the session is not in a state to carry out (409).
    public enum Refusal: Sendable, Equatable {
        case notFound, badValue, conflict
    }

    public init(ok: Bool, detail: String = "", refusal: Refusal? = nil) {
        self.ok = ok
        self.detail = detail
        self.refusal = ok ? nil : refusal ?? .conflict
    }

    public static func done(_ detail: String = "") -> CommandReply { CommandReply(ok: true, detail: detail) }
    public static func refused(_ why: String, _ kind: Refusal = .conflict) -> CommandReply {
        CommandReply(ok: false, detail: why, refusal: kind)
    }
}

/// Why a command could not be parsed: in the words every surface answers with.
public struct CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
