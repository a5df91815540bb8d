import CLilv
import Foundation

/// What a plugin port is.
public enum PluginPortKind: String, Sendable, Codable {
    case audio, control, atom, cv, other
}

/// One port of a plugin, as its data describes it.
public struct PluginPortInfo: Sendable, Codable, Equatable {
    public var index: Int
    public var symbol: String
    public var name: String
    public var kind: PluginPortKind
    public var isInput: Bool
    public var defaultValue: Float?
    public var minimum: Float?
    public var maximum: Float?
    /// An output control port that reports the plugin's latency in frames.
    public var reportsLatency: Bool
    public var isToggle: Bool
    public var isInteger: Bool
    /// lv2:enumeration: only the scale points' values are meaningful (a page shows a list of their labels).
    public var isEnumeration: Bool = false
    /// pprops:logarithmic: best shown and moved on a logarithmic scale (a frequency, a time).
    public var isLogarithmic: Bool = false
    /// The port may be left unconnected.
    public var isOptional: Bool
    /// lv2:sampleRate: `minimum`, `maximum` and `defaultValue` are fractions of the sample rate (a chain scales
    /// them by its rate; values are given in Hz).
    public var scalesWithRate: Bool = false
    /// units:unit: the unit's name in the LV2 units vocabulary ("db", "hz", "ms", …) or its URI when it is another,
    /// and its symbol to print after a value ("dB", "Hz", "ms"); nil when the port names none.
    public var unit: String?
    public var unitSymbol: String?
    /// lv2:scalePoint: named values (label and value, in order of value), e.g. the modes of a switch.
    public var scalePoints: [ScalePoint] = []

    public struct ScalePoint: Sendable, Codable, Equatable {
        public var label: String
        public var value: Float
    }
    /// An audio input that is a side chain (lv2:isSideChain, or in a port group that is pg:sideChainOf another):
    /// a chain feeds it from an extra input of its own, never from the path (see `ChainLayout`).
    public var isSideChain: Bool = false
    /// The port's lv2:designation (e.g. lv2:enabled, the plugin's own bypass switch), if any.
    public var designation: String? = nil
    /// An atom port that supports (atom:supports) MIDI events (midi:MidiEvent): an input takes the rack's MIDI, an
    /// output's MIDI goes to the rack's MIDI outputs.
    public var supportsMIDI: Bool = false
    /// An atom input that supports time:Position (the host tells it the transport's position and tempo).
    public var supportsTime: Bool = false
    /// rsz:minimumSize: the bytes the plugin wants in this (atom) port's buffer, if it says.
    public var minimumSize: Int? = nil

    /// This port's range and default at `sampleRate`. The range is scaled by the rate. The default is too when it
    /// lies in the unscaled range (a fraction of the rate, as lv2:sampleRate says); a default outside it was written
    /// in Hz (swh's single_para: range 0-0.4, default 440, "Frequency (Hz)"; 18 plugins of Debian's catalog do so)
    /// and is taken as it is, clamped to the scaled range. Scaled blindly, 440 became 21,120,000 Hz and the plugin
    /// put out NaN. jalv scales only the range and uses the default as written (440 Hz here: the same value);
    /// Carla clamps the default into the unscaled range first and scales it (0.4 × the rate: 19,200 Hz).
    public func at(sampleRate: Int) -> PluginPortInfo {
        guard scalesWithRate else { return self }
        var p = self
        let r = Float(sampleRate)
        p.minimum = minimum.map { $0 * r }
        p.maximum = maximum.map { $0 * r }
        if let d = defaultValue {
            let fraction = d >= (minimum ?? -.infinity) && d <= (maximum ?? .infinity)
            let hz = fraction ? d * r : d
            p.defaultValue = min(max(hz, p.minimum ?? -.infinity), p.maximum ?? .infinity)
        }
        return p
    }
}

/// An installed plugin, as `tandem plugins` shows it.
public struct PluginInfo: Sendable, Codable, Equatable {
    public var uri: String
    public var name: String
    public var className: String?
    public var author: String?
    public var bundle: String?
    public var ports: [PluginPortInfo]
    public var requiredFeatures: [String]
    public var optionalFeatures: [String]
    public var extensionData: [String]
    /// LV2 presets: URI and label.
    public var presets: [Preset]
    /// Required features Tandem does not provide (the plugin cannot be used while this is not empty).
    public var missingFeatures: [String]
    /// "lv2", "ladspa" or "dssi".
    public var format: String = "lv2"
    /// A LADSPA or DSSI plugin's unique ID (nil for LV2).
    public var uniqueID: Int? = nil

    public struct Preset: Sendable, Codable, Equatable {
        public var uri: String
        public var label: String
    }

    public var audioInputs: Int { ports.filter { $0.kind == .audio && $0.isInput }.count }
    public var audioOutputs: Int { ports.filter { $0.kind == .audio && !$0.isInput }.count }
    public var controls: [PluginPortInfo] { ports.filter { $0.kind == .control && $0.isInput } }
}

