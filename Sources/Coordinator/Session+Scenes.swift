import Commands
import Engine
import Foundation
import Plugins
import Presets

/// The session's scenes and what it last did with them. Control thread.
struct SceneState {
    var book = SceneBook()
    /// The scene recalled last (nil: none, or the rig changed by a morph since).
    var current: String?
    /// The morph in force: between which scenes, how far.
    var morph: (from: String, to: String, position: Double)?
    /// How long the last recall's relays to isolated racks took after the in-process chains started, in ms.
    var lastLagMS: Double?
    /// Isolated racks that did not answer during the operation under way (a recall, a save, a morph): not asked
    /// again until it ends, so a hung rack costs one timeout, not one per value.
    var unanswered: Set<String> = []
}

// Scenes (docs/PRESETS.md "Scenes"): a recall turns each value into the command of the command model that sets it
// (with the scene's ramp), holds every chain of this process until one cycle (`PluginChain.hold`), and carries the
// commands out through `execute` as any surface's; so each value is checked, said as a change (`controlChanged` …),
// logged in a running take's control log with its ramp (a render of the take glides the same way), and relayed to an
// isolated rack's process like any other plugin command. A value the rig does not take is reported; the rest apply.
extension Session {
    /// The scenes the session holds, in order.
    public var scenes: SceneBook { sceneState.book }

    /// Takes a preset's scenes (a preset applied); those saved at run time go with the preset they were made in.
    func setScenes(_ list: [Scene]) {
        guard list != sceneState.book.scenes else { return }
        sceneState.book = SceneBook(list)
        sceneState.current = nil
        sceneState.morph = nil
    }

    /// The command that gives `value` to its path, gliding over `rampMS`; or why the rig cannot take it.
    func sceneCommand(_ value: SceneValue, rampMS: Double) -> Result<Command, SceneError> {
        let path = value.path
        func fail(_ why: String) -> Result<Command, SceneError> { .failure(SceneError(.badValue, why)) }
        if let why = value.problem { return fail(why) }
        guard hasEngine(path.engine) else { return fail("'\(path)': " + Self.unknownEngine(path.engine)) }
        let ramp: Double? = rampMS > 0 ? rampMS : nil
        switch path.target {
        case .control(let symbol):
            guard let plugin = path.plugin else { return fail("'\(path)' names no plugin") }
            let setting: ControlSetting
            switch value.value {
            case .number(let d): setting = .number(d)
            case .text(let t): setting = .text(t)
            }
            return .success(.pluginSet(engine: path.engine, plugin: plugin, symbol: symbol, value: setting, rampMS: ramp))
        case .bypass:
            guard let plugin = path.plugin, let on = value.fixedNumber else { return fail("'\(path)' names no plugin") }
            return .success(.pluginBypass(engine: path.engine, plugin: plugin, on: on == 1, rampMS: ramp))
        case .mix:
            guard let m = value.fixedNumber else { return fail("'\(path)': a mix is a number") }
            return .success(.pluginMix(engine: path.engine, mix: m, rampMS: ramp))
        case .gain:
            guard let d = value.fixedNumber else { return fail("'\(path)': a gain is a number of dB") }
            return .success(.pluginGain(engine: path.engine, dB: d, rampMS: ramp))
        case .playerGain:
            guard player != nil else { return fail("'\(path)': this session has no player") }
            guard let d = value.fixedNumber else { return fail("'\(path)': a gain is a number of dB") }
            return .success(.playerGain(dB: d))
        }
    }

