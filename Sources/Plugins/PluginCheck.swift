import CLilv
import Presets

/// A problem `PluginHost.check` found with one plugin of a chain, and which part of its spec it is about.
public struct PluginCheckProblem: Sendable, Equatable {
    public enum Field: Sendable, Equatable {
        /// The plugin as a whole (not installed, a feature, the channel layout).
        case uri
        case preset
        case control(String)
        /// A DSSI configure key.
        case configure(String)
    }
    public var field: Field
    public var error: PluginError
}

extension PluginHost {
    /// Whether there is anything to look plugins up in: lilv found at least one installed plugin. When not (no
    /// LV2 folder on this machine, or an LV2_PATH that names none), a check would call every plugin missing, so
    /// callers skip it and say so.
    public var canLookUp: Bool { locked { lilv_plugins_size(lilv_world_get_all_plugins(world)) > 0 } }

    /// Looks a plugin up as building a chain of `channels` channels would, without instantiating it: installed,
    /// every required feature provided by Tandem, channels fit, port types hosted, the LV2 preset known, every
    /// control symbol an input control and every value within its range (ranges given in fractions of the sample
    /// rate are left to the start, which knows the rate). Control thread.
    /// `channels`: the path's width before this plugin, or nil to leave the channels to `check(chain:)`.
    public func check(_ spec: PluginSpec, channels: Int?) -> [PluginCheckProblem] {
        locked {
            let plugin: HostedPlugin
            switch source(spec.uri) {
            case .success(let found): plugin = found
            case .failure(let why):
                return [PluginCheckProblem(field: .uri, error: PluginError(.notInstalled, plugin: spec.name, why.why))]
            }
            let info = describe(plugin)
            var out: [PluginCheckProblem] = []
            if let e = PluginChain.unusable(spec, info, period: nil) {
                out.append(PluginCheckProblem(field: .uri, error: e))
            } else if let channels, case .failure(let e) = ChainLayout.plan(spec, info, width: channels) {
                out.append(PluginCheckProblem(field: .uri, error: e))
            }
            for (key, why) in configureProblems(spec, plugin) {
                out.append(PluginCheckProblem(field: .configure(key), error: PluginError(.badValue, plugin: spec.name, why)))
            }
            if let preset = spec.preset, case .ladspa = plugin {
                let known = presets(of: plugin)
                if !known.contains(where: { $0.uri == preset }) {
                    out.append(PluginCheckProblem(field: .preset, error: PluginError(
                        .preset, plugin: spec.name, Self.programNotFound(preset, plugin: spec.uri, known: known))))
                }
            } else if let preset = spec.preset {
                let known = presets(of: plugin)
                if !known.contains(where: { $0.uri == preset }) {
                    out.append(PluginCheckProblem(field: .preset, error: PluginError(
                        .preset, plugin: spec.name, "LV2 preset <\(preset)> not found for <\(spec.uri)>"
                            + (known.isEmpty ? "; the plugin has no presets"
                               : "; its presets: \(known.map { "<\($0.uri)>" }.joined(separator: ", "))"))))
                }
            }
            let controls = info.controls
            for c in spec.controls {
                guard let port = controls.first(where: { $0.symbol == c.symbol })
                        ?? Int(c.symbol).flatMap({ n in controls.first { $0.index == n } }) else {
                    out.append(PluginCheckProblem(field: .control(c.symbol), error: PluginError(
                        .unknownControl, plugin: spec.name, "<\(spec.uri)> has no control '\(c.symbol)' (controls: "
                            + (controls.isEmpty ? "none" : controls.map(\.symbol).joined(separator: ", ")) + ")")))
                    continue
                }
                // A range in fractions of the sample rate is checked when the chain is built, at the server's rate.
                if port.scalesWithRate { continue }
                let lo = port.minimum.map(Double.init) ?? -.infinity, hi = port.maximum.map(Double.init) ?? .infinity
                if !(c.value >= lo && c.value <= hi) {
                    out.append(PluginCheckProblem(field: .control(c.symbol), error: PluginError(
                        .badValue, plugin: spec.name, "control '\(c.symbol)' = \(c.value) is outside its range"
                            + " \(port.minimum ?? -.infinity) to \(port.maximum ?? .infinity)")))
                } else if let why = port.kindProblem(c.value) {
                    out.append(PluginCheckProblem(field: .control(c.symbol), error: PluginError(
                        .badValue, plugin: spec.name, "control '\(c.symbol)' = \(Limits.number(c.value)) \(why)")))
                }
            }
            return out
        }
    }

    /// Checks a whole chain that takes and gives `channels` channels: each plugin as `check(_:channels:)` does,
    /// and the channel layout of the chain (`ChainLayout`: a plugin that does not fit the path where it stands, or
    /// one that changes the count so that the chain would not end with `channels`). One list per spec, same order.
    public func check(chain specs: [PluginSpec], channels: Int) -> [[PluginCheckProblem]] {
        check(chain: specs, inputs: channels, outputs: channels, midi: false)
    }

    /// The same for a chain between `inputs` input ports and `outputs` output ports (nil: as many as the chain
    /// gives, a rack whose outputs are left out). `midi`: the engine feeds the chain MIDI (a rack's does; the
    /// recorder's and player's do not, and an instrument there is refused).
    public func check(chain specs: [PluginSpec], inputs: Int, outputs: Int?, midi: Bool = true) -> [[PluginCheckProblem]] {
        var out = specs.map { check($0, channels: nil) }
        if !midi {
            locked {
                for (k, spec) in specs.enumerated() where out[k].allSatisfy({ $0.field != .uri }) {
                    if case .success(let p) = source(spec.uri),
                       let e = PluginChain.silentInstrument(spec, describe(p), midi: false) {
                        out[k].append(PluginCheckProblem(field: .uri, error: e))
                    }
                }
            }
        }
        let known: [(Int, PluginSpec, PluginInfo)] = locked {
            specs.enumerated().compactMap { k, spec in
                guard out[k].allSatisfy({ $0.field != .uri }), case .success(let p) = source(spec.uri) else { return nil }
                return (k, spec, describe(p))
            }
        }
        let (_, problems) = ChainLayout.plan(known.map { ($0.1, $0.2) }, inputs: inputs, outputs: outputs,
                                             label: "")
        for e in problems {
            if let k = known.first(where: { $0.1.name == e.plugin })?.0 {
                out[k].append(PluginCheckProblem(field: .uri, error: e))
            }
        }
        return out
    }
}