extension PluginHost {
    static func string(_ node: OpaquePointer?) -> String? {
        guard let node, let c = lilv_node_as_string(node) else { return nil }
        return String(cString: c)
    }

    static func strings(_ nodes: UnsafeMutableRawPointer?) -> [String] { members(nodes).compactMap { string($0) } }

    /// The nodes of a lilv node collection (valid while the collection lives).
    static func members(_ nodes: UnsafeMutableRawPointer?) -> [OpaquePointer] {
        guard let nodes else { return [] }
        var out: [OpaquePointer] = []
        var i = lilv_nodes_begin(nodes)
        while !lilv_nodes_is_end(nodes, i) {
            if let n = lilv_nodes_get(nodes, i) { out.append(n) }
            i = lilv_nodes_next(nodes, i)
        }
        return out
    }

    /// Call inside `locked`.
    func describe(_ p: OpaquePointer, presets withPresets: Bool) -> PluginInfo {
        let uri = Self.string(lilv_plugin_get_uri(p)) ?? "?"
        let nameNode = lilv_plugin_get_name(p)
        defer { lilv_node_free(nameNode) }
        let authorNode = lilv_plugin_get_author_name(p)
        defer { lilv_node_free(authorNode) }
        let className = lilv_plugin_get_class(p).flatMap { Self.string(lilv_plugin_class_get_label($0)) }
        let bundle = Self.string(lilv_plugin_get_bundle_uri(p))
        let required = lilv_plugin_get_required_features(p)
        let optional = lilv_plugin_get_optional_features(p)
        let extensions = lilv_plugin_get_extension_data(p)
        defer {
            lilv_nodes_free(required)
            lilv_nodes_free(optional)
            lilv_nodes_free(extensions)
        }
        let requiredList = Self.strings(required)
        var info = PluginInfo(
            uri: uri, name: Self.string(nameNode) ?? uri, className: className, author: Self.string(authorNode),
            bundle: bundle, ports: ports(of: p), requiredFeatures: requiredList,
            optionalFeatures: Self.strings(optional), extensionData: Self.strings(extensions), presets: [],
            missingFeatures: requiredList.filter { !HostFeatures.supported.contains($0) })
        if withPresets { info.presets = presets(of: p) }
        return info
    }

    func ports(of p: OpaquePointer) -> [PluginPortInfo] {
        let count = Int(lilv_plugin_get_num_ports(p))
        var mins = [Float](repeating: .nan, count: count)
        var maxs = [Float](repeating: .nan, count: count)
        var defs = [Float](repeating: .nan, count: count)
        lilv_plugin_get_port_ranges_float(p, &mins, &maxs, &defs)
        let kinds: [(String, PluginPortKind)] = [(LV2.audioPort, .audio), (LV2.controlPort, .control),
                                                 (LV2.atomPort, .atom), (LV2.cvPort, .cv)]
        let kindNodes = kinds.map { (node($0.0), $0.1) }
        let input = node(LV2.inputPort), latency = node(LV2.reportsLatency), latencyDesignation = node(LV2.latency)
        let toggled = node(LV2.toggled), integer = node(LV2.integer), optional = node(LV2.connectionOptional)
        let designationKey = node(LV2.core + "designation"), rateRelative = node(LV2.core + "sampleRate")
        let unitKey = node(LV2.unitsUnit), unitSymbolKey = node(LV2.unitsSymbol)
        let sideChain = node(LV2.isSideChain), groupKey = node(LV2.portGroup), sideChainOf = node(LV2.sideChainOf)
        let midiEvent = node(LV2.midiEvent), timePosition = node(LV2.timePosition)
        let minimumSizeKey = node(LV2.minimumSize)
        let enumeration = node(LV2.enumeration), logarithmic = node(LV2.logarithmic)
        defer {
            for n in [midiEvent, timePosition, minimumSizeKey, enumeration, logarithmic] { lilv_node_free(n) }
            for (n, _) in kindNodes { lilv_node_free(n) }
            for n in [input, latency, latencyDesignation, toggled, integer, optional, designationKey, rateRelative,
                      unitKey, unitSymbolKey, sideChain, groupKey, sideChainOf] {
                lilv_node_free(n)
            }
        }
        return (0..<count).map { i in
            let port = lilv_plugin_get_port_by_index(p, UInt32(i))
            let kind = kindNodes.first { lilv_port_is_a(p, port, $0.0) }?.1 ?? .other
            let nameNode = lilv_port_get_name(p, port)
            defer { lilv_node_free(nameNode) }
            let isInput = lilv_port_is_a(p, port, input)
            let designation = lilv_port_get(p, port, designationKey)
            defer { lilv_node_free(designation) }
            let designatedLatency = designation.map { lilv_node_equals($0, latencyDesignation) } ?? false
            var isSideChain = lilv_port_has_property(p, port, sideChain)
            if !isSideChain, kind == .audio, isInput {
                // pg:sideChainOf on the port itself, or on the group it belongs to.
                let own = lilv_port_get(p, port, sideChainOf)
                let group = lilv_port_get(p, port, groupKey)
                isSideChain = own != nil || (group.map { lilv_world_ask(world, $0, sideChainOf, nil) } ?? false)
                lilv_node_free(own)
                lilv_node_free(group)
            }
            let (unit, unitSymbol) = units(p, port, unitKey, unitSymbolKey)
            var info = PluginPortInfo(
                index: i, symbol: Self.string(lilv_port_get_symbol(p, port)) ?? "port\(i)",
                name: Self.string(nameNode) ?? "", kind: kind, isInput: isInput,
                defaultValue: defs[i].isNaN ? nil : defs[i], minimum: mins[i].isNaN ? nil : mins[i],
                maximum: maxs[i].isNaN ? nil : maxs[i],
                reportsLatency: !isInput && kind == .control
                    && (lilv_port_has_property(p, port, latency) || designatedLatency),
                isToggle: lilv_port_has_property(p, port, toggled), isInteger: lilv_port_has_property(p, port, integer),
                isOptional: lilv_port_has_property(p, port, optional),
                scalesWithRate: lilv_port_has_property(p, port, rateRelative),
                isSideChain: isSideChain, designation: designation.flatMap { Self.string($0) })
            info.unit = unit
            info.unitSymbol = unitSymbol
            info.isEnumeration = lilv_port_has_property(p, port, enumeration)
            info.isLogarithmic = lilv_port_has_property(p, port, logarithmic)
            if kind == .atom {
                info.supportsMIDI = lilv_port_supports_event(p, port, midiEvent)
                info.supportsTime = lilv_port_supports_event(p, port, timePosition)
                if let n = lilv_port_get(p, port, minimumSizeKey) {
                    if lilv_node_is_int(n) { info.minimumSize = Int(lilv_node_as_int(n)) }
                    lilv_node_free(n)
                }
            }
            info.scalePoints = scalePoints(p, port)
            return info
        }
    }