    /// Sets `values` on the rig, every in-process chain starting in one cycle, each continuous value gliding over
    /// `rampMS`. Returns how many applied, and the others with why ("PATH: why"), and how long after the
    /// in-process start the isolated racks' relays were done (nil: none).
    func applySceneValues(_ values: [SceneValue], rampMS: Double,
                          context: CommandContext) -> (applied: Int, missing: [String], lagMS: Double?) {
        var applied = 0, missing: [String] = []
        // One cycle for every chain here: the next one that starts at least half a period from now.
        let holds = chainEngines.compactMap { chain($0) }
        if let c = patchClient, c.bufferSize > 0 {
            let period = UInt32(c.bufferSize), cycle = c.cycleFrameTime
            let into = c.frameTime &- cycle
            let start = cycle &+ period &+ (into > period / 2 ? period : 0)
            for chain in holds { chain.hold(until: start) }
        }
        var isolated: [Command] = []
        for v in values {
            switch sceneCommand(v, rampMS: rampMS) {
            case .failure(let why):
                missing.append(why.description)
            case .success(let command):
                if let e = command.engine, racks[e] == nil, supervisors[e] != nil {
                    isolated.append(command)   // after the in-process chains: they start first
                    continue
                }
                if case .playerGain(let dB) = command {
                    player?.setGain(dB: dB, rampFrames: rampFrames(rampMS))
                    applied += 1
                    continue
                }
                let reply = execute(command, context: context)
                if reply.ok { applied += 1 } else { missing.append("'\(v.path)': \(reply.detail)") }
            }
        }
        var lag: Double?
        if !isolated.isEmpty {
            let began = DispatchTime.now().uptimeNanoseconds
            for command in isolated {
                let rack = command.engine ?? ""
                if sceneState.unanswered.contains(rack) {
                    missing.append("\(rack): not tried (the rack did not answer this recall's first value)")
                    continue
                }
                let reply = execute(command, context: context)
                if reply.ok { applied += 1 } else { missing.append("\(rack): \(reply.detail)") }
                if !reply.ok && reply.detail.contains("did not answer") { sceneState.unanswered.insert(rack) }
            }
            lag = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e6
        }
        return (applied, missing, lag)
    }

    /// Recalls scene `name` over `rampMS` (nil: the scene's own ramp).
    public func recallScene(_ name: String, rampMS: Double? = nil, context: CommandContext) -> CommandReply {
        let scene: Scene
        do { scene = try sceneState.book.find(name) } catch { return .refused(error.description, .notFound) }
        let ramp = rampMS ?? scene.ramp
        guard Scene.rampRange.contains(ramp) else {
            return .refused("ramp \(Limits.number(ramp)) ms is out of range (allowed: \(Limits.describe(Scene.rampRange, unit: " ms")))",
                            .badValue)
        }
        sceneState.unanswered = []
        let (applied, missing, lag) = applySceneValues(scene.values, rampMS: ramp, context: context)
        sceneState.current = name
        sceneState.morph = nil
        sceneState.lastLagMS = lag
        events.append(.sceneRecalled(name: name, rampMS: ramp, applied: applied, missing: missing, lagMS: lag,
                                     source: context.source))
        if let r = recorder, r.isRecording { _ = execute(.recordMark(label: "scene \(name)"), context: context) }
        return .done("scene '\(name)' recalled: \(applied) value(s) over \(Limits.number(ramp)) ms"
                     + (lag.map { String(format: "; isolated racks %.2f ms after", $0) } ?? "")
                     + (missing.isEmpty ? "" : "; not applied: " + missing.joined(separator: "; ")))
    }

    /// The value the running rig has at `path` (nil: it has none there, or an isolated rack did not say).
    func currentSceneValue(_ path: ScenePath) -> SceneNumber? {
        let engine = ChainEngine(rawValue: path.engine)
        if case .playerGain = path.target { return player.map { .number($0.gainDB) } }
        if let c = chain(engine) {
            switch path.target {
            case .control(let symbol):
                guard let plugin = path.plugin, let v = try? c.value(plugin, symbol) else { return nil }
                return .number(Limits.double(v))
            case .bypass:
                guard let plugin = path.plugin, let on = try? c.isBypassed(plugin) else { return nil }
                return .number(on ? 1 : 0)
            case .mix: return .number(c.mix)
            case .gain: return .number(c.gainDB)
            case .playerGain: return nil
            }
        }
        guard racks[path.engine] == nil, supervisors[path.engine] != nil,
              !sceneState.unanswered.contains(path.engine) else { return nil }
        let context = CommandContext(source: "scene")
        let reply: CommandReply
        switch path.target {
        case .control(let symbol):
            guard let plugin = path.plugin else { return nil }
            reply = execute(.pluginGet(engine: path.engine, plugin: plugin, symbol: symbol), context: context)
        case .bypass:
            guard let plugin = path.plugin else { return nil }
            reply = execute(.pluginBypass(engine: path.engine, plugin: plugin, on: nil), context: context)
        case .mix: reply = execute(.pluginMix(engine: path.engine, mix: nil), context: context)
        case .gain: reply = execute(.pluginGain(engine: path.engine, dB: nil), context: context)
        case .playerGain: return nil
        }
        if !reply.ok && reply.detail.contains("did not answer") { sceneState.unanswered.insert(path.engine) }
        guard reply.ok, let d = Double(reply.detail), d.isFinite else { return nil }
        return .number(d)
    }

