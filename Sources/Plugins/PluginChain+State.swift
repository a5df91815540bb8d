import CLilv
import Foundation
import LV2Host
import Presets

/// What a state restore writes control values into, and where a state save reads them from.
final class PortValues {
    let stage: PluginChain.Stage
    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 1)
    let floatType, doubleType, intType, longType, boolType: UInt32
    init(_ stage: PluginChain.Stage, host: PluginHost) {
        self.stage = stage
        floatType = host.urid(LV2.atomFloat)
        doubleType = host.urid(LV2.atomDouble)
        intType = host.urid(LV2.atomInt)
        longType = host.urid(LV2.atomLong)
        boolType = host.urid(LV2.atomBool)
    }
    deinit { scratch.deallocate() }

    static let set: LilvSetPortValueFunc = { symbol, context, value, size, type in
        guard let symbol, let context, let value else { return }
        let v = Unmanaged<PortValues>.fromOpaque(context).takeUnretainedValue()
        let number: Float
        switch type {
        case v.floatType where size == 4: number = value.load(as: Float.self)
        case v.doubleType where size == 8: number = Float(value.load(as: Double.self))
        case v.intType where size == 4, v.boolType where size == 4: number = Float(value.load(as: Int32.self))
        case v.longType where size == 8: number = Float(value.load(as: Int64.self))
        default: return
        }
        if let k = v.stage.controlIndex(String(cString: symbol)) {
            v.stage.rt.controls.store(k, Int(number.bitPattern))
        }
    }

    static let get: LilvGetPortValueFunc = { symbol, context, size, type in
        guard let symbol, let context else { return nil }
        let v = Unmanaged<PortValues>.fromOpaque(context).takeUnretainedValue()
        guard let k = v.stage.controlIndex(String(cString: symbol)) else { return nil }
        v.scratch.pointee = Float(bitPattern: UInt32(truncatingIfNeeded: v.stage.rt.controls.load(k)))
        size?.pointee = 4
        type?.pointee = v.floatType
        return UnsafeRawPointer(v.scratch)
    }
}

extension PluginChain {
    /// The file a chain's saved state for a plugin lives in.
    public static func stateFile(directory: String, plugin name: String) -> String {
        "\(directory)/\(name)/state.ttl"
    }

    /// Plugin default state, then the LV2 preset, then the preset's control values, then the saved state.
    /// Call inside `host.locked`, before the instances are activated or run.
    func applyInitialValues(_ s: Stage, savedState: String?) {
        let spec = s.spec
        if let plugin = s.plugin,
           s.info.requiredFeatures.contains(LV2.loadDefaultState) || s.info.optionalFeatures.contains(LV2.loadDefaultState),
           let state = lilv_state_new_from_world(host.world, host.map, lilv_plugin_get_uri(plugin)) {
            restore(state, into: s)
            lilv_state_free(state)
        }
        applyConfigure(spec.configure, to: s)
        if spec.preset == nil, case .ladspa(let p) = s.source, p.takesMIDI, let first = programs(of: s).first {
            // A DSSI synth starts on its first program, as DSSI's hosts do (WhySynth is silent on none).
            try? applyProgram(first.uri, to: s)
        }
        if let preset = spec.preset {
            do throws(PluginError) {
                if s.plugin == nil { try applyProgram(preset, to: s) } else { try applyPreset(preset, to: s) }
            } catch {
                problems.append(error)
            }
        }
        for c in spec.controls {
            do throws(PluginError) {
                let v = try checkedValue(s, c.symbol, c.value)
                guard let index = s.controlIndex(c.symbol) else { continue }   // refused by checkedValue already
                if Double(v) != c.value && Float(c.value) != v {
                    let port = s.controls[index]
                    problems.append(PluginError(.badValue, plugin: spec.name, "control '\(c.symbol)' = \(c.value) is outside"
                                                + " \(port.minimum ?? -.infinity) to \(port.maximum ?? .infinity); using \(v)"))
                }
                s.rt.controls.store(index, Int(v.bitPattern))
            } catch {
                problems.append(error)
            }
        }
        if let savedState, s.plugin == nil {
            restoreForeign(s, file: Self.foreignStateFile(directory: savedState, plugin: spec.name))
        } else if let savedState {
            let file = Self.stateFile(directory: savedState, plugin: spec.name)
            guard FileManager.default.fileExists(atPath: file) else { return }
            guard let state = lilv_state_new_from_file(host.world, host.map, nil, file) else {
                problems.append(PluginError(.state, plugin: spec.name, "saved state '\(file)' cannot be read; not restored"))
                return
            }
            defer { lilv_state_free(state) }
            let saved = PluginHost.string(lilv_state_get_plugin_uri(state)) ?? "?"
            guard saved == spec.uri else {
                problems.append(PluginError(.state, plugin: spec.name, "saved state '\(file)' is for <\(saved)>, not"
                                            + " <\(spec.uri)>; not restored"))
                return
            }
            restore(state, into: s)
            restoredFrom.append(file)
        }
    }

