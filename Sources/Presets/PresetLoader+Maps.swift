import Foundation

/// `[[map]]` tables (docs/PRESETS.md "Control maps"): every key checked with file, line and key; the engines,
/// plugins and racks they name checked against the preset's own tables (symbols, ranges and LV2 presets are looked
/// up with the plugins, `PresetPluginCheck`).
extension Validator {
    static let mapKeys = ["cc", "pitch_bend", "program", "note", "channel", "rack", "engine", "plugin", "control",
                          "bypass", "toggle", "presets", "files", "marker", "scene", "scenes", "morph", "min", "max",
                          "curve"]

    mutating func maps(_ v: TOMLValue, preset p: Preset) -> [ControlMap] {
        guard case .array(let items, _) = v else {
            problem("map", v.line, "expected [[map]] tables (an array of tables), found \(v.typeName)")
            return []
        }
        var out: [ControlMap] = []
        for item in items {
            guard case .table(let t) = item else {
                problem("map", item.line, "expected [[map]] tables, found \(item.typeName)")
                continue
            }
            if let m = map(t, preset: p) {
                checkIsolation(m, preset: p)
                out.append(m)
            }
        }
        return out
    }

    /// An isolated rack's MIDI is heard in its own process, which can only reach its own plugins (and relay markers):
    /// a map from it to anything else (another engine, a preset file) would never fire.
    mutating func checkIsolation(_ m: ControlMap, preset p: Preset) {
        func isolated(_ r: RackSection) -> Bool { r.isolate ?? (p.recorder != nil) }
        let heard = p.racks.filter { m.rack == nil || $0.name == m.rack }
        var marks = false
        if case .marker = m.target { marks = true }   // its process relays the marker to the session
        let reach = marks || heard.contains { !isolated($0) || m.plugin?.engine == $0.name }
        if !heard.isEmpty && !reach {
            let names = heard.map(\.name).joined(separator: ", ")
            problem(m.rack != nil ? "map.rack" : "map", m.line,
                    "rack \(names) runs isolated (its own process, the default beside a recorder): its MIDI can drive "
                    + "only its own plugins and markers; set isolate = false on the rack for this map")
        }
    }

