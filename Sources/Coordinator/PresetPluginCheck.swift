import Engine
import Plugins
import Presets

/// Looks every plugin of a preset up in the LV2 world, as the engines would build them: what `tandem preset check`
/// and `tandem run` report before anything starts, with file, line and key like every other preset problem.
public enum PresetPluginCheck {
    public enum Outcome: Sendable, Equatable {
        /// The preset names no plugin.
        case none
        /// Every plugin looked up; these are the problems (empty: all fine).
        case checked([PresetProblem])
        /// Not looked up, and why (no LV2 world to look in).
        case skipped(String)
    }

    /// Control thread.
    public static func check(_ preset: Preset, host: PluginHost = .shared) -> Outcome {
        var chains: [(specs: [PluginSpec], sources: [PluginSource], inputs: Int, outputs: Int?, key: String)] = []
        if let r = preset.recorder, !r.plugins.isEmpty {
            chains.append((r.plugins, r.pluginSources, r.ports.count, r.ports.count, "recorder.plugins"))
        }
        if let p = preset.player, !p.plugins.isEmpty {
            chains.append((p.plugins, p.pluginSources, p.ports.count, p.ports.count, "player.plugins"))
        }
        // Only a rack feeds its chain MIDI.
        for rack in preset.racks where !rack.plugins.isEmpty {
            // The inputs the rack gets (as `RackConfig` decides them), the outputs only when the preset names them.
            let inputs = RackConfig(section: rack, session: preset.session, host: host).inputs.count
            chains.append((rack.plugins, rack.pluginSources, inputs, rack.outputs?.count, "rack.plugins"))
        }
        guard !chains.isEmpty || !preset.maps.isEmpty || !preset.scenes.isEmpty else { return .none }
        guard host.canLookUp else {
            return .skipped("plugins not looked up: lilv finds no LV2 plugins here (LV2_PATH, ~/.lv2, /usr/lib/lv2);"
                            + " they are checked when the preset runs")
        }
        let file = preset.path ?? "preset"
        var problems: [PresetProblem] = []
        for chain in chains {
            let found = host.check(chain: chain.specs, inputs: chain.inputs, outputs: chain.outputs,
                                   midi: chain.key == "rack.plugins")
            for (k, _) in chain.specs.enumerated() {
                let source = k < chain.sources.count ? chain.sources[k] : PluginSource(key: chain.key)
                for p in found[k] {
                    let (key, line): (String, Int?)
                    switch p.field {
                    case .uri: (key, line) = ("\(chain.key).uri", source.uriLine ?? source.line)
                    case .preset: (key, line) = ("\(chain.key).preset", source.presetLine ?? source.line)
                    case .control(let symbol):
                        (key, line) = ("\(chain.key).controls.\(symbol)", source.controlLines[symbol] ?? source.line)
                    case .configure(let name):
                        (key, line) = ("\(chain.key).configure.\(name)", source.configureLines[name] ?? source.line)
                    }
                    problems.append(PresetProblem(file: file, line: line, key: key, message: p.error.description))
                }
            }
        }
        problems += mapProblems(preset, host: host, file: file)
        problems += sceneProblems(preset, host: host, file: file)
        return .checked(problems)
    }

    /// What a scene names of a plugin that the plugin does not have: a control symbol, a value outside its range or
    /// of the wrong kind, words its units do not read. (Engines and plugin names are checked when the preset is read.)
    public static func sceneProblems(_ preset: Preset, host: PluginHost = .shared, file: String) -> [PresetProblem] {
        var problems: [PresetProblem] = []
        let rate = 48000   // the server's rate is not known here: a range in Hz (lv2:sampleRate) is checked at recall
        for scene in preset.scenes {
            for v in scene.values {
                guard case .control(let symbol) = v.path.target, let name = v.path.plugin else { continue }
                let specs: [PluginSpec]
                switch v.path.engine {
                case "recorder": specs = preset.recorder?.plugins ?? []
                case "player": specs = preset.player?.plugins ?? []
                default: specs = preset.racks.first { $0.name == v.path.engine }?.plugins ?? []
                }
                guard let spec = PluginSpec.uniqueNames(specs).first(where: { $0.name == name }),
                      let info = host.plugin(spec.uri) else { continue }
                let key = "scene.values.\(v.path)"
                let at = "scene '\(scene.name)': '\(v.path)'"
                let controls = info.ports.filter { $0.kind == .control && $0.isInput }
                guard let port = controls.first(where: { $0.symbol == symbol })?.at(sampleRate: rate) else {
                    problems.append(PresetProblem(file: file, line: v.line, key: key,
                                                  message: "\(at): <\(spec.uri)> has no control '\(symbol)' (controls: "
                                                      + controls.map(\.symbol).joined(separator: ", ") + ")"))
                    continue
                }
                let number: Double
                switch v.value {
                case .number(let d): number = d
                case .text(let t):
                    switch ControlUnits.parse(t, port: port) {
                    case .success(let d): number = d
                    case .failure(let e):
                        problems.append(PresetProblem(file: file, line: v.line, key: key, message: "\(at): \(e.message)"))
                        continue
                    }
                }
                let lo = Double(port.minimum ?? -.infinity), hi = Double(port.maximum ?? .infinity)
                if !port.scalesWithRate && !(number >= lo && number <= hi) {
                    problems.append(PresetProblem(file: file, line: v.line, key: key,
                                                  message: "\(at): control '\(symbol)' = \(Limits.number(number)) is outside its"
                                                      + " range \(port.minimum ?? -.infinity) to \(port.maximum ?? .infinity)"))
                } else if let why = port.kindProblem(number) {
                    problems.append(PresetProblem(file: file, line: v.line, key: key,
                                                  message: "\(at): control '\(symbol)' = \(Limits.number(number)) \(why)"))
                }
            }
        }
        return problems
    }

