import ArgumentParser
import Foundation
import Plugins
import Presets

struct PluginsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins", abstract: "List installed LV2, LADSPA and DSSI plugins with their ports, or show one in full.",
        discussion: """
            LV2 plugins are found in LV2_PATH, or in ~/.lv2, /usr/local/lib/lv2 and /usr/lib/lv2; LADSPA plugins in \
            LADSPA_PATH, or in ~/.ladspa, /usr/local/lib/ladspa and /usr/lib/ladspa; DSSI plugins in DSSI_PATH, or in \
            ~/.dssi, /usr/local/lib/dssi and /usr/lib/dssi. A LADSPA plugin is named ladspa:LIBRARY/LABEL (e.g. \
            ladspa:amp/amp_mono) or ladspa:UNIQUEID, a DSSI plugin dssi:LIBRARY/LABEL (e.g. dssi:hexter/hexter).
            """,
        subcommands: [List.self, Show.self], defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Every installed plugin, a line each.")

        @Flag(name: .long, help: "Print JSON (every plugin with its ports).")
        var json = false

        @Option(name: .long, help: "Only plugins whose URI or name contains this text.")
        var filter: String?

        @Option(name: .long, help: ArgumentHelp("Only plugins of these formats (comma-separated).", valueName: "lv2,ladspa,dssi"))
        var format: String?

        func validate() throws {
            for f in formats where !["lv2", "ladspa", "dssi"].contains(f) {
                throw ValidationError("--format: unknown format '\(f)' (lv2, ladspa, dssi)")
            }
        }

        var formats: Set<String> {
            format.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }) }
                ?? ["lv2", "ladspa", "dssi"]
        }

        func run() throws {
            var plugins = PluginHost.shared.plugins(formats: formats)
            if let filter {
                plugins = plugins.filter { $0.uri.localizedCaseInsensitiveContains(filter) || $0.name.localizedCaseInsensitiveContains(filter) }
            }
            if json {
                let e = JSONEncoder()
                e.outputFormatting = [.sortedKeys, .prettyPrinted]
                say(String(data: try e.encode(plugins), encoding: .utf8) ?? "[]")
                return
            }
            for p in plugins {
                let audio = "\(p.audioInputs) in / \(p.audioOutputs) out"
                let controls = p.controls.map(\.symbol).joined(separator: " ")
                let unusable = p.missingFeatures.isEmpty ? "" : "  [cannot run here: needs \(p.missingFeatures.joined(separator: ", "))]"
                let id = p.uniqueID.map { " (ID \($0))" } ?? ""
                say("\(p.uri)\n    \(p.format.uppercased())\(id) · \(p.name) · audio \(audio)"
                    + (controls.isEmpty ? "" : " · controls: \(controls)") + unusable)
            }
            let counts = ["lv2", "ladspa", "dssi"].compactMap { f -> String? in
                let n = plugins.filter { $0.format == f }.count
                return n > 0 ? "\(n) \(f.uppercased())" : nil
            }
            say("\(plugins.count) plugin(s)" + (counts.count > 1 ? " (\(counts.joined(separator: ", ")))" : ""))
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "One plugin: ports, ranges, features, presets.")

        @Argument(help: "The plugin's URI (LV2) or name (ladspa:LIBRARY/LABEL, ladspa:UNIQUEID, dssi:LIBRARY/LABEL).")
        var uri: String

        @Flag(name: .long, help: "Print JSON.")
        var json = false

        func run() throws {
            guard let p = PluginHost.shared.plugin(uri) else {
                fail(.badInput, "plugin: " + (PluginHost.shared.whyUnavailable(uri) ?? "<\(uri)> is not installed (see `tandem plugins`)"))
            }
            if json {
                let e = JSONEncoder()
                e.outputFormatting = [.sortedKeys, .prettyPrinted]
                say(String(data: try e.encode(p), encoding: .utf8) ?? "{}")
                return
            }
            say("\(p.name)\n  uri: \(p.uri)\n  format: \(p.format.uppercased())" + (p.uniqueID.map { " (unique ID \($0))" } ?? ""))
            if let c = p.className { say("  class: \(c)") }
            if let a = p.author { say("  author: \(a)") }
            if let b = p.bundle { say("  bundle: \(b)") }
            say("  ports:")
            for port in p.ports {
                var line = "    \(port.index) \(port.symbol) (\(port.isInput ? "in" : "out") \(port.kind.rawValue)) \"\(port.name)\""
                if port.kind == .control {
                    let f = { (v: Float?) in v.map { String($0) } ?? "-" }
                    line += "  default \(f(port.defaultValue)), range \(f(port.minimum)) to \(f(port.maximum))"
                    if port.reportsLatency { line += ", reports latency" }
                    if port.isToggle { line += ", toggle" }
                    if port.isInteger { line += ", integer" }
                    if let u = port.unitSymbol ?? port.unit { line += ", unit \(u)" }
                    if !port.scalePoints.isEmpty {
                        line += "; " + port.scalePoints.map { "\($0.value) = \"\($0.label)\"" }.joined(separator: ", ")
                    }
                }
                say(line)
            }
            say("  required features: " + (p.requiredFeatures.isEmpty ? "none" : p.requiredFeatures.joined(separator: ", ")))
            say("  optional features: " + (p.optionalFeatures.isEmpty ? "none" : p.optionalFeatures.joined(separator: ", ")))
            say("  extension data: " + (p.extensionData.isEmpty ? "none" : p.extensionData.joined(separator: ", ")))
            if !p.missingFeatures.isEmpty { say("  cannot run here: Tandem does not provide \(p.missingFeatures.joined(separator: ", "))") }
            say("  \(p.format == "dssi" ? "programs" : "presets"):" + (p.presets.isEmpty ? " none" : ""))
            for preset in p.presets { say("    \(preset.uri)  \"\(preset.label)\"") }
            for line in Self.shape(p) { say("  \(line)") }
        }
    }
}

