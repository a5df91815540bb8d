import Commands
import Engine
import Foundation
import Jack
import Plugins
import Presets
#if canImport(Glibc)
import Glibc
import Takes
#endif

/// What a control surface needs to draw itself without reading a preset: the engines and their ports, each chain's
/// plugins with every control, the LV2 presets each plugin has, the takes; and the running setup saved as a preset
/// file that, applied again, changes nothing.
///
/// Threads: control side only, like the rest of `Session`.
extension Session {
    public struct EngineDescription: Codable, Sendable, Equatable {
        public var engine: String
        public var client: String
        public var ports: [PortDescription]
    }

    public struct PortDescription: Codable, Sendable, Equatable {
        public var name: String
        public var direction: String
        public var connections: [String]
    }

    public struct PluginDescription: Codable, Sendable, Equatable {
        public var engine: String
        /// Its name in the chain (what control messages use).
        public var name: String
        public var uri: String
        /// The plugin's own name.
        public var label: String
        public var latencyFrames: Int
        /// Left out of the signal by a bypass (live, or from the preset).
        public var bypassed: Bool = false
        public var controls: [ControlDescription]
        public var presets: [PresetDescription]
        /// What its cycles cost since the chain was built (see `StageTiming`).
        public var timing: StageTiming?
    }

    public struct ControlDescription: Codable, Sendable, Equatable {
        public var symbol: String
        public var name: String
        public var minimum: Float?
        public var maximum: Float?
        public var defaultValue: Float?
        public var value: Float?
        public var toggle: Bool
        public var integer: Bool
        /// lv2:enumeration (only the scale points are values) and pprops:logarithmic (a log scale suits it).
        public var enumeration: Bool
        public var logarithmic: Bool
        /// The value in its unit or as its label ("-7.5 dB", "Lowpass"), when it has one.
        public var text: String?
        /// units:unit ("db", "hz", …) and the symbol printed after a value ("dB"); nil when the plugin names none.
        public var unit: String?
        public var unitSymbol: String?
        /// lv2:scalePoint: named values, in order of value.
        public var scalePoints: [ScalePointDescription]
    }

    public struct ScalePointDescription: Codable, Sendable, Equatable {
        public var label: String
        public var value: Float
    }

    public struct PresetDescription: Codable, Sendable, Equatable {
        public var uri: String
        public var label: String
    }

    public struct TakeDescription: Codable, Sendable, Equatable {
        public var take: Int
        public var report: String
        public var frames: Int
        public var sampleRate: Int
        public var channels: Int
        public var ended: String
        public var files: [String]
    }

    /// One port of the JACK graph, any client's.
    public struct GraphPort: Codable, Sendable, Equatable {
        public var name: String
        public var client: String
        /// "audio" or "midi".
        public var type: String
        /// "output" (it sends) or "input" (it receives).
        public var direction: String
        /// JACK's latency range for it: capture latency (how old what it carries is), playback latency (how long
        /// until it is heard), in frames.
        public var captureLatency: [UInt32]?
        public var playbackLatency: [UInt32]?
        public var connections: [String]
    }

    /// Every port of the graph now, clients in name order, with its connections.
    public func describeGraph() -> [GraphPort] {
        guard let c = patchClient else { return [] }
        var out: [GraphPort] = []
        for type in PortType.allCases {
            for name in c.ports(type: type) {
                let output = c.isOutput(name) ?? false
                let range = { (capture: Bool) in c.latency(of: name, capture: capture).map { [$0.min, $0.max] } }
                out.append(GraphPort(name: name, client: String(name.prefix { $0 != ":" }), type: type.rawValue,
                                     direction: output ? "output" : "input", captureLatency: range(true),
                                     playbackLatency: range(false), connections: c.connections(of: name)))
            }
        }
        return out.sorted { ($0.client, $0.name) < ($1.client, $1.name) }
    }