    /// The port's units:unit: a name ("db" for units:db, the URI for a unit outside the vocabulary, nil for a unit
    /// given as a blank node) and its units:symbol. Call inside `locked`.
    func units(_ p: OpaquePointer, _ port: OpaquePointer?, _ unitKey: OpaquePointer?, _ symbolKey: OpaquePointer?)
        -> (String?, String?) {
        guard let u = lilv_port_get(p, port, unitKey) else { return (nil, nil) }
        defer { lilv_node_free(u) }
        var name: String?
        if lilv_node_is_uri(u), let uri = Self.string(u) {
            name = uri.hasPrefix(LV2.unitsPrefix) ? String(uri.dropFirst(LV2.unitsPrefix.count)) : uri
        }
        var symbol: String?
        if let s = lilv_world_get(world, u, symbolKey, nil) {
            symbol = Self.string(s)
            lilv_node_free(s)
        }
        return (name ?? symbol, symbol)
    }

    /// The port's scale points, in order of value. Call inside `locked`.
    func scalePoints(_ p: OpaquePointer, _ port: OpaquePointer?) -> [PluginPortInfo.ScalePoint] {
        guard let points = lilv_port_get_scale_points(p, port) else { return [] }
        defer { lilv_scale_points_free(points) }
        var out: [PluginPortInfo.ScalePoint] = []
        var i = lilv_scale_points_begin(points)
        while !lilv_scale_points_is_end(points, i) {
            if let point = lilv_scale_points_get(points, i),
               let label = Self.string(lilv_scale_point_get_label(point)),
               let valueNode = lilv_scale_point_get_value(point) {
                let v = lilv_node_as_float(valueNode)
                if v.isFinite { out.append(.init(label: label, value: v)) }
            }
            i = lilv_scale_points_next(points, i)
        }
        return out.sorted { $0.value < $1.value }
    }

    func presets(of p: OpaquePointer) -> [PluginInfo.Preset] {
        let presetClass = node(LV2.presetClass), label = node(LV2.rdfsLabel)
        defer {
            lilv_node_free(presetClass)
            lilv_node_free(label)
        }
        guard let related = lilv_plugin_get_related(p, presetClass) else { return [] }
        defer { lilv_nodes_free(related) }
        let out = Self.members(related).compactMap { preset -> PluginInfo.Preset? in
            guard let uri = Self.string(preset) else { return nil }
            lilv_world_load_resource(world, preset)
            let labels = lilv_world_find_nodes(world, preset, label, nil)
            defer { lilv_nodes_free(labels) }
            return .init(uri: uri, label: Self.strings(labels).first ?? uri)
        }
        return out.sorted { $0.label < $1.label }
    }
}
