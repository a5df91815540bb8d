import Commands
import Engine
import Foundation
import Plugins
import Presets

// The one place a command is carried out (docs/CONTROL.md): OSC, `tandem ctl` (through OSC), control maps and the
// HTTP API all come here, so they get the same checks, the same effects and the same words. Paths a command names
// must lie inside the session folder. Control thread.
extension Session {
    public func execute(_ command: Command, context: CommandContext) -> CommandReply {
        // An isolated rack's chain is in its process (a command from a map gets here; OSC and HTTP relay their own).
        if let relayed = relayToIsolatedRack(command, context) { return relayed }
        switch command {
        case .ping: return .done("pong")
        case .status: return .done(status().json())
        case .engines: return .done(introspectionJSON(describeEngines()))
        case .takes: return .done(introspectionJSON(describeTakes()))
        case .graph: return .done(introspectionJSON(describeGraph()))
        case .connect(let from, let to), .disconnect(let from, let to):
            guard let c = patchClient else { return .refused("no JACK client to change the graph with (the server is gone)") }
            for port in [from, to] where port.isEmpty || !c.portExists(port) {
                return .refused("no port '\(port)' (GET /api/graph or `tandem ports` lists them)", .notFound)
            }
            guard c.isOutput(from) == true else { return .refused("'\(from)' is an input; connect from an output", .badValue) }
            guard c.isOutput(to) == false else { return .refused("'\(to)' is an output; connect to an input", .badValue) }
            do {
                if case .connect = command { try c.connect(from, to) } else { try c.disconnect(from, to) }
            } catch {
                return .refused("\(error)")
            }
            return .done("\(from) -> \(to)")
        case .recordStart:
            guard recorder != nil else { return .refused("this session has no recorder") }
            return startTake() ? .done() : .refused("a take is already running")
        case .recordStop, .recordArm:
            guard recorder != nil else { return .refused("this session has no recorder") }
            stopTake()
            return .done(command == .recordArm ? "armed: metering, nothing written until started" : "")
        case .recordMark(let label):
            guard let r = recorder else { return .refused("this session has no recorder") }
            if let frameTime = context.frameTime {
                return markFromMap(label: label, frameTime: frameTime) ? .done("marker at frame time \(frameTime)")
                    : .refused("no take is running: marker not kept")
            }
            guard r.isRecording, let at = mark(label: label, source: context.source, arrival: context.arrival ?? clock.real()) else {
                return .refused("no take is running: marker not kept")
            }
            return .done("marker at stream frame \(at)")
        case .recordRotate:
            return rotate() ? .done() : .refused("no take is running")
        case .play: return play() ? .done() : .refused("this session has no player")
        case .pause: return pause() ? .done() : .refused("this session has no player")
        case .stop: return stopPlayback() ? .done() : .refused("this session has no player")
        case .next: return next() ? .done() : .refused("this session has no player")
        case .seek(let seconds):
            guard player != nil else { return .refused("this session has no player") }
            return seek(seconds: seconds) ? .done() : .refused("cannot seek to \(Limits.number(seconds)) seconds")
        case .playerGain(let dB):
            return setGain(dB: dB) ? .done() : .refused("this session has no player")
        case .load(let paths):
            var files: [String] = []
            for p in paths {
                switch insideSession(p) {
                case .success(let f):
                    var isDirectory: ObjCBool = false
                    guard FileManager.default.fileExists(atPath: f, isDirectory: &isDirectory) else {
                        return .refused("no file '\(p)' in the session folder", .badValue)
                    }
                    guard !isDirectory.boolValue else { return .refused("'\(p)' is a folder, not a file to play", .badValue) }
                    files.append(f)
                case .failure(let why): return .refused(why.message, .badValue)
                }
            }
            return load(files) ? .done("\(files.count) file(s) queued") : .refused("this session has no player")
        case .presetApply(let path):
            let file: String
            switch insideSession(path) {
            case .success(let f): file = f
            case .failure(let why): return .refused(why.message, .badValue)
            }
            let (loaded, problems) = PresetLoader.load(path: file)
            guard var p = loaded, p.pendingProblems.isEmpty else {
                return .refused((problems + (loaded?.pendingProblems ?? [])).map(\.description).joined(separator: "; "), .badValue)
            }
            p.session.server = preset?.session.server ?? p.session.server
            // As `preset check` and `run` refuse it: a plugin that is not installed, a control it does not have.
            if let why = pluginProblems(p) { return .refused(why, .badValue) }
            do {
                return .done(try apply(p).description)
            } catch {
                return .refused(error.message)
            }
        case .presetSave(let name):
            do {
                return .done(try saveRunningPreset(name: name))
            } catch {
                // A name it cannot take is a bad value; a file already there, or a folder it cannot write, is not now.
                return .refused(error.message, error.code == .badConfig && preset != nil ? .badValue : .conflict)
            }
        case .pluginSet(let e, let plugin, let symbol, let value, let ramp):
            guard hasEngine(e) else { return .refused(Self.unknownEngine(e), .notFound) }
            let engine = ChainEngine(rawValue: e)
            do throws(PluginError) {
                var number: Double
                switch value {
                case .number(let d): number = d
                case .text(let t):
                    guard let c = chain(engine) else { throw PluginError(.unknownPlugin, plugin: plugin, "the \(e) has no plugin chain") }
                    number = try c.number(plugin, symbol, from: t)
                }
                let set = try setPluginControl(engine, plugin: plugin, symbol: symbol, value: number,
                                               source: context.source, clamp: context.clamp, rampFrames: rampFrames(ramp))
                return .done("\(set)")
            } catch {
                return .refused(error.description, Self.refusal(error))
            }
        case .pluginGet(let e, let plugin, let symbol):
            guard hasEngine(e) else { return .refused(Self.unknownEngine(e), .notFound) }
            do {
                return .done("\(try pluginControl(ChainEngine(rawValue: e), plugin: plugin, symbol: symbol))")
            } catch {
                return .refused(error.description, Self.refusal(error))
            }
        case .pluginBypass(let e, let plugin, let on, let ramp):
            guard hasEngine(e) else { return .refused(Self.unknownEngine(e), .notFound) }
            let engine = ChainEngine(rawValue: e)
            guard let chain = runningChain(engine) else { return .refused("the \(e) has no plugin chain", .notFound) }
            do {
                if let on {
                    try setPluginBypass(engine, plugin: plugin, on, source: context.source, rampFrames: rampFrames(ramp))
                }
                return .done(try chain.isBypassed(plugin) ? "1" : "0")
            } catch {
                return .refused(error.description, Self.refusal(error))
            }
        case .pluginMix(let e, let mix, let ramp):
            guard hasEngine(e) else { return .refused(Self.unknownEngine(e), .notFound) }
            guard let chain = runningChain(ChainEngine(rawValue: e)) else { return .refused("the \(e) has no plugin chain", .notFound) }
            if let mix {
                chain.setMix(mix, rampFrames: rampFrames(ramp))
                controlLog.sources[ControlLogState.key(e, "mix")] = context.source
                events.append(.chainLevelChanged(engine: e, mix: chain.mix, gainDB: chain.gainDB, source: context.source))
            }
            return .done("\(chain.mix)")
        case .pluginGain(let e, let dB, let ramp):
            guard hasEngine(e) else { return .refused(Self.unknownEngine(e), .notFound) }
            guard let chain = runningChain(ChainEngine(rawValue: e)) else { return .refused("the \(e) has no plugin chain", .notFound) }
            if let dB {
                chain.setGain(dB: dB, rampFrames: rampFrames(ramp))
                controlLog.sources[ControlLogState.key(e, "gain")] = context.source
                events.append(.chainLevelChanged(engine: e, mix: chain.mix, gainDB: chain.gainDB, source: context.source))
            }
            return .done("\(chain.gainDB)")
        case .pluginPreset(let e, let plugin, let uri):
            guard hasEngine(e) else { return .refused(Self.unknownEngine(e), .notFound) }
            do {
                try loadPluginPreset(ChainEngine(rawValue: e), plugin: plugin, preset: uri, source: context.source)
                return .done("preset loaded: \(uri)")
            } catch {
                return .refused(error.description, Self.refusal(error))
            }
        case .pluginList(let e):
            if let e, !hasEngine(e) { return .refused(Self.unknownEngine(e), .notFound) }
            return .done(introspectionJSON(describePlugins(e.map { ChainEngine(rawValue: $0) })))
        case .pluginSave:
            do {
                // This process's chains, then each isolated rack's, saved by its own process.
                let dirs = try savePlugins()
                let isolated = saveIsolatedPlugins(source: context.source)
                let all = dirs + isolated.folders
                if !isolated.problems.isEmpty {
                    return .refused((all.isEmpty ? "" : "saved \(all.joined(separator: " ")); not saved: ")
                                    + isolated.problems.joined(separator: "; "), .conflict)
                }
                return all.isEmpty ? .refused("this session has no plugins") : .done(all.joined(separator: " "))
            } catch {
                return .refused(error.description, Self.refusal(error))
            }
        case .pluginAdd, .pluginRemove, .pluginMove:
            return editChain(command, context: context)
        case .mapLearn(let learn):
            guard let learn else { return cancelLearn() ? .done("learn cancelled") : .refused("no learn is waiting") }
            var map = ControlMap(source: .cc(0), target: .control(engine: learn.engine, plugin: learn.plugin,
                                                                   symbol: learn.symbol))
            if let c = learn.curve { map.curve = c }
            (map.minimum, map.maximum) = (learn.minimum, learn.maximum)
            if let why = map.problem ?? mapTargetProblem(map) { return .refused(why, .badValue) }
            if racks.isEmpty {
                return .refused("a learn listens to the MIDI of the racks in this process, and every rack here runs"
                                + " isolated: add the map instead (/tandem/map/add, POST /api/maps)", .conflict)
            }
            self.learn(map)
            return .done("waiting for the next CC on a rack's MIDI input for \(learn.engine) \(learn.plugin) \(learn.symbol)")
        case .mapAdd(let text):
            switch ControlMap.parse(text) {
            case .failure(let why): return .refused(why.description, .badValue)
            case .success(var map):
                if case .presetFile(let files) = map.target {
                    var resolved: [String] = []
                    for f in files {
                        switch insideSession(f) {
                        case .success(let p): resolved.append(p)
                        case .failure(let why): return .refused(why.message, .badValue)
                        }
                    }
                    map.target = .presetFile(resolved)
                }
                if let why = mapTargetProblem(map) { return .refused(why, .badValue) }
                let index = addMap(map)
                handIsolatedRacksTheirMaps()
                return .done("map \(index): \(map)")
            }
        case .mapList:
            return .done(introspectionJSON(MapList(maps: maps.enumerated().map { .init(index: $0, map: $1.description) },
                                                   learning: learning?.description)))
        case .mapClear(let index):
            guard let index else {
                let n = maps.count
                clearMaps()
                handIsolatedRacksTheirMaps()
                return .done("\(n) map(s) cleared")
            }
            guard index < maps.count else { return .refused("no map \(index) (there are \(maps.count); see /tandem/map/list)", .notFound) }
            clearMaps(index)
            handIsolatedRacksTheirMaps()
            return .done("map \(index) cleared")
        case .sceneRecall, .sceneSave, .sceneList, .sceneRename, .sceneDelete, .sceneMorph:
            return executeScene(command, context: context)
        }
    }

