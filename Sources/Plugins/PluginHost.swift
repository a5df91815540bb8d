import CLilv
import Foundation
import LV2Host
import Presets

/// The LV2 world: every installed plugin (from LV2_PATH, or the standard folders), the URID map shared by every
/// instance, and descriptions of plugins and their ports.
///
/// Threads: any non-real-time thread; lilv is not thread-safe, so every use of the world goes through `locked`.
/// One per process (`shared`): loading the world reads every installed bundle's data.
// @unchecked Sendable: `world` and `urids` are set once in `init`; the world and every lilv object from it are used
// only inside `locked` (the NSLock), and the URID map behind `urids` takes its own pthread mutex (LV2Host).
public final class PluginHost: @unchecked Sendable {
    let world: OpaquePointer
    let urids: OpaquePointer
    /// The LADSPA and DSSI plugins (used inside `locked`, as the world is).
    let foreign = LADSPACatalog()
    private let lock = NSLock()

    /// The process's host, created on first use.
    public static let shared = PluginHost()

    private init() {
        world = lilv_world_new()
        lilv_world_load_all(world)
        urids = lv2host_urids_new()
    }

    /// Loads one more bundle (a folder with a manifest.ttl) into the world, e.g. a plugin built by a test. Returns
    /// whether lilv now knows plugins from it.
    @discardableResult
    public func load(bundle path: String) -> Bool {
        locked {
            let dir = path.hasSuffix("/") ? path : path + "/"
            guard let uri = lilv_new_file_uri(world, nil, dir) else { return false }
            defer { lilv_node_free(uri) }
            lilv_world_load_bundle(world, uri)
            return lilv_plugins_size(lilv_world_get_all_plugins(world)) > 0
        }
    }

    /// Runs `body` with the world to itself.
    func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    var map: UnsafeMutablePointer<LV2_URID_Map> { lv2host_urids_map(urids) }
    var unmap: UnsafeMutablePointer<LV2_URID_Unmap> { lv2host_urids_unmap(urids) }
    public func urid(_ uri: String) -> UInt32 { lv2host_urid(urids, uri) }

    /// A new URI node (the caller frees it). For the host's own vocabulary (always valid URIs).
    func node(_ uri: String) -> OpaquePointer { lilv_new_uri(world, uri) }

    /// A new URI node for a URI from outside (a preset, the command line), or nil when lilv refuses it as a URI
    /// ("23:59" is one: lilv's nil is not left to trap in Swift).
    func checkedNode(_ uri: String) -> OpaquePointer? {
        let n: OpaquePointer? = lilv_new_uri(world, uri)
        return n
    }

    func withNode<T>(_ uri: String, _ body: (OpaquePointer) -> T?) -> T? {
        guard let n = checkedNode(uri) else { return nil }
        defer { lilv_node_free(n) }
        return body(n)
    }

    /// The plugin with this URI. Call inside `locked`.
    func lilvPlugin(_ uri: String) -> OpaquePointer? {
        withNode(uri) { lilv_plugins_get_by_uri(lilv_world_get_all_plugins(world), $0) }
    }

    /// Every installed plugin, sorted by URI: LV2, then LADSPA, then DSSI (`formats`: only these).
    public func plugins(formats: Set<String> = ["lv2", "ladspa", "dssi"]) -> [PluginInfo] {
        locked {
            var out: [PluginInfo] = []
            if formats.contains("lv2") { out += allLilvPlugins().map { describe($0, presets: false) }.sorted { $0.uri < $1.uri } }
            for f in [LADSPACatalog.Format.ladspa, .dssi] where formats.contains(f.rawValue) {
                out += foreign.all(f).map(\.info).sorted { $0.uri < $1.uri }
            }
            return out
        }
    }

    /// The plugin with this name (an LV2 URI, or a LADSPA or DSSI name), described in full (with its presets or
    /// programs), or nil when it is not installed.
    public func plugin(_ uri: String) -> PluginInfo? {
        locked {
            switch source(uri) {
            case .success(.lv2(let p)): return describe(p, presets: true)
            case .success(.ladspa(let p)): return describeWithPrograms(p)
            case .failure: return nil
            }
        }
    }

    /// Why a plugin name stands for no plugin here (not installed, with the nearest names; a LADSPA library that
    /// does not load or does not hold the label), or nil when it does.
    public func whyUnavailable(_ uri: String) -> String? {
        locked {
            if case .failure(let e) = source(uri) { return e.why }
            return nil
        }
    }

    /// Where a plugin named in a spec comes from, or why it cannot be had (not installed, with the nearest names;
    /// a LADSPA library that does not load or does not hold the label). Call inside `locked`.
    func source(_ uri: String) -> Result<HostedPlugin, LADSPACatalog.Unavailable> {
        if LADSPACatalog.isForeign(uri) { return foreign.plugin(uri).map { .ladspa($0) } }
        if let p = lilvPlugin(uri) { return .success(.lv2(p)) }
        let near = similarLocked(to: uri)
        return .failure(LADSPACatalog.Unavailable("<\(uri)> is not installed"
                        + (near.isEmpty ? " (see `tandem plugins`)" : " (installed: \(near.joined(separator: ", ")))")))
    }

    /// A plugin's description, as building and checking see it. Call inside `locked`.
    func describe(_ source: HostedPlugin) -> PluginInfo {
        switch source {
        case .lv2(let p): return describe(p, presets: false)
        case .ladspa(let p): return p.info
        }
    }