    /// Why the rig has no value at `path`, told without asking a process: no such engine, plugin or control (an
    /// isolated rack's looked up in its plugin's data); nil when it may have one.
    func scenePathProblem(_ path: ScenePath) -> String? {
        guard hasEngine(path.engine) else { return "'\(path)': " + Self.unknownEngine(path.engine) }
        if case .playerGain = path.target { return player == nil ? "'\(path)': this session has no player" : nil }
        let engine = ChainEngine(rawValue: path.engine)
        if chain(engine) == nil && (racks[path.engine] != nil || supervisors[path.engine] == nil) {
            return "'\(path)': the \(path.engine) has no plugin chain"
        }
        guard let plugin = path.plugin else { return nil }
        let specs = chainSpecs(engine)
        guard let spec = specs.first(where: { $0.name == plugin }) else {
            return "'\(path)': the \(path.engine) has no plugin '\(plugin)' (plugins: "
                + (specs.isEmpty ? "none" : specs.map(\.name).joined(separator: ", ")) + ")"
        }
        guard case .control(let symbol) = path.target else { return nil }
        let controls = chain(engine)?.controls(of: plugin)
            ?? PluginHost.shared.plugin(spec.uri)?.ports.filter { $0.kind == .control && $0.isInput } ?? []
        guard controls.contains(where: { $0.symbol == symbol }) else {
            return "'\(path)': <\(spec.uri)> has no control '\(symbol)'"
        }
        return nil
    }

    /// Every path the running rig has a value at (what a scene saved without paths captures): each plugin's
    /// controls and bypass, each chain's mix and gain, the player's gain. An isolated rack's come from its process.
    func rigPaths() -> [ScenePath] {
        var out: [ScenePath] = []
        var engines = chainEngines.map(\.rawValue)
        engines += supervisors.keys.sorted().filter { racks[$0] == nil }
        for e in engines {
            let engine = ChainEngine(rawValue: e)
            for spec in chainSpecs(engine) {
                let symbols: [String]
                if let c = chain(engine) {
                    symbols = (c.controls(of: spec.name) ?? []).map(\.symbol)
                } else {
                    symbols = (PluginHost.shared.plugin(spec.uri)?.ports ?? [])
                        .filter { $0.kind == .control && $0.isInput }.map(\.symbol)
                }
                out += symbols.compactMap { ScenePath.control(engine: e, plugin: spec.name, symbol: $0) }
                if let p = ScenePath(engine: e, plugin: spec.name, target: .bypass) { out.append(p) }
            }
            if chain(engine) != nil || supervisors[e] != nil {
                out += [ScenePath(engine: e, plugin: nil, target: .mix), ScenePath(engine: e, plugin: nil, target: .gain)]
                    .compactMap { $0 }
            }
        }
        if player != nil, let p = ScenePath(engine: "player", plugin: nil, target: .playerGain) { out.append(p) }
        return out
    }

    /// Captures the running rig as scene `name` (every value, or those at `paths`), keeping its ramp when it
    /// replaces one.
    public func saveScene(_ name: String, paths texts: [String], context: CommandContext) -> CommandReply {
        var paths: [ScenePath] = []
        for t in texts {
            switch ScenePath.parse(t) {
            case .success(let p): paths.append(p)
            case .failure(let e): return .refused(e.description, .badValue)
            }
        }
        // Paths named are checked first, without asking any process (an isolated rack's from its plugin's data).
        let problems = paths.compactMap(scenePathProblem)
        if !problems.isEmpty {
            return .refused("scene '\(name)' not saved: " + problems.prefix(8).joined(separator: "; ")
                            + (problems.count > 8 ? "; and \(problems.count - 8) more" : ""), .notFound)
        }
        if paths.isEmpty { paths = rigPaths() }
        sceneState.unanswered = []
        var values: [SceneValue] = [], missing: [String] = []
        for p in paths {
            if let v = currentSceneValue(p) { values.append(SceneValue(path: p, value: v)) } else { missing.append("\(p)") }
        }
        if !texts.isEmpty && !missing.isEmpty {
            return .refused("scene '\(name)' not saved: the rig has no value at " + missing.joined(separator: ", "),
                            .notFound)
        }
        let old = sceneState.book.scene(named: name)
        var scene = Scene(name: name, values: values, rampMS: old?.rampMS)
        scene.at = old?.at   // a scene saved again keeps its times
        do {
            try sceneState.book.save(scene)
        } catch {
            return .refused(error.description, .badValue)
        }
        keepScenesInPreset()
        events.append(.scenesChanged(detail: "saved \(CommandValue.text(name).word)", source: context.source))
        return .done("scene '\(name)' saved: \(values.count) value(s)"
                     + (missing.isEmpty ? "" : "; no value at " + missing.joined(separator: ", ")))
    }