    /// How a plugin's refusal counts: a plugin or control the chain does not have, or a value it does not take.
    static func refusal(_ error: PluginError) -> CommandReply.Refusal {
        switch error.code {
        case .unknownPlugin, .unknownControl, .notInstalled: return .notFound
        case .badValue, .preset: return .badValue
        default: return .conflict
        }
    }

    static func unknownEngine(_ e: String) -> String { "unknown engine '\(e)' (recorder, player or a rack's name)" }

    /// The chain an engine runs now, if it has one with plugins.
    func runningChain(_ engine: ChainEngine) -> PluginChain? {
        chain(engine).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A path a command names: relative to the session folder, symlinks and ".." resolved, and refused unless it
    /// stays inside that folder.
    public func insideSession(_ path: String) -> Result<String, CommandError> {
        guard let base = preset?.session.directory else { return .failure(CommandError("no session directory")) }
        let root = URL(fileURLWithPath: base).standardizedFileURL.resolvingSymlinksInPath().path
        let candidate = path.hasPrefix("/") ? path : (root as NSString).appendingPathComponent(path)
        let resolved = URL(fileURLWithPath: candidate).standardizedFileURL.resolvingSymlinksInPath().path
        guard resolved == root || resolved.hasPrefix(root + "/") else {
            return .failure(CommandError("'\(path)' is outside the session directory '\(root)'"))
        }
        return .success(resolved)
    }

    /// What the session cannot reach for a map's target (nil: it can): no rack to hear, an unknown engine or rack, a
    /// plugin or control not in the chain, and, as `preset check` says it, a map that could hear only isolated racks
    /// (each hears its MIDI in its own process, which reaches only its own plugins and markers) driving anything else.
    func mapTargetProblem(_ map: ControlMap) -> String? {
        if racks.isEmpty && supervisors.isEmpty { return "this session has no rack: maps listen to a rack's MIDI inputs" }
        if let r = map.rack, racks[r] == nil && supervisors[r] == nil { return "no rack '\(r)' in this session" }
        if case .marker = map.target, recorder == nil { return "this session has no recorder (a marker goes into a take)" }
        let heard = Set(racks.keys).union(supervisors.keys).filter { map.rack == nil || $0 == map.rack }
        if !heard.contains(where: { racks[$0] != nil || map.isMarker || map.plugin?.engine == $0 }) {
            return "rack \(heard.sorted().joined(separator: ", ")) runs isolated (its own process): its MIDI can drive only"
                + " its own plugins and markers; set isolate = false on the rack for this map"
        }
        guard let (e, plugin) = map.plugin else { return nil }
        guard hasEngine(e) else { return Self.unknownEngine(e) }
        if racks[e] == nil, let s = supervisors[e] {
            // Looked up with the plugins, as `preset check` looks up a preset's maps.
            let specs = chainSpecs(.rack(e))
            guard specs.contains(where: { $0.name == plugin }) else {
                return "no plugin '\(plugin)' in the \(e) (plugins: \(specs.map(\.name).joined(separator: ", ")))"
            }
            var one = Preset()
            if let session = preset?.session { one.session = session }
            var rack = s.rack
            rack.plugins = specs
            one.racks = [rack]
            one.maps = [map]
            return PresetPluginCheck.mapProblems(one, file: "map").first?.message
        }
        guard let chain = chain(ChainEngine(rawValue: e)) else { return "the \(e) has no plugin chain" }
        do {
            if case .control(_, _, let symbol) = map.target {
                _ = try chain.value(plugin, symbol)
                // A range of its own must lie in the control's: the words plugin set uses for such a value.
                for v in [map.minimum, map.maximum].compactMap({ $0 }) { try chain.check(plugin, symbol, v) }
            } else {
                _ = try chain.isBypassed(plugin)
            }
        } catch {
            return "\(error)"
        }
        return nil
    }
}