    /// What a map names of a plugin that the plugin does not have: a control symbol (or an output port), a range
    /// outside the port's, an LV2 preset. Plugins that are not installed are reported with their chain.
    public static func mapProblems(_ preset: Preset, host: PluginHost = .shared, file: String) -> [PresetProblem] {
        var problems: [PresetProblem] = []
        for map in preset.maps {
            guard let (engine, name) = map.plugin else { continue }
            let specs: [PluginSpec]
            switch engine {
            case "recorder": specs = preset.recorder?.plugins ?? []
            case "player": specs = preset.player?.plugins ?? []
            default: specs = preset.racks.first { $0.name == engine }?.plugins ?? []
            }
            guard let spec = specs.first(where: { $0.name == name }), let info = host.plugin(spec.uri) else { continue }
            switch map.target {
            case .control(_, _, let symbol):
                let controls = info.ports.filter { $0.kind == .control && $0.isInput }
                guard let port = controls.first(where: { $0.symbol == symbol }) else {
                    problems.append(PresetProblem(file: file, line: map.line, key: "map.control",
                                                  message: "<\(spec.uri)> has no control '\(symbol)' (controls: "
                                                      + controls.map(\.symbol).joined(separator: ", ") + ")"))
                    continue
                }
                let lo = Double(port.minimum ?? -.infinity), hi = Double(port.maximum ?? .infinity)
                for (key, v) in [("min", map.minimum), ("max", map.maximum)] {
                    guard let v, v < lo || v > hi else { continue }
                    // The words `plugin set` and `map add` use for the same value.
                    problems.append(PresetProblem(file: file, line: map.line, key: "map.\(key)",
                                                  message: "control '\(symbol)' = \(v) is outside its range"
                                                      + " \(port.minimum ?? -.infinity) to \(port.maximum ?? .infinity)"))
                }
                if map.curve == .log, map.minimum == nil || map.maximum == nil,
                   !((map.minimum ?? lo) * (map.maximum ?? hi) > 0) {
                    problems.append(PresetProblem(file: file, line: map.line, key: "map.curve",
                                                  message: "a log curve needs min and max of one sign, neither 0: give them "
                                                      + "(control '\(symbol)' goes from \(Limits.number(lo)) to \(Limits.number(hi)))"))
                }
            case .pluginPreset(_, _, let presets):
                let known = Set(info.presets.map(\.uri))
                if presets.isEmpty && known.isEmpty {
                    problems.append(PresetProblem(file: file, line: map.line, key: "map.program",
                                                  message: "<\(spec.uri)> has no LV2 presets to choose by program"))
                }
                // In the plugin's order (a DSSI synth's programs by number), the first twelve and where the rest are.
                let listed = info.presets.prefix(12).map(\.uri).joined(separator: ", ")
                    + (info.presets.count > 12 ? " and \(info.presets.count - 12) more: `tandem plugins show \(spec.uri)`" : "")
                for uri in presets where !known.contains(uri) {
                    problems.append(PresetProblem(file: file, line: map.line, key: "map.presets",
                                                  message: "<\(spec.uri)> has no preset '\(uri)'"
                                                      + (known.isEmpty ? " (it has none)" : " (it has: \(listed))")))
                }
            default: break
            }
        }
        return problems
    }
}
