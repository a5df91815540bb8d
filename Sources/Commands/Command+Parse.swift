import Presets

extension Command {
    /// The command `address` with `values` asks for, checked against its spec: the count, each value's kind, each
    /// number's range. The error words are the same for every surface.
    public static func parse(address: String, values: [CommandValue]) -> Result<Command, CommandError> {
        guard let spec = CommandSpec.named[address] else {
            return .failure(CommandError("unknown command '\(address)' (known: "
                                         + CommandSpec.all.map(\.address).joined(separator: ", ") + ")"))
        }
        let bound: [Bound]
        switch bind(spec, values) {
        case .failure(let e): return .failure(e)
        case .success(let b): bound = b
        }
        func name(_ i: Int) -> String { bound[i].name }
        func number(_ i: Int) -> Double? { i < bound.count ? bound[i].number : nil }
        switch address {
        case "/tandem/ping": return .success(.ping)
        case "/tandem/status": return .success(.status)
        case "/tandem/engines": return .success(.engines)
        case "/tandem/takes": return .success(.takes)
        case "/tandem/graph": return .success(.graph)
        case "/tandem/graph/connect": return .success(.connect(from: name(0), to: name(1)))
        case "/tandem/graph/disconnect": return .success(.disconnect(from: name(0), to: name(1)))
        case "/tandem/record/start": return .success(.recordStart)
        case "/tandem/record/stop": return .success(.recordStop)
        case "/tandem/record/arm": return .success(.recordArm)
        case "/tandem/record/rotate": return .success(.recordRotate)
        case "/tandem/record/mark": return .success(.recordMark(label: bound.first?.name ?? ""))
        case "/tandem/play/play": return .success(.play)
        case "/tandem/play/pause": return .success(.pause)
        case "/tandem/play/stop": return .success(.stop)
        case "/tandem/play/next": return .success(.next)
        case "/tandem/play/seek": return .success(.seek(seconds: number(0)!))
        case "/tandem/play/gain": return .success(.playerGain(dB: number(0)!))
        case "/tandem/play/load": return .success(.load(paths: bound.map(\.name)))
        case "/tandem/preset/apply": return .success(.presetApply(path: name(0)))
        case "/tandem/preset/save":
            if let why = CommandText.presetNameProblem(name(0)) { return .failure(CommandError(why)) }
            return .success(.presetSave(name: name(0)))
        case "/tandem/plugin/set":
            let setting: ControlSetting = number(3).map { .number($0) } ?? .text(name(3))
            return .success(.pluginSet(engine: name(0), plugin: name(1), symbol: name(2), value: setting, rampMS: number(4)))
        case "/tandem/plugin/get": return .success(.pluginGet(engine: name(0), plugin: name(1), symbol: name(2)))
        case "/tandem/plugin/bypass":
            return .success(.pluginBypass(engine: name(0), plugin: name(1), on: number(2).map { $0 == 1 }, rampMS: number(3)))
        case "/tandem/plugin/mix": return .success(.pluginMix(engine: name(0), mix: number(1), rampMS: number(2)))
        case "/tandem/plugin/gain": return .success(.pluginGain(engine: name(0), dB: number(1), rampMS: number(2)))
        case "/tandem/plugin/preset": return .success(.pluginPreset(engine: name(0), plugin: name(1), uri: name(2)))
        case "/tandem/plugin/list": return .success(.pluginList(engine: bound.first?.name))
        case "/tandem/plugin/save": return .success(.pluginSave)
        case "/tandem/plugin/add": return .success(.pluginAdd(engine: name(0), spec: name(1), at: number(2).map { Int($0) }))
        case "/tandem/plugin/remove": return .success(.pluginRemove(engine: name(0), plugin: name(1)))
        case "/tandem/plugin/move": return .success(.pluginMove(engine: name(0), plugin: name(1), to: Int(number(2)!)))
        case "/tandem/map/learn": return learn(spec, values)
        case "/tandem/map/add": return .success(.mapAdd(text: name(0)))
        case "/tandem/map/list": return .success(.mapList)
        case "/tandem/map/clear": return .success(.mapClear(index: number(0).map { Int($0) }))
        case "/tandem/scene/recall": return .success(.sceneRecall(name: name(0), rampMS: number(1)))
        case "/tandem/scene/save":
            if let why = Scene.nameProblem(name(0)) { return .failure(CommandError(why)) }
            let paths = bound.dropFirst().map(\.name)
            var seen = Set<String>()
            for path in paths {
                if case .failure(let why) = ScenePath.parse(path) { return .failure(CommandError(why.description)) }
                if !seen.insert(path).inserted { return .failure(CommandError("'\(path)' is named twice")) }
            }
            return .success(.sceneSave(name: name(0), paths: paths))
        case "/tandem/scene/list": return .success(.sceneList)
        case "/tandem/scene/rename":
            if let why = Scene.nameProblem(name(1)) { return .failure(CommandError(why)) }
            return .success(.sceneRename(from: name(0), to: name(1)))
        case "/tandem/scene/delete": return .success(.sceneDelete(name: name(0)))
        case "/tandem/scene/morph":
            if name(0) == name(1) {
                return .failure(CommandError("a morph goes between two different scenes (both '\(name(0))')"))
            }
            return .success(.sceneMorph(from: name(0), to: name(1), position: number(2)!))
        default: return .failure(CommandError("unknown command '\(address)'"))
        }
    }