    /// Restores `state` into every instance of `s`. Call inside `host.locked`, while the instances do not run.
    func restore(_ state: OpaquePointer, into s: Stage) {
        let values = PortValues(s, host: host)
        let context = Unmanaged.passUnretained(values).toOpaque()
        for (i, inst) in s.instances.enumerated() {
            lilv_state_restore(state, inst, PortValues.set, context, 0, s.features[i])
        }
        withExtendedLifetime(values) {}
    }

    /// Applies an LV2 preset (by URI). Call inside `host.locked`, while the instances do not run.
    func applyPreset(_ uri: String, to s: Stage) throws(PluginError) {
        guard let node = host.checkedNode(uri) else {
            throw PluginError(.preset, plugin: s.spec.name, "'\(uri)' is not a URI lilv accepts")
        }
        defer { lilv_node_free(node) }
        lilv_world_load_resource(host.world, node)
        guard let state = lilv_state_new_from_world(host.world, host.map, node) else {
            let known = host.presets(of: s.source).map { "<\($0.uri)> (\($0.label))" }
            throw PluginError(.preset, plugin: s.spec.name, "LV2 preset <\(uri)> not found for <\(s.spec.uri)>"
                              + (known.isEmpty ? "; the plugin has no presets" : "; its presets: \(known.joined(separator: ", "))"))
        }
        defer { lilv_state_free(state) }
        let target = PluginHost.string(lilv_state_get_plugin_uri(state)) ?? "?"
        guard target == s.spec.uri else {
            throw PluginError(.preset, plugin: s.spec.name, "LV2 preset <\(uri)> is for <\(target)>, not <\(s.spec.uri)>")
        }
        restore(state, into: s)
    }

    /// What a chain keeps beside its plugins' LV2 state: bypass per plugin name, mix and gain.
    struct Settings: Codable {
        var mix: Double
        var gainDB: Double
        var bypassed: [String]
    }

    static func settingsFile(directory: String) -> String { "\(directory)/chain.json" }

    /// Brings back bypass, mix and gain saved by `save(to:)` (for plugins of the same name). Control thread, before
    /// the chain is installed.
    func restoreSettings(from directory: String) {
        let file = Self.settingsFile(directory: directory)
        guard let data = FileManager.default.contents(atPath: file) else { return }
        guard let saved = try? JSONDecoder().decode(Settings.self, from: data) else {
            problems.append(PluginError(.state, plugin: label, "saved chain settings '\(file)' cannot be read; not restored"))
            return
        }
        mixValue = Self.clampMix(saved.mix)
        gainValue = Self.clampGain(saved.gainDB)
        for s in stages {
            let on = saved.bypassed.contains(s.spec.name)
            s.rt.bypass.store(on ? 1 : 0)
            s.rt.fade.pointee = on && s.rt.enabledControl < 0 ? 1 : 0
        }
        restoredFrom.append(file)
    }

    /// Saves every plugin's state and control values under `directory` (one folder per plugin name, each an LV2
    /// state bundle), and the chain's bypass, mix and gain beside them (`chain.json`). Safe while the chain runs
    /// (LV2 allows save concurrently with run).
    public func save(to directory: String) throws(PluginError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let settings = Settings(mix: mixValue, gainDB: gainValue,
                                    bypassed: stages.filter { $0.rt.bypass.load() != 0 }.map(\.spec.name))
            try JSONEncoder().encode(settings).write(to: URL(fileURLWithPath: Self.settingsFile(directory: directory)),
                                                     options: .atomic)
        } catch {
            throw PluginError(.state, plugin: label, "cannot save the chain's settings in '\(directory)': \(error.localizedDescription)")
        }
        try host.locked { () throws(PluginError) in
            for s in stages {
                let folder = "\(directory)/\(s.spec.name)"
                do {
                    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                } catch {
                    throw PluginError(.state, plugin: s.spec.name, "cannot create '\(folder)': \(error.localizedDescription)")
                }
                guard let plugin = s.plugin else {
                    try saveForeign(s, folder: folder)
                    continue
                }
                let values = PortValues(s, host: host)
                let context = Unmanaged.passUnretained(values).toOpaque()
                let flags = UInt32(LV2_STATE_IS_POD.rawValue | LV2_STATE_IS_PORTABLE.rawValue)
                // Files the plugin refers to stay where they are: lilv links external files into the folder (with
                // no copy or link folder given, lilv 0.24 replaces the original file with a link to itself).
                guard let state = lilv_state_new_from_instance(plugin, s.instances[0], host.map, folder, folder, folder,
                                                               folder, PortValues.get, context, flags, s.features[0]) else {
                    throw PluginError(.state, plugin: s.spec.name, "the plugin's state could not be taken")
                }
                defer { lilv_state_free(state) }
                withExtendedLifetime(values) {}
                let tmp = "\(folder)/state.ttl"
                if lilv_state_save(host.world, host.map, host.unmap, state, nil, folder, "state.ttl") != 0 {
                    throw PluginError(.state, plugin: s.spec.name, "saving state to '\(tmp)' failed")
                }
            }
        }
        dirty = false
    }
}