    /// Installed plugin URIs close to `uri` (for "did you mean"). Call inside `locked`.
    func similarLocked(to uri: String) -> [String] {
        let tail = PluginSpec.defaultName(uri: uri)
        let near = allLilvPlugins().compactMap { Self.string(lilv_plugin_get_uri($0)) }.filter {
            PluginSpec.defaultName(uri: $0) == tail || $0.hasPrefix(uri) || (uri.count > 8 && $0.contains(uri))
        }
        return Array(near.prefix(3))
    }

    /// Every installed plugin, in lilv's order. Call inside `locked`.
    func allLilvPlugins() -> [OpaquePointer] {
        let all = lilv_world_get_all_plugins(world)
        var out: [OpaquePointer] = []
        var i = lilv_plugins_begin(all)
        while !lilv_plugins_is_end(all, i) {
            if let p = lilv_plugins_get(all, i) { out.append(p) }
            i = lilv_plugins_next(all, i)
        }
        return out
    }
}

/// Where a chain's plugin comes from: lilv's plugin, or a LADSPA or DSSI library's descriptor.
enum HostedPlugin {
    case lv2(OpaquePointer)
    case ladspa(LADSPACatalog.Plugin)
}

/// URIs from the LV2 specifications (their C headers build them by macro concatenation, which Swift cannot import).
enum LV2 {
    static let core = "http://lv2plug.in/ns/lv2core#"
    static let ext = "http://lv2plug.in/ns/ext/"
    static let uridMap = ext + "urid#map", uridUnmap = ext + "urid#unmap"
    static let options = ext + "options#options", optionsInterface = ext + "options#interface"
    static let boundedBlockLength = ext + "buf-size#boundedBlockLength"
    static let minBlockLength = ext + "buf-size#minBlockLength", maxBlockLength = ext + "buf-size#maxBlockLength"
    static let nominalBlockLength = ext + "buf-size#nominalBlockLength", sequenceSize = ext + "buf-size#sequenceSize"
    static let workerSchedule = ext + "worker#schedule", workerInterface = ext + "worker#interface"
    static let log = ext + "log#log"
    static let stateInterface = ext + "state#interface", loadDefaultState = ext + "state#loadDefaultState"
    static let threadSafeRestore = ext + "state#threadSafeRestore", mapPath = ext + "state#mapPath"
    static let makePath = ext + "state#makePath", freePath = ext + "state#freePath"
    static let hardRTCapable = core + "hardRTCapable", isLive = core + "isLive", inPlaceBroken = core + "inPlaceBroken"
    static let audioPort = core + "AudioPort", controlPort = core + "ControlPort", cvPort = core + "CVPort"
    static let inputPort = core + "InputPort", outputPort = core + "OutputPort"
    static let atomPort = ext + "atom#AtomPort", atomSequence = ext + "atom#Sequence", atomChunk = ext + "atom#Chunk"
    static let atomFloat = ext + "atom#Float", atomInt = ext + "atom#Int", atomDouble = ext + "atom#Double"
    static let atomBool = ext + "atom#Bool", atomLong = ext + "atom#Long"
    static let sampleRate = "http://lv2plug.in/ns/ext/parameters#sampleRate"
    static let reportsLatency = core + "reportsLatency", latency = core + "latency"
    static let connectionOptional = core + "connectionOptional"
    static let isSideChain = core + "isSideChain", enabled = core + "enabled"
    static let portGroup = "http://lv2plug.in/ns/ext/port-groups#group"
    static let sideChainOf = "http://lv2plug.in/ns/ext/port-groups#sideChainOf"
    static let fixedBlockLength = ext + "buf-size#fixedBlockLength"
    static let powerOf2BlockLength = ext + "buf-size#powerOf2BlockLength"
    static let toggled = core + "toggled", integer = core + "integer", enumeration = core + "enumeration"
    static let logarithmic = "http://lv2plug.in/ns/ext/port-props#logarithmic"
    static let presetClass = ext + "presets#Preset"
    static let unitsPrefix = "http://lv2plug.in/ns/extensions/units#"
    static let unitsUnit = unitsPrefix + "unit", unitsSymbol = unitsPrefix + "symbol"
    static let rdfsLabel = "http://www.w3.org/2000/01/rdf-schema#label"
    static let midiEvent = ext + "midi#MidiEvent", timePosition = "http://lv2plug.in/ns/ext/time#Position"
    static let minimumSize = "http://lv2plug.in/ns/ext/resize-port#minimumSize"
    static let time = "http://lv2plug.in/ns/ext/time#"
}

/// Host features Tandem provides to plugins (anything else a plugin requires makes it unusable here).
public enum HostFeatures {
    public static let supported: Set<String> = [
        LV2.uridMap, LV2.uridUnmap, LV2.options, LV2.boundedBlockLength, LV2.workerSchedule, LV2.log,
        LV2.loadDefaultState, LV2.threadSafeRestore, LV2.mapPath, LV2.makePath, LV2.freePath,
        LV2.hardRTCapable, LV2.isLive, LV2.inPlaceBroken,
        // Given when the chain is run once per cycle with a constant period (a power of two for the second); a
        // chain that cannot promise it refuses a plugin that requires it (see `PluginChain.unusable`).
        LV2.fixedBlockLength, LV2.powerOf2BlockLength,
    ]
}