    /// The preset in force holds the scenes as they are now (a restore after a server loss, a preset saved).
    func keepScenesInPreset() {
        guard var p = preset else { return }
        p.scenes = sceneState.book.scenes
        preset = p
    }

    /// The scenes as JSON: each with its ramp and values, the one recalled last, the morph in force.
    func scenesJSON() -> String {
        struct Listing: Encodable {
            struct Item: Encodable {
                var name: String
                var rampMS: Double
                var values: [String: SceneNumber]
                var order: [String]
            }
            struct Morph: Encodable {
                var from: String
                var to: String
                var position: Double
            }
            var scenes: [Item]
            var current: String?
            var morph: Morph?
            var lastLagMS: Double?
        }
        let items = sceneState.book.scenes.map { s in
            Listing.Item(name: s.name, rampMS: s.ramp,
                         values: Dictionary(s.values.map { ($0.path.description, $0.value) }, uniquingKeysWith: { a, _ in a }),
                         order: s.values.map(\.path.description))
        }
        let listing = Listing(scenes: items, current: sceneState.current,
                              morph: sceneState.morph.map { .init(from: $0.from, to: $0.to, position: $0.position) },
                              lastLagMS: sceneState.lastLagMS)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(listing)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }

    /// Carries out a scene command.
    func executeScene(_ command: Command, context: CommandContext) -> CommandReply {
        switch command {
        case .sceneRecall(let name, let ramp): return recallScene(name, rampMS: ramp, context: context)
        case .sceneSave(let name, let paths): return saveScene(name, paths: paths, context: context)
        case .sceneList: return .done(scenesJSON())
        case .sceneRename(let from, let to):
            do { try sceneState.book.rename(from: from, to: to) } catch {
                return .refused(error.description, error.kind == .notFound ? .notFound : .badValue)
            }
            if sceneState.current == from { sceneState.current = to }
            if let m = sceneState.morph {
                sceneState.morph = (m.from == from ? to : m.from, m.to == from ? to : m.to, m.position)
            }
            // The maps that name it follow the new name.
            maps = maps.map { map in
                var map = map
                switch map.target {
                case .scene(let names): map.target = .scene(names.map { $0 == from ? to : $0 })
                case .morph(let a, let b): map.target = .morph(from: a == from ? to : a, to: b == from ? to : b)
                default: break
                }
                return map
            }
            if var p = preset {
                p.maps = maps
                preset = p
            }
            keepScenesInPreset()
            events.append(.scenesChanged(detail: "renamed \(CommandValue.text(from).word) \(CommandValue.text(to).word)",
                                         source: context.source))
            return .done("scene '\(from)' is now '\(to)'")
        case .sceneDelete(let name):
            let naming = maps.enumerated().filter { _, map in
                switch map.target {
                case .scene(let names): return names.contains(name)
                case .morph(let a, let b): return a == name || b == name
                default: return false
                }
            }
            if let (index, map) = naming.first {
                return .refused("scene '\(name)' not deleted: map \(index) (\(map)) names it; clear the map first"
                                + " (/tandem/map/clear \(index))", .conflict)
            }
            do { try sceneState.book.delete(name) } catch {
                return .refused(error.description, error.kind == .notFound ? .notFound : .badValue)
            }
            if sceneState.current == name { sceneState.current = nil }
            if let m = sceneState.morph, m.from == name || m.to == name { sceneState.morph = nil }
            keepScenesInPreset()
            events.append(.scenesChanged(detail: "deleted \(CommandValue.text(name).word)", source: context.source))
            return .done("scene '\(name)' deleted")
        case .sceneMorph(let from, let to, let position):
            return morphScenes(from: from, to: to, position: position, context: context)
        default:
            return .refused("not a scene command")
        }
    }
}
