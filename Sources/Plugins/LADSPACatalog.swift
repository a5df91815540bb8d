import Foundation
import LADSPAHost

/// The LADSPA and DSSI plugins of this machine, named `ladspa:LIBRARY/LABEL`, `dssi:LIBRARY/LABEL` (the library's
/// file name without `.so`) or `ladspa:UNIQUEID`, found on LADSPA_PATH and DSSI_PATH (each a colon-separated list of
/// folders; unset: ~/.ladspa, /usr/local/lib/ladspa, /usr/lib/ladspa and the multiarch folder, the same for dssi).
///
/// A library is loaded (dlopen) when a plugin of it is first named, and stays loaded; listing every plugin loads
/// them all. Described as LV2 plugins are (`PluginInfo`), so a chain, a check and every surface treat them alike.
///
/// Threads: inside `PluginHost.locked` only (one caller at a time).
final class LADSPACatalog {
    enum Format: String, Sendable { case ladspa, dssi }

    /// Why a named plugin cannot be had, in words.
    struct Unavailable: Error {
        let why: String
        init(_ why: String) { self.why = why }
    }

    /// One plugin of a library.
    struct Plugin {
        let format: Format
        let library: OpaquePointer
        let libraryPath: String
        let index: UInt
        let uniqueID: UInt
        let takesMIDI: Bool
        var info: PluginInfo
    }

    private let environment: [String: String]
    /// Opened libraries by path; the loader's words for those that cannot be.
    private var opened: [String: OpaquePointer] = [:]
    private var failed: [String: String] = [:]
    private var scanned: [Format: [Plugin]] = [:]

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    static func isForeign(_ uri: String) -> Bool { uri.hasPrefix("ladspa:") || uri.hasPrefix("dssi:") }

