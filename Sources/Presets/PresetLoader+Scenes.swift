/// `[[scene]]` tables (docs/PRESETS.md "Scenes"): every key checked with file, line and key; each path's engine
/// checked against the preset's engines and its plugin against that engine's chain (symbols, ranges and values in
/// words are looked up with the plugins, where the chains are built).
extension Validator {
    static let sceneKeys = ["name", "values", "ramp_ms", "at"]

    mutating func scenes(_ v: TOMLValue, preset p: Preset) -> [Scene] {
        guard case .array(let items, _) = v else {
            problem("scene", v.line, "expected [[scene]] tables (an array of tables), found \(v.typeName)")
            return []
        }
        if items.count > Scene.maxScenes {
            problem("scene", v.line, "\(items.count) scenes; a preset holds at most \(Scene.maxScenes)")
        }
        var out: [Scene] = []
        for item in items {
            guard case .table(let t) = item else {
                problem("scene", item.line, "expected [[scene]] tables, found \(item.typeName)")
                continue
            }
            guard let scene = scene(t, preset: p) else { continue }
            if out.contains(where: { $0.name == scene.name }) {
                problem("scene.name", t.keyLines["name"] ?? scene.line, "two scenes are named '\(scene.name)'")
                continue
            }
            out.append(scene)
        }
        return out
    }

    /// One `[[scene]]`: `name`, `values = { "PATH" = VALUE, ... }`, optional `ramp_ms` and `at`.
    mutating func scene(_ t: TOMLTable, preset p: Preset) -> Scene? {
        let s = "scene"
        unknownKeys(t, Self.sceneKeys, section: s)
        let line: Int? = t.line == 0 ? nil : t.line
        var name: String?
        if let (n, l) = string(t, "name", s) {
            if let why = Scene.nameProblem(n) { problem("scene.name", l, why) } else { name = n }
        } else if t["name"] == nil {
            problem("scene", line, "every [[scene]] needs a name = \"...\"")
        }
        let ramp = number(t, "ramp_ms", s, Scene.rampRange, unit: " ms")
        let times = sceneTimes(t)
        var values: [SceneValue] = []
        if let v = t["values"] {
            if case .table(let table) = v {
                values = sceneValues(table, preset: p, tableLine: v.line)
            } else {
                problem("scene.values", v.line, "expected a table of values, e.g. values = { \"fx/amp/gain\" = -6.0 }")
            }
        } else {
            problem("scene.values", line, "every [[scene]] needs values = { \"ENGINE/PLUGIN/SYMBOL\" = VALUE, ... }")
        }
        guard let name else { return nil }
        var scene = Scene(name: name, values: values, rampMS: ramp)
        scene.at = times
        scene.line = line
        return scene
    }

    /// `at = ["DAYS HH:MM[:SS]", ...]`: when the session recalls the scene by itself (`SceneTimes`); nil when absent
    /// or refused (the problem told with the entry's line).
    mutating func sceneTimes(_ t: TOMLTable) -> [String]? {
        guard let v = t["at"] else { return nil }
        let key = "scene.at"
        guard case .array(let items, let line) = v else {
            problem(key, v.line, "expected an array of strings like [\"Mon-Fri 18:30\"], found \(v.typeName)")
            return nil
        }
        var texts: [String] = []
        for item in items {
            guard case .string(let text, let l) = item else {
                problem(key, item.line, "expected strings like \"Mon-Fri 18:30\" or \"daily 07:00:15\", found \(item.typeName)")
                return nil
            }
            if case .failure(let why) = SceneTimes.parse([text]) {
                problem(key, l, why.description.replacingOccurrences(of: "entry 1: ", with: "entry \(texts.count + 1): "))
                return nil
            }
            texts.append(text)
        }
        if case .failure(let why) = SceneTimes.parse(texts) {
            problem(key, line, why.description)
            return nil
        }
        return texts.isEmpty ? nil : texts
    }

    /// The values of one scene, in written order; each path read, its engine and plugin looked up in the preset.
    mutating func sceneValues(_ table: TOMLTable, preset p: Preset, tableLine: Int) -> [SceneValue] {
        var out: [SceneValue] = []
        for text in table.keys {
            let key = "scene.values.\(text)"
            let l = table.keyLines[text] ?? tableLine
            let raw = table[text]
            if case .table? = raw {
                problem(key, l, "'\(text)' holds a table: write each path in quotes, e.g. \"fx/amp/gain\" = -6.0")
                continue
            }
            let path: ScenePath
            switch ScenePath.parse(text) {
            case .success(let read): path = read
            case .failure(let why):
                problem(key, l, why.description)
                continue
            }
            let value: SceneNumber
            switch raw {
            case .integer(let i, _)?: value = .number(Double(i))
            case .float(let f, _)?: value = .number(f)
            case .bool(let b, _)?: value = .number(b ? 1 : 0)
            case .string(let t, _)?: value = .text(t)
            default:
                problem(key, l, "expected a number, true or false, or a value in words (\"-20 dB\", \"5 kHz\", a label)")
                continue
            }
            let v = SceneValue(path: path, value: value, line: l == 0 ? nil : l)
            if let why = v.problem {
                problem(key, l, why)
                continue
            }
            if let why = scenePathProblem(path, preset: p) {
                problem(key, l, why)
                continue
            }
            out.append(v)
        }
        return out
    }

    /// Whether the preset has the engine a path names, and, for a plugin's value, the plugin in that engine's chain.
    func scenePathProblem(_ path: ScenePath, preset p: Preset) -> String? {
        let specs: [PluginSpec]?
        switch path.engine {
        case "recorder": specs = p.recorder?.plugins
        case "player": specs = p.player?.plugins
        default: specs = p.racks.first { $0.name == path.engine }?.plugins
        }
        guard let specs else {
            let engines = (p.recorder != nil ? ["recorder"] : []) + (p.player != nil ? ["player"] : []) + p.racks.map(\.name)
            return "'\(path)': no engine '\(path.engine)' in this preset (engines: "
                + (engines.isEmpty ? "none" : engines.joined(separator: ", ")) + ")"
        }
        if path.engine == "recorder" || path.engine == "player", specs.isEmpty, path.target == .mix || path.target == .gain {
            // The recorder's and player's mix and gain belong to their insert chain, which runs only with plugins.
            return "'\(path)': the \(path.engine) has no plugin chain (no [[\(path.engine).plugins]]): its mix and gain"
                + " are its chain's" + (path.engine == "player" ? " (the player's own gain is 'player/@player_gain')" : "")
        }
        if let plugin = path.plugin, !specs.contains(where: { $0.name == plugin }) {
            return "'\(path)': the \(path.engine) has no plugin '\(plugin)' (plugins: "
                + (specs.isEmpty ? "none" : specs.map(\.name).joined(separator: ", ")) + ")"
        }
        return nil
    }
}
