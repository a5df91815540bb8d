import CLilv
import Foundation
import LADSPAHost
import LV2Host
import Presets

// LADSPA and DSSI plugins where they differ from LV2 ones: DSSI programs stand where LV2 presets do (named
// `program:BANK/PROGRAM`), and their state is their control values and program in a JSON file of their own.
extension PluginHost {
    /// An LV2 plugin's presets or a DSSI plugin's programs. Call inside `locked`.
    func presets(of source: HostedPlugin) -> [PluginInfo.Preset] {
        switch source {
        case .lv2(let p): return presets(of: p)
        case .ladspa(let p): return programs(of: p)
        }
    }

    /// A DSSI plugin's programs, read from an instance made for the purpose (DSSI lists them per instance).
    /// Call inside `locked`.
    func programs(of p: LADSPACatalog.Plugin) -> [PluginInfo.Preset] {
        guard p.format == .dssi, let inst = foreign.probe(p, midiURID: urid(LV2.midiEvent)) else { return [] }
        return Self.programs(of: inst)
    }

    /// The programs an instance lists. Control thread, while it does not run.
    static func programs(of inst: UnsafeMutableRawPointer) -> [PluginInfo.Preset] {
        var out: [PluginInfo.Preset] = []
        for i in 0..<ladspahost_program_count(inst) {
            var bank: UInt = 0, program: UInt = 0
            var name: UnsafePointer<CChar>?
            guard ladspahost_program(inst, i, &bank, &program, &name) != 0 else { break }
            out.append(.init(uri: programURI(bank: bank, program: program), label: name.map { String(cString: $0) } ?? ""))
        }
        return out
    }

    /// What a plugin says of each configure key a spec gives it (DSSI: the plugin's own message; anything else takes
    /// none), by trying them on an instance made for the purpose, in key order. Call inside `locked`.
    func configureProblems(_ spec: PluginSpec, _ plugin: HostedPlugin) -> [(String, String)] {
        guard !spec.configure.isEmpty else { return [] }
        guard case .ladspa(let p) = plugin, p.format == .dssi, ladspahost_has_configure(p.library, p.index) != 0 else {
            return spec.configure.keys.sorted().map { ($0, "configure '\($0)': <\(spec.uri)> takes no configure keys (only DSSI plugins that have configure() do)") }
        }
        guard let inst = foreign.probe(p, midiURID: urid(LV2.midiEvent)) else { return [] }
        return spec.configure.sorted { $0.key < $1.key }.compactMap { key, value in
            Self.configure(inst, key, value).map { (key, "configure '\(key)' = '\(value)': \($0)") }
        }
    }

    /// Calls configure on an instance; the plugin's message when it refuses, else nil.
    static func configure(_ inst: UnsafeMutableRawPointer, _ key: String, _ value: String) -> String? {
        guard let message = ladspahost_configure(inst, key, value) else { return nil }
        defer { free(message) }
        return String(cString: message)
    }

    func describeWithPrograms(_ p: LADSPACatalog.Plugin) -> PluginInfo {
        var info = p.info
        info.presets = programs(of: p)
        return info
    }

    static func programURI(bank: UInt, program: UInt) -> String { "program:\(bank)/\(program)" }

    /// What `preset check` and a start both say of a program a DSSI plugin does not have.
    static func programNotFound(_ uri: String, plugin: String, known: [PluginInfo.Preset]) -> String {
        "program <\(uri)> not found for <\(plugin)>" + (known.isEmpty ? "; the plugin has no programs"
            : "; its programs: \(known.prefix(8).map { "<\($0.uri)> (\($0.label.trimmingCharacters(in: .whitespaces)))" }.joined(separator: ", "))"
                + (known.count > 8 ? " and \(known.count - 8) more (`tandem plugins show \(plugin)`)" : ""))
    }

    /// The bank and program of `program:BANK/PROGRAM`.
    static func program(_ uri: String) -> (UInt, UInt)? {
        guard uri.hasPrefix("program:") else { return nil }
        let parts = uri.dropFirst("program:".count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let bank = UInt(parts[0]), let program = UInt(parts[1]) else { return nil }
        return (bank, program)
    }
}

extension PluginChain {
    /// The file a LADSPA or DSSI plugin's saved state lives in (beside where an LV2 plugin's state.ttl would be).
    static func foreignStateFile(directory: String, plugin name: String) -> String {
        "\(directory)/\(name)/state.json"
    }

    /// What is saved of a LADSPA or DSSI plugin.
    struct ForeignState: Codable {
        var uri: String
        var controls: [String: Float]
        /// A DSSI plugin's program: bank and program.
        var program: [UInt]?
        /// A DSSI plugin's configure keys as last given.
        var configure: [String: String]?
    }