    /// One `[[map]]`: exactly one source (cc, pitch_bend, program, note) and one target (control, bypass, presets,
    /// files, marker, scene or scenes, morph).
    mutating func map(_ t: TOMLTable, preset p: Preset) -> ControlMap? {
        let s = "map"
        unknownKeys(t, Self.mapKeys, section: s)
        let before = problems.count
        let line: Int? = t.line == 0 ? nil : t.line
        var sources: [ControlMap.Source] = []
        if let cc = integer(t, "cc", s, 0...127) { sources.append(.cc(cc)) }
        if let note = integer(t, "note", s, 0...127) { sources.append(.note(note)) }
        if bool(t, "pitch_bend", s) == true { sources.append(.pitchBend) }
        if bool(t, "program", s) == true { sources.append(.program) }
        let channel = integer(t, "channel", s, 1...16)
        let sourceKeys = ["cc", "note", "pitch_bend", "program"].filter { t[$0] != nil }
        if sourceKeys.count > 1 {
            problem("map.\(sourceKeys[1])", t.keyLines[sourceKeys[1]] ?? line,
                    "a map listens to one MIDI message: give one of cc, note, pitch_bend = true, program = true")
        } else if sourceKeys.isEmpty {
            problem("map", line, "every [[map]] needs a MIDI message: cc = N, note = N, pitch_bend = true or program = true")
        }
        var rack: String?
        if let (name, l) = string(t, "rack", s) {
            if !p.racks.contains(where: { $0.name == name }) {
                problem("map.rack", l, "no rack '\(name)' in this preset (racks: "
                        + (p.racks.isEmpty ? "none" : p.racks.map(\.name).joined(separator: ", ")) + ")")
            }
            rack = name
        }
        if p.racks.isEmpty { problem("map", line, "a map listens to a rack's MIDI inputs: the preset needs a [[rack]]") }
        let engine = string(t, "engine", s)
        let plugin = string(t, "plugin", s)
        let control = string(t, "control", s)
        let bypass = bool(t, "bypass", s)
        let toggle = bool(t, "toggle", s)
        let presets = strings(t, "presets", s)
        let files = strings(t, "files", s)
        var marker: String?
        if let m = t["marker"] {
            switch m {
            case .string(let label, _): marker = label
            case .bool(true, _): marker = ""
            default: problem("map.marker", m.line, "expected a label (a string) or true")
            }
        }
        let scene = string(t, "scene", s)
        let sceneList = strings(t, "scenes", s)
        let morph = strings(t, "morph", s)
        let minimum = number(t, "min", s, ControlMap.values)
        let maximum = number(t, "max", s, ControlMap.values)
        let curve = choice(t, "curve", s, ControlMap.Curve.self) ?? .linear
        // The target: which of its keys are there.
        let kinds = [("control", control != nil), ("bypass", bypass != nil), ("presets", presets != nil),
                     ("files", files != nil), ("marker", t["marker"] != nil), ("scene", t["scene"] != nil),
                     ("scenes", t["scenes"] != nil), ("morph", t["morph"] != nil)].filter { $0.1 }.map { $0.0 }
        let programPreset = kinds.isEmpty && sources == [.program] && plugin != nil
        if kinds.count > 1 {
            problem("map.\(kinds[1])", t.keyLines[kinds[1]] ?? line,
                    "a map drives one thing: give one of control, bypass, presets, files, marker, scene, scenes, morph")
        } else if kinds.isEmpty && !programPreset {
            problem("map", line, "every [[map]] needs what it drives: control = \"SYMBOL\" (with engine and plugin), "
                    + "bypass = true, presets = [...] (or program = true with a plugin alone), files = [...], marker, "
                    + "scene = \"NAME\", scenes = [...] or morph = [\"FROM\", \"TO\"]")
        }
        if toggle != nil && bypass == nil { problem("map.toggle", t.keyLines["toggle"], "'toggle' goes with bypass = true") }
        if bypass == false { problem("map.bypass", t.keyLines["bypass"], "bypass = false drives nothing: leave the map out") }
        let needsPlugin = kinds.first.map { ["control", "bypass", "presets"].contains($0) } ?? programPreset
        if needsPlugin {
            if engine == nil { problem("map.engine", line, "name the engine: recorder, player or a rack's name") }
            if plugin == nil { problem("map.plugin", line, "name the plugin (its name in the engine's chain)") }
            if let (e, el) = engine, let (pl, pll) = plugin { checkMapPlugin(p, engine: e, engineLine: el, plugin: pl, line: pll) }
        } else {
            for key in ["engine", "plugin"] where t[key] != nil {
                problem("map.\(key)", t.keyLines[key], "'\(key)' names a plugin: it goes with control, bypass or presets")
            }
        }
        // Scenes by name: each one the preset defines.
        var sceneNames: [(key: String, line: Int, names: [String])] = []
        if let (name, l) = scene { sceneNames.append(("scene", l, [name])) }
        if let (list, l) = sceneList { sceneNames.append(("scenes", l, list)) }
        if let (list, l) = morph {
            if list.count != 2 { problem("map.morph", l, "a morph goes between two scenes: morph = [\"FROM\", \"TO\"]") }
            sceneNames.append(("morph", l, list))
        }
        for (key, l, names) in sceneNames {
            for name in names where !p.scenes.contains(where: { $0.name == name }) {
                problem("map.\(key)", l, "no scene '\(name)' in this preset (scenes: "
                        + (p.scenes.isEmpty ? "none" : p.scenes.map { "'\($0.name)'" }.joined(separator: ", ")) + ")")
            }
        }
        if let (list, l) = sceneList, list.isEmpty, sources == [.program], p.scenes.isEmpty {
            problem("map.scenes", l, "program N recalls the preset's N-th scene: the preset needs a [[scene]]")
        }
        if let (list, l) = files {
            if list.isEmpty { problem("map.files", l, "name at least one preset file") }
            for f in list {
                let resolved = path(f)
                var isDir: ObjCBool = false
                if !FileManager.default.fileExists(atPath: resolved, isDirectory: &isDir) || isDir.boolValue {
                    problem("map.files", l, "no preset file '\(resolved)'")
                }
            }
        }
        if let (list, l) = presets {
            for uri in list where !PluginSpec.isURI(uri) { problem("map.presets", l, "'\(uri)' is not a preset URI") }
            if list.count > 128 { problem("map.presets", l, "at most 128 presets (programs 0 to 127)") }
        }
        if marker != nil && p.recorder == nil {
            problem("map.marker", t.keyLines["marker"], "a marker goes into a take: the preset needs a [recorder]")
        }
        guard problems.count == before, let source = sources.first else { return nil }
        let target: ControlMap.Target
        if let (symbol, _) = control, let (e, _) = engine, let (pl, _) = plugin {
            target = .control(engine: e, plugin: pl, symbol: symbol)
        } else if bypass == true, let (e, _) = engine, let (pl, _) = plugin {
            target = .bypass(engine: e, plugin: pl, toggle: toggle ?? false)
        } else if let (e, _) = engine, let (pl, _) = plugin {
            target = .pluginPreset(engine: e, plugin: pl, presets: presets?.0 ?? [])
        } else if let (list, _) = files {
            target = .presetFile(list.map { path($0) })
        } else if let marker {
            target = .marker(marker)
        } else if let (name, _) = scene {
            target = .scene([name])
        } else if let (list, _) = sceneList {
            target = .scene(list)
        } else if let (list, _) = morph, list.count == 2 {
            target = .morph(from: list[0], to: list[1])
        } else {
            return nil
        }
        var m = ControlMap(source: source, channel: channel, rack: rack, target: target, minimum: minimum,
                           maximum: maximum, curve: curve)
        m.line = line
        if let why = m.problem {
            let key: String
            if why.hasPrefix("a log") {
                key = "curve"
            } else if why.hasPrefix("min") {
                key = ["min", "max", "curve"].first { t[$0] != nil } ?? "min"
            } else if why.hasPrefix("a morph goes") || why.hasPrefix("the scene name") {
                key = ["scene", "scenes", "morph"].first { t[$0] != nil } ?? "morph"
            } else if why.hasPrefix("at most 128") || why.hasPrefix("name the scene") {
                key = "scenes"
            } else {
                key = sourceKeys.first ?? "cc"
            }
            problem("map.\(key)", t.keyLines[key] ?? line, why)
            return nil
        }
        return m
    }

    /// The engine a map names must be in the preset, and the plugin in its chain.
    mutating func checkMapPlugin(_ p: Preset, engine: String, engineLine: Int, plugin: String, line: Int) {
        let specs: [PluginSpec]?
        switch engine {
        case "recorder": specs = p.recorder?.plugins
        case "player": specs = p.player?.plugins
        default: specs = p.racks.first { $0.name == engine }?.plugins
        }
        guard let specs else {
            let engines = (p.recorder != nil ? ["recorder"] : []) + (p.player != nil ? ["player"] : []) + p.racks.map(\.name)
            problem("map.engine", engineLine, "no engine '\(engine)' in this preset (engines: "
                    + (engines.isEmpty ? "none" : engines.joined(separator: ", ")) + ")")
            return
        }
        if !specs.contains(where: { $0.name == plugin }) {
            problem("map.plugin", line, "the \(engine) has no plugin '\(plugin)' (plugins: "
                    + (specs.isEmpty ? "none" : specs.map(\.name).joined(separator: ", ")) + ")")
        }
    }
}
