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
        var chains: [(specs: [PluginSpec], sources: [PluginSource], channels: Int, key: String)] = []
        if let r = preset.recorder, !r.plugins.isEmpty {
            chains.append((r.plugins, r.pluginSources, r.ports.count, "recorder.plugins"))
        }
        if let p = preset.player, !p.plugins.isEmpty {
            chains.append((p.plugins, p.pluginSources, p.ports.count, "player.plugins"))
        }
        guard !chains.isEmpty else { return .none }
        guard host.canLookUp else {
            return .skipped("plugins not looked up: lilv finds no LV2 plugins here (LV2_PATH, ~/.lv2, /usr/lib/lv2);"
                            + " they are checked when the preset runs")
        }
        let file = preset.path ?? "preset"
        var problems: [PresetProblem] = []
        for chain in chains {
            let found = host.check(chain: chain.specs, channels: chain.channels)
            for (k, _) in chain.specs.enumerated() {
                let source = k < chain.sources.count ? chain.sources[k] : PluginSource(key: chain.key)
                for p in found[k] {
                    let (key, line): (String, Int?)
                    switch p.field {
                    case .uri: (key, line) = ("\(chain.key).uri", source.uriLine ?? source.line)
                    case .preset: (key, line) = ("\(chain.key).preset", source.presetLine ?? source.line)
                    case .control(let symbol):
                        (key, line) = ("\(chain.key).controls.\(symbol)", source.controlLines[symbol] ?? source.line)
                    }
                    problems.append(PresetProblem(file: file, line: line, key: key, message: p.error.description))
                }
            }
        }
        return .checked(problems)
    }
}