    /// The folders searched for `format`, in order.
    func folders(_ format: Format) -> [String] {
        let variable = format == .ladspa ? "LADSPA_PATH" : "DSSI_PATH"
        if let list = environment[variable], !list.isEmpty {
            return list.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        let name = format.rawValue
        return ["\(home)/.\(name)", "/usr/local/lib/\(name)", "/usr/lib/\(name)", "/usr/lib/x86_64-linux-gnu/\(name)",
                "/usr/lib/aarch64-linux-gnu/\(name)"]
    }

    /// The plugin a name stands for, or why there is none (in words for `PluginError(.notInstalled…)`).
    func plugin(_ uri: String) -> Result<Plugin, Unavailable> {
        guard let colon = uri.firstIndex(of: ":"), let format = Format(rawValue: String(uri[..<colon])) else {
            return .failure(Unavailable("'\(uri)' is not a LADSPA or DSSI name"))
        }
        let rest = String(uri[uri.index(after: colon)...])
        if let id = UInt(rest) {
            let holders = all(format).filter { $0.uniqueID == id }
            switch holders.count {
            case 0: return .failure(Unavailable("no \(format.rawValue) plugin has the unique ID \(id) (see `tandem plugins --format \(format.rawValue)`)"))
            case 1: return .success(holders[0])
            default:
                return .failure(Unavailable("the unique ID \(id) is held by \(holders.map(\.info.uri).joined(separator: " and "))"
                                + "; name one of them"))
            }
        }
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            return .failure(Unavailable("'\(uri)': a \(format.rawValue) plugin is named \(format.rawValue):LIBRARY/LABEL or"
                            + " \(format.rawValue):UNIQUEID (e.g. ladspa:amp/amp_mono, dssi:hexter/hexter, ladspa:1048)"))
        }
        let library = String(parts[0]), label = String(parts[1])
        guard !library.contains(".."), let path = folders(format).map({ "\($0)/\(library).so" })
                .first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            return .failure(Unavailable("no library \(library).so in the \(format.rawValue) folders ("
                            + folders(format).joined(separator: ":") + "; set \(format == .ladspa ? "LADSPA_PATH" : "DSSI_PATH"))"))
        }
        switch load(path, format: format) {
        case .failure(let why): return .failure(Unavailable("its library \(path) cannot be loaded: \(why.why)"))
        case .success(let plugins):
            if let p = plugins.first(where: { $0.info.uri == "\(format.rawValue):\(library)/\(label)" }) { return .success(p) }
            let labels = plugins.map { String($0.info.uri.split(separator: "/", maxSplits: 1).last ?? "") }
            return .failure(Unavailable("\(path) holds no plugin labelled '\(label)' (its labels: "
                            + (labels.isEmpty ? "none" : labels.prefix(12).joined(separator: ", ")) + ")"))
        }
    }

    /// Every plugin of `format` in its folders (a library that cannot be loaded is skipped; `failures` says why).
    func all(_ format: Format) -> [Plugin] {
        if let done = scanned[format] { return done }
        var seen = Set<String>(), out: [Plugin] = []
        for folder in folders(format) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in names.sorted() where name.hasSuffix(".so") && !seen.contains(name) {
                seen.insert(name)
                if case .success(let plugins) = load("\(folder)/\(name)", format: format) { out += plugins }
            }
        }
        scanned[format] = out
        return out
    }

    /// Libraries that could not be loaded while listing, with the loader's words.
    var failures: [String: String] { failed }

    /// One instance per DSSI plugin, made to ask it things (its programs, whether it takes a configure key) where no
    /// chain runs it (`tandem plugins`, `preset check`, a session whose rack is isolated), and kept for the process's
    /// life: fluidsynth-dssi crashes when an instance is made after its only one was freed. A chain asks its own
    /// instances instead (the same plugin's run crashes beside an instance never activated).
    private var probes: [String: UnsafeMutableRawPointer] = [:]

    func probe(_ p: Plugin, midiURID: UInt32) -> UnsafeMutableRawPointer? {
        if let made = probes[p.info.uri] { return made }
        guard let made = ladspahost_instantiate(p.library, p.index, 48000, midiURID, 8192) else { return nil }
        // Every port on a buffer of its own (never read): a synth that renders all its instances at once
        // (fluidsynth-dssi's run_multiple_synths) then writes into these, not through a null pointer.
        for port in p.info.ports where port.kind == .audio || port.kind == .control {
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: port.kind == .audio ? 8192 : 1)
            buffer.initialize(repeating: port.defaultValue ?? 0, count: port.kind == .audio ? 8192 : 1)
            ladspahost_connect(made, UInt32(port.index), buffer)
        }
        probes[p.info.uri] = made
        return made
    }

    private var loadedPlugins: [String: [Plugin]] = [:]

    private func load(_ path: String, format: Format) -> Result<[Plugin], Unavailable> {
        if let done = loadedPlugins[path] { return .success(done) }
        if let why = failed[path] { return .failure(Unavailable(why)) }
        var error = [CChar](repeating: 0, count: 512)
        guard let lib = ladspahost_open(path, &error, error.count) else {
            let why = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            failed[path] = why
            return .failure(Unavailable(why))
        }
        opened[path] = lib
        let isDSSI = ladspahost_is_dssi(lib) != 0
        // A DSSI library in a LADSPA folder (or the other way round) is listed under the folder's format only when
        // it fits: a DSSI library's plugins are dssi: names.
        let actual: Format = isDSSI ? .dssi : .ladspa
        guard actual == format || (format == .ladspa && isDSSI) else {
            loadedPlugins[path] = []
            return .success([])
        }
        let libraryName = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        var plugins: [Plugin] = []
        var index: UInt = 0
        while let d = ladspahost_descriptor(lib, index) {
            let takesMIDI = ladspahost_takes_midi(lib, index) != 0
            let info = Self.describe(d.pointee, uri: "\(format.rawValue):\(libraryName)/\(Self.text(d.pointee.Label))",
                                     library: path, format: format, takesMIDI: takesMIDI)
            plugins.append(Plugin(format: format, library: lib, libraryPath: path, index: index,
                                  uniqueID: UInt(d.pointee.UniqueID), takesMIDI: takesMIDI, info: info))
            index += 1
        }
        loadedPlugins[path] = plugins
        return .success(plugins)
    }

    static func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }

    /// A port's symbol made from its name: lower case, every run of other characters one `_`, trimmed
    /// ("Cutoff Frequency (Hz)" → `cutoff_frequency_hz`, "31 Hz" → `31_hz`); "port" and its index when nothing is
    /// left, or only digits (a number given for a control is always its port index). A second port of the same
    /// symbol gets `_2`.
    static func symbol(_ name: String, index: Int) -> String {
        var out = "", gap = false
        for c in name.lowercased().unicodeScalars {
            if ("a"..."z").contains(c) || ("0"..."9").contains(c) {
                if gap && !out.isEmpty { out += "_" }
                out.unicodeScalars.append(c)
                gap = false
            } else {
                gap = true
            }
        }
        return out.isEmpty || out.allSatisfy(\.isNumber) ? "port\(index)" : out
    }

    /// A unit a port's name states in its last parentheses or brackets ("Gain (dB)", "Delay [ms]"), as LV2's units
    /// vocabulary names it, with its symbol.
    static func unit(in name: String) -> (String, String)? {
        guard let open = name.lastIndex(where: { $0 == "(" || $0 == "[" }) else { return nil }
        let inside = name[name.index(after: open)...].prefix { $0 != ")" && $0 != "]" }
            .trimmingCharacters(in: .whitespaces)
        let known: [String: (String, String)] = [
            "db": ("db", "dB"), "hz": ("hz", "Hz"), "khz": ("khz", "kHz"), "ms": ("ms", "ms"), "s": ("s", "s"),
            "%": ("pc", "%"), "cents": ("cent", "ct"), "cent": ("cent", "ct"), "semitones": ("semitone12TET", "semi"),
            "bpm": ("bpm", "BPM"), "degrees": ("degree", "°"), "deg": ("degree", "°"), "octaves": ("oct", "oct"),
            "seconds": ("s", "s"), "msec": ("ms", "ms"), "dbfs": ("db", "dB"),
        ]
        return known[inside.lowercased()]
    }

    /// The plugin described as `tandem plugins` and a chain see it: LADSPA port hints as LV2 port properties.
    static func describe(_ d: LADSPA_Descriptor, uri: String, library: String, format: Format,
                         takesMIDI: Bool) -> PluginInfo {
        var ports: [PluginPortInfo] = []
        var used = Set<String>()
        for i in 0..<Int(d.PortCount) {
            let pd = d.PortDescriptors[i]
            let name = text(d.PortNames[i])
            var symbol = Self.symbol(name, index: i)
            var k = 2
            while used.contains(symbol) {
                symbol = "\(Self.symbol(name, index: i))_\(k)"
                k += 1
            }
            used.insert(symbol)
            let isInput = pd & LADSPA_PortDescriptor(LADSPA_PORT_INPUT) != 0
            let kind: PluginPortKind = pd & LADSPA_PortDescriptor(LADSPA_PORT_AUDIO) != 0 ? .audio
                : pd & LADSPA_PortDescriptor(LADSPA_PORT_CONTROL) != 0 ? .control : .other
            var port = PluginPortInfo(index: i, symbol: symbol, name: name, kind: kind, isInput: isInput,
                                      defaultValue: nil, minimum: nil, maximum: nil,
                                      reportsLatency: !isInput && kind == .control && symbol == "latency",
                                      isToggle: false, isInteger: false, isOptional: false)
            if kind == .control {
                Self.applyHints(d.PortRangeHints[i], to: &port)
                if let (unit, unitSymbol) = Self.unit(in: name) {
                    port.unit = unit
                    port.unitSymbol = unitSymbol
                }
            }
            ports.append(port)
        }
        if takesMIDI {
            var midi = PluginPortInfo(index: Int(d.PortCount), symbol: "midi_in", name: "MIDI in", kind: .atom,
                                      isInput: true, defaultValue: nil, minimum: nil, maximum: nil,
                                      reportsLatency: false, isToggle: false, isInteger: false, isOptional: true)
            midi.supportsMIDI = true
            ports.append(midi)
        }
        var info = PluginInfo(uri: uri, name: text(d.Name), className: takesMIDI ? "Instrument" : nil,
                              author: text(d.Maker), bundle: library, ports: ports, requiredFeatures: [],
                              optionalFeatures: [], extensionData: [], presets: [], missingFeatures: [])
        info.format = format.rawValue
        info.uniqueID = Int(d.UniqueID)
        return info
    }

    /// LADSPA's range hints as a port's range, default, and properties (the SDK's ladspa.h says how each is meant).
    static func applyHints(_ r: LADSPA_PortRangeHint, to port: inout PluginPortInfo) {
        let h = Int32(r.HintDescriptor)
        func has(_ flag: Int32) -> Bool { h & flag != 0 }
        let below = has(LADSPA_HINT_BOUNDED_BELOW), above = has(LADSPA_HINT_BOUNDED_ABOVE)
        var lo: Float? = below ? r.LowerBound : nil
        var hi: Float? = above ? r.UpperBound : nil
        port.isToggle = has(LADSPA_HINT_TOGGLED)
        port.isInteger = has(LADSPA_HINT_INTEGER)
        port.isLogarithmic = has(LADSPA_HINT_LOGARITHMIC)
        port.scalesWithRate = has(LADSPA_HINT_SAMPLE_RATE)
        if port.isToggle {
            lo = 0
            hi = 1
        }
        if let l = lo, let u = hi, l > u { (lo, hi) = (u, l) }
        port.minimum = lo
        port.maximum = hi
        let log = port.isLogarithmic && (lo ?? 0) > 0 && (hi ?? 0) > 0
        func between(_ t: Float) -> Float? {
            guard let l = lo, let u = hi else { return lo ?? hi }
            return log ? exp(Foundation.log(l) * (1 - t) + Foundation.log(u) * t) : l * (1 - t) + u * t
        }
        var value: Float?
        switch h & LADSPA_HINT_DEFAULT_MASK {
        case LADSPA_HINT_DEFAULT_MINIMUM: value = lo
        case LADSPA_HINT_DEFAULT_LOW: value = between(0.25)
        case LADSPA_HINT_DEFAULT_MIDDLE: value = between(0.5)
        case LADSPA_HINT_DEFAULT_HIGH: value = between(0.75)
        case LADSPA_HINT_DEFAULT_MAXIMUM: value = hi
        case LADSPA_HINT_DEFAULT_0: value = 0
        case LADSPA_HINT_DEFAULT_1: value = 1
        case LADSPA_HINT_DEFAULT_100: value = 100
        case LADSPA_HINT_DEFAULT_440: value = 440
        default: value = nil
        }
        // No default hint: the lower bound, else 0 within the range (what applyplugin's users must give anyway).
        var v = value ?? lo ?? min(max(0, lo ?? 0), hi ?? 0)
        if !v.isFinite { v = 0 }
        if port.isInteger { v = v.rounded() }
        port.defaultValue = v
    }
}