extension PluginsCommand.Show {
    /// How the plugin sits in a chain, as `ChainLayout` plans it (docs/PRESETS.md, "Channel shapes"): its channels,
    /// and the extra ports a rack gives it (side inputs, CV inputs and outputs).
    static func shape(_ p: PluginInfo) -> [String] {
        let spec = PluginSpec(uri: p.uri)
        let main = p.ports.filter { $0.kind == .audio && $0.isInput && !$0.isSideChain && !$0.isOptional }.count
        let width = max(1, main)
        switch ChainLayout.plan(spec, p, width: width) {
        case .failure(let e):
            return ["not usable in a chain: \(e.message)"]
        case .success(let s):
            let name = PluginSpec.uniqueNames([spec])[0].name
            var out: [String]
            let a = s.mainInputs.count, b = s.outputs.count
            if a > 0 && a == b {
                out = ["in a chain: \(a) channel(s) per instance (a \(2 * a)-channel path runs 2 instances)"]
            } else if a > 0 {
                out = ["in a chain: takes the whole \(a)-channel path and gives \(b) channel(s)"]
            } else if b > 0 {
                out = ["in a chain: starts the path anew with \(b) channel(s) (an instrument or a generator)"]
            } else {
                out = ["in a chain: the path goes past it unchanged (a MIDI effect or a CV module)"]
            }
            let symbol = { (i: Int) in p.ports.first { $0.index == i }?.symbol ?? "port\(i)" }
            if !s.sideInputs.isEmpty {
                out.append("extra inputs (a rack's ports): " + s.sideInputs.map { "\(name)_\(symbol($0))" }.joined(separator: ", "))
            }
            if !s.sideOutputs.isEmpty {
                out.append("extra outputs (a rack's ports): " + s.sideOutputs.map { "\(name)_\(symbol($0))" }.joined(separator: ", "))
            }
            return out
        }
    }
}

/// `--plugin`, shared by `record` and `play`: an insert chain from the command line.
struct PluginOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Plugin for the insert chain, in order (repeatable): an LV2 URI, ladspa:LIBRARY/LABEL, ladspa:ID or dssi:LIBRARY/LABEL (see `tandem plugins`); bypass starts it bypassed; midi_channel (a rack's) the MIDI channel its MIDI inputs take.",
                                            valueName: "URI[,name=NAME][,preset=URI][,bypass][,midi_channel=N][,SYMBOL=VALUE...]"))
    var plugin: [String] = []

    @Option(name: .long, help: ArgumentHelp("A plugin that cannot run as asked (not installed, channels do not fit, an unknown control or a value out of range): fail (exit 2, nothing started) or bypass (run without it, and say so).",
                                            valueName: "fail|bypass"))
    var onPluginError = "fail"

    func validate() throws {
        for p in plugin {
            if case .failure(let e) = PluginSpec.parse(p) { throw ValidationError("--plugin: \(e)") }
        }
        if PluginErrorPolicy(rawValue: onPluginError) == nil {
            throw ValidationError("unknown --on-plugin-error '\(onPluginError)' (fail, bypass)")
        }
    }

    /// Whether a plugin that cannot run stops the start.
    var strict: Bool { PluginErrorPolicy(rawValue: onPluginError) != .bypass }

    /// Says loudly (stderr) what the chain runs without, after a start with `--on-plugin-error bypass`.
    static func announce(_ chain: PluginChain?, engine: String) {
        for p in chain?.problems ?? [] {
            let what = p.leavesPluginOut ? "BYPASSED" : "setting ignored"
            Console.err("tandem: \(engine) plugin \(p.plugin) \(what): \(p.message)\n")
        }
    }

    /// The chain, with names made unique.
    var specs: [PluginSpec] { PluginSpec.uniqueNames(plugin.compactMap { try? PluginSpec.parse($0).get() }) }
}