    /// The engines and their ports, with each port's connections now.
    public func describeEngines() -> [EngineDescription] {
        var out: [EngineDescription] = []
        if let r = recorder {
            out.append(.init(engine: "recorder", client: r.client.name, ports: r.ports.map {
                PortDescription(name: $0.name, direction: "input", connections: r.client.connections(of: $0.name))
            }))
        }
        if let p = player {
            out.append(.init(engine: "player", client: p.client.name, ports: p.ports.map {
                PortDescription(name: $0.name, direction: "output", connections: p.client.connections(of: $0.name))
            }))
        }
        for name in racks.keys.sorted() {
            guard let r = racks[name] else { continue }
            let ports = r.inputs.map { ($0, "input") } + r.sidePorts.map { ($0, "side input") } + r.outputs.map { ($0, "output") }
            let midi = r.midiInputNames.map { ($0, "midi input") } + r.midiOutputNames.map { ($0, "midi output") }
            out.append(.init(engine: name, client: r.client.name, ports: ports.map { port, direction in
                PortDescription(name: port.name, direction: direction, connections: r.client.connections(of: port.name))
            } + midi.map { port, direction in
                PortDescription(name: port, direction: direction, connections: r.client.connections(of: port))
            }))
        }
        // An isolated rack's ports are its process's: named from its settings, read from the graph.
        if let c = patchClient {
            for name in supervisors.keys.sorted() {
                guard let section = supervisors[name]?.rack, let p = preset else { continue }
                let config = RackConfig(section: section, session: p.session)
                let names = config.inputs.map { ($0, "input") } + config.sideInputs.map { ($0, "side input") }
                    + config.outputs.map { ($0, "output") }
                out.append(.init(engine: name, client: section.client, ports: names.map { short, direction in
                    let full = "\(section.client):\(short)"
                    return PortDescription(name: full, direction: direction, connections: c.connections(of: full))
                }))
            }
        }
        return out
    }

    /// Every plugin of every chain (or of `engine`), with its controls' ranges and current values and its presets.
    public func describePlugins(_ engine: ChainEngine? = nil) -> [PluginDescription] {
        var out: [PluginDescription] = []
        for e in chainEngines where engine == nil || engine == e {
            guard let chain = chain(e), !chain.isEmpty else { continue }
            for (spec, status) in zip(chain.specs, chain.status) {
                let info = PluginHost.shared.plugin(spec.uri)
                let values = Dictionary(status.controls.map { ($0.symbol, $0.value) }, uniquingKeysWith: { a, _ in a })
                let controls = (chain.controls(of: spec.name) ?? info?.controls ?? []).map { c in
                    let value = values[c.symbol]
                    return ControlDescription(symbol: c.symbol, name: c.name, minimum: c.minimum, maximum: c.maximum,
                                              defaultValue: c.defaultValue, value: value, toggle: c.isToggle,
                                              integer: c.isInteger, enumeration: c.isEnumeration, logarithmic: c.isLogarithmic,
                                              text: value.flatMap { try? chain.formatted(spec.name, c.symbol, $0) },
                                              unit: c.unit, unitSymbol: c.unitSymbol,
                                              scalePoints: c.scalePoints.map { .init(label: $0.label, value: $0.value) })
                }
                out.append(PluginDescription(engine: e.rawValue, name: spec.name, uri: spec.uri, label: info?.name ?? spec.uri,
                                             latencyFrames: status.latencyFrames, bypassed: status.bypassed,
                                             controls: controls,
                                             presets: (info?.presets ?? []).map { .init(uri: $0.uri, label: $0.label) },
                                             timing: status.timing))
            }
        }
        return out
    }