    /// Gives a DSSI plugin its configure keys, before its program (configure may change what the programs are);
    /// each the plugin refuses is a problem in its own words. Call inside `host.locked`, before the instances run.
    func applyConfigure(_ keys: [String: String], to s: Stage) {
        guard !keys.isEmpty, case .ladspa(let p) = s.source else { return }
        guard p.format == .dssi, ladspahost_has_configure(p.library, p.index) != 0 else {
            for key in keys.keys.sorted() {
                problems.append(PluginError(.badValue, plugin: s.spec.name,
                                            "configure '\(key)': <\(s.spec.uri)> takes no configure keys (only DSSI plugins that have configure() do)"))
            }
            return
        }
        for (key, value) in keys.sorted(by: { $0.key < $1.key }) {
            var refused: String?
            for inst in s.instances { refused = PluginHost.configure(inst, key, value) ?? refused }
            if let refused {
                problems.append(PluginError(.badValue, plugin: s.spec.name, "configure '\(key)' = '\(value)': \(refused)"))
            } else {
                s.configured[key] = value
            }
        }
    }

    /// Selects a DSSI program (`program:BANK/PROGRAM`) in every instance, before they run, and takes the control
    /// values the program set. Call inside `host.locked`.
    func applyProgram(_ uri: String, to s: Stage) throws(PluginError) {
        guard case .ladspa = s.source else { return }
        let known = programs(of: s)
        guard let (bank, program) = PluginHost.program(uri), known.contains(where: { $0.uri == uri }) else {
            throw PluginError(.preset, plugin: s.spec.name, PluginHost.programNotFound(uri, plugin: s.spec.uri, known: known))
        }
        for inst in s.instances { ladspahost_select_program(inst, bank, program, 1) }
        takeControls(from: s)
    }

    /// A DSSI stage's programs, from its own first instance (a chain asks its own instances; an instance made only
    /// to ask is `LADSPACatalog.probe`'s, kept for the process's life).
    func programs(of s: Stage) -> [PluginInfo.Preset] {
        guard case .ladspa(let p) = s.source, p.format == .dssi, let first = s.instances.first else { return [] }
        return PluginHost.programs(of: UnsafeMutableRawPointer(first))
    }

    /// The control values the first instance's ports hold now (a DSSI program writes its ports).
    private func takeControls(from s: Stage) {
        guard s.rt.instanceCount > 0 else { return }
        let values = s.rt.instances[0].controlValues
        for k in 0..<s.controls.count { s.rt.controls.store(k, Int(values[k].bitPattern)) }
    }

    /// Restores what `saveForeign` wrote. Call inside `host.locked`, before the instances run.
    func restoreForeign(_ s: Stage, file: String) {
        guard let data = FileManager.default.contents(atPath: file) else { return }
        guard let saved = try? JSONDecoder().decode(ForeignState.self, from: data) else {
            problems.append(PluginError(.state, plugin: s.spec.name, "saved state '\(file)' cannot be read; not restored"))
            return
        }
        guard saved.uri == s.spec.uri else {
            problems.append(PluginError(.state, plugin: s.spec.name, "saved state '\(file)' is for <\(saved.uri)>, not"
                                        + " <\(s.spec.uri)>; not restored"))
            return
        }
        applyConfigure(saved.configure ?? [:], to: s)
        if let program = saved.program, program.count == 2 {
            for inst in s.instances { ladspahost_select_program(inst, program[0], program[1], 1) }
        }
        for (symbol, value) in saved.controls {
            guard let k = s.controlIndex(symbol), value.isFinite else { continue }
            let port = s.controls[k]
            let v = min(max(value, port.minimum ?? -.infinity), port.maximum ?? .infinity)
            s.rt.controls.store(k, Int(v.bitPattern))
        }
        restoredFrom.append(file)
    }

    /// Saves a LADSPA or DSSI plugin's control values (and program) in `folder`/state.json.
    func saveForeign(_ s: Stage, folder: String) throws(PluginError) {
        var controls: [String: Float] = [:]
        for (k, port) in s.controls.enumerated() {
            controls[port.symbol] = Float(bitPattern: UInt32(truncatingIfNeeded: s.rt.controls.load(k)))
        }
        var program: [UInt]?
        var bank: UInt = 0, number: UInt = 0
        if let first = s.instances.first, ladspahost_selected_program(first, &bank, &number) != 0 { program = [bank, number] }
        let file = "\(folder)/state.json"
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(ForeignState(uri: s.spec.uri, controls: controls, program: program,
                                            configure: s.configured.isEmpty ? nil : s.configured))
                .write(to: URL(fileURLWithPath: file), options: .atomic)
        } catch {
            throw PluginError(.state, plugin: s.spec.name, "saving state to '\(file)' failed: \(error.localizedDescription)")
        }
    }
}