    /// `tandem ctl`'s words: `record start`, `plugin set fx amp gain -6`, or an address and its arguments.
    public static func parse(words: [String]) -> Result<Command, CommandError> {
        guard let first = words.first else { return .failure(CommandError("give a command, e.g. 'record start'")) }
        if first.hasPrefix("/") { return parse(address: first, values: words.dropFirst().map(CommandValue.init(word:))) }
        guard let (spec, rest) = CommandSpec.matching(words: words) else {
            return .failure(CommandError("unknown command '\(words.prefix(2).joined(separator: " "))' (known: "
                                         + CommandSpec.all.map(\.words).joined(separator: ", ") + ")"))
        }
        return parse(address: spec.address, values: rest.map(CommandValue.init(word:)))
    }

    /// A checked value of one parameter.
    struct Bound {
        var name: String
        var number: Double?
    }

    /// Checks `values` against `spec`'s parameters: counts, kinds, ranges.
    static func bind(_ spec: CommandSpec, _ values: [CommandValue]) -> Result<[Bound], CommandError> {
        let params = spec.parameters
        let required = params.filter { !$0.optional }.count
        let repeats = params.last?.repeats == true
        func usage(_ got: String) -> CommandError { CommandError(spec.usage + "; got " + got) }
        let got = values.isEmpty ? "nothing" : values.map(\.description).joined(separator: ", ")
        if values.count < required || (!repeats && values.count > params.count) { return .failure(usage(got)) }
        if spec.address == "/tandem/map/learn" {   // its own grammar (`learn`); its texts one line all the same
            for case .text(let text) in values {
                if let why = CommandText.problem(text, what: "a map/learn argument") { return .failure(CommandError(why)) }
            }
            return .success([])
        }
        var out: [Bound] = []
        for (i, v) in values.enumerated() {
            let p = params[min(i, params.count - 1)]
            if case .text(let text) = v, let why = CommandText.problem(text, what: p.name, maxBytes: p.maxBytes) {
                return .failure(CommandError(why))
            }
            switch p.kind {
            case .name:
                out.append(Bound(name: v.name))
            case .value:
                // A number, or a text in the control's unit or one of its labels (read where it is set).
                switch v {
                case .number(let d):
                    guard d.isFinite else { return .failure(usage(got)) }
                    out.append(Bound(name: v.name, number: d))
                case .text(let t):
                    guard !t.trimmingCharacters(in: .whitespaces).isEmpty else { return .failure(usage(got)) }
                    out.append(Bound(name: t, number: nil))
                }
            case .number(let range, let unit):
                guard let d = v.number, d.isFinite else { return .failure(usage(got)) }
                guard Limits.contains(range, d) else {
                    return .failure(CommandError("\(p.name.lowercased()) \(Limits.number(d)) is out of range ("
                                                 + Limits.describe(range, unit: unit) + ")"))
                }
                out.append(Bound(name: v.name, number: d))
            case .flag:
                guard let d = v.number, d == 0 || d == 1 else { return .failure(usage(got)) }
                out.append(Bound(name: v.name, number: d))
            case .index:
                guard let d = v.number, d.isFinite, d >= 0, d == d.rounded(), d < 1e9 else {
                    return .failure(CommandError("\(p.name.lowercased()) \(v.description) is not a whole number from 0"))
                }
                out.append(Bound(name: v.name, number: d))
            }
        }
        return .success(out)
    }

    /// `/tandem/map/learn ENGINE PLUGIN SYMBOL [MIN MAX] [CURVE]`, or nothing (cancel).
    static func learn(_ spec: CommandSpec, _ values: [CommandValue]) -> Result<Command, CommandError> {
        if values.isEmpty { return .success(.mapLearn(nil)) }
        let usage = CommandError(spec.usage + "; MIN and MAX from -1e9 to 1e9, both or neither")
        guard values.count >= 3 else { return .failure(usage) }
        var l = MapLearn(engine: values[0].name, plugin: values[1].name, symbol: values[2].name)
        var rest = Array(values.dropFirst(3))
        if case .text(let word)? = rest.last {
            guard let curve = ControlMap.Curve(rawValue: word) else { return .failure(usage) }
            l.curve = curve
            rest.removeLast()
        }
        if !rest.isEmpty {
            guard rest.count == 2, let lo = rest[0].number, let hi = rest[1].number, lo.isFinite, hi.isFinite else {
                return .failure(usage)
            }
            for (name, v) in [("min", lo), ("max", hi)] where !ControlMap.values.contains(v) {
                return .failure(CommandError("\(name) \(Limits.number(v)) is out of range ("
                                             + Limits.describe(ControlMap.values, unit: "") + ")"))
            }
            (l.minimum, l.maximum) = (lo, hi)
        }
        return .success(.mapLearn(l))
    }
}