    /// Loads an LV2 preset on a running plugin: the chain is rebuilt off the process thread with that preset and
    /// the other plugins' current values, and swapped in at a cycle boundary.
    public func loadPluginPreset(_ engine: ChainEngine, plugin: String, preset uri: String,
                                 source: String = "osc") throws(PluginError) {
        guard let chain = chain(engine), let index = chain.specs.firstIndex(where: { $0.name == plugin }) else {
            throw PluginError(.unknownPlugin, plugin: plugin, "the \(engine.rawValue) has no plugin '\(plugin)'")
        }
        let presets = PluginHost.shared.plugin(chain.specs[index].uri)?.presets ?? []
        guard presets.contains(where: { $0.uri == uri }) else {
            // A DSSI synth has 128 programs or more: the first twelve, and where to see the rest.
            let known = presets.prefix(12).map(\.uri).joined(separator: ", ")
                + (presets.count > 12 ? " and \(presets.count - 12) more: `tandem plugins show \(chain.specs[index].uri)`" : "")
            throw PluginError(.preset, plugin: plugin, "no preset '\(uri)'" + (known.isEmpty ? " (it has none)" : " (it has: \(known))"))
        }
        var specs = chain.currentSpecs
        specs[index].preset = uri
        specs[index].controls = []
        replaceChain(engine, specs)
        if let rebuilt = self.chain(engine) {
            // Logged at the new chain's first cycle (see Session+ControlLog).
            controlLog.presets[ObjectIdentifier(rebuilt)] = .preset(0, engine: engine.rawValue, plugin: plugin, uri: uri,
                                                                     source: source)
        }
        events.append(.presetLoaded(engine: engine.rawValue, plugin: plugin, preset: uri, source: source))
        // Subscribers hear every control of the plugin as the preset left it.
        if let rebuilt = self.chain(engine), let status = rebuilt.status.first(where: { $0.name == plugin }) {
            for c in status.controls {
                events.append(.controlChanged(engine: engine.rawValue, plugin: plugin, symbol: c.symbol, value: c.value,
                                              source: source))
            }
        }
    }

    /// The setup as it runs now: the preset with each chain's current plugins and control values.
    public func runningPreset() -> Preset? {
        guard var p = preset else { return nil }
        if let c = chain(.recorder), p.recorder != nil { p.recorder?.plugins = c.currentSpecs }
        if let c = chain(.player), p.player != nil { p.player?.plugins = c.currentSpecs }
        for (i, rack) in p.racks.enumerated() {
            if let c = chain(.rack(rack.name)) {
                p.racks[i].plugins = c.currentSpecs
            } else if let s = supervisors[rack.name] {
                p.racks[i].plugins = s.shadow.applied(to: rack.plugins)   // what its process changed since
            }
        }
        p.maps = maps
        return p
    }

    /// Writes the running setup as `NAME.toml` in the session's folder (never over an existing file) and returns its
    /// path. Applying that file to this session changes nothing in the graph.
    public func saveRunningPreset(name: String) throws(EngineError) -> String {
        guard let p = runningPreset() else { throw EngineError(.badConfig, "no preset is running") }
        if let why = Limits.nameProblem(name, what: "the preset name", bytes: 1...200) {
            throw EngineError(.badConfig, why)
        }
        let file = name.hasSuffix(".toml") ? name : name + ".toml"
        let path = (p.session.directory as NSString).appendingPathComponent(file)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw EngineError(.file, "cannot write '\(path)': \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(fd) }
        let bytes = Array(("# Saved by Tandem from the running session '\(p.session.name)'.\n" + p.toml()).utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            unlink(path)
            throw EngineError(.file, "cannot write '\(path)': \(written < 0 ? String(cString: strerror(errno)) : "short write")")
        }
        fsync(fd)
        return path
    }

    /// The takes whose reports lie in the session's folder, oldest first.
    public func describeTakes() -> [TakeDescription] {
        guard let dir = preset?.session.directory,
              let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [] }
        return names.filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            let path = (dir as NSString).appendingPathComponent(name)
            guard let r = try? TakeReport.read(from: path) else { return nil }
            return TakeDescription(take: r.take, report: path, frames: r.frames, sampleRate: r.sampleRate,
                                   channels: r.channels, ended: r.ended.rawValue, files: r.chunks.flatMap(\.files))
        }
    }
}

/// JSON for the control protocol's replies.
public func introspectionJSON<T: Encodable>(_ value: T) -> String {
    let e = JSONEncoder()
    e.outputFormatting = [.sortedKeys]
    e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return (try? e.encode(value)).flatMap { String(data: $0, encoding: .utf8) } ?? "[]"
}
