import CLilv
import Foundation
import LV2Host
import Presets

extension PluginChain {
    /// What went wrong when lilv gave no instance: the library could not be loaded (the dynamic loader's own
    /// words: an undefined symbol, a missing dependency), it holds no descriptor for the URI, or the plugin's
    /// instantiate returned nothing. Asked only after a failure, under the host's lock (the library is opened
    /// again here, which the loader answers from what it already has or with the same error).
    static func whyNoInstance(_ plugin: OpaquePointer, uri: String) -> String {
        guard let libraryURI = lilv_plugin_get_library_uri(plugin),
              let raw = lilv_file_uri_parse(lilv_node_as_uri(libraryURI), nil) else {
            return "its library's location is not known"
        }
        let path = String(cString: raw)
        lilv_free(raw)
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "unknown reason"
            return "its library \(path) cannot be loaded: \(why)"
        }
        defer { dlclose(handle) }
        typealias Descriptor = @convention(c) (UInt32) -> UnsafePointer<LV2_Descriptor>?
        guard let symbol = dlsym(handle, "lv2_descriptor") else {
            return "its library \(path) has no lv2_descriptor function"
        }
        let descriptor = unsafeBitCast(symbol, to: Descriptor.self)
        var index: UInt32 = 0
        while let d = descriptor(index), index < 4096 {
            if String(cString: d.pointee.URI) == uri {
                return "the plugin's instantiate refused (its own messages, if any, are above)"
            }
            index += 1
        }
        return "its library \(path) holds no plugin <\(uri)> (\(index) other(s))"
    }

    /// Why an instrument (a plugin that sounds from MIDI and takes no audio) cannot be in a chain the engine feeds
    /// no MIDI (the recorder's and the player's): it would replace the path with silence. Nil for any other plugin,
    /// or when the chain gets MIDI (a rack's).
    static func silentInstrument(_ spec: PluginSpec, _ info: PluginInfo, midi: Bool) -> PluginError? {
        guard !midi, info.ports.contains(where: { $0.kind == .atom && $0.isInput && $0.supportsMIDI }),
              !info.ports.contains(where: { $0.kind == .audio && $0.isInput }) else { return nil }
        return PluginError(.unsupportedPort, plugin: spec.name, "<\(spec.uri)> is an instrument (it sounds from MIDI"
                           + " and takes no audio), and this chain gets no MIDI: only a rack feeds its plugins MIDI"
                           + " (put it in a [[rack]])")
    }

    /// Why a plugin cannot run here at all (a feature Tandem lacks or cannot promise at this period, a port type
    /// Tandem does not host), or nil. `period`: the fixed block the chain can promise, 0 for none, nil when not
    /// known yet (a preset check). Whether it fits the channels is `ChainLayout`'s question. Shared by building and
    /// by `PluginHost.check`.
    static func unusable(_ spec: PluginSpec, _ info: PluginInfo, period: Int?) -> PluginError? {
        if !info.missingFeatures.isEmpty {
            return PluginError(.missingFeature, plugin: spec.name, "<\(spec.uri)> requires the LV2 feature"
                               + (info.missingFeatures.count > 1 ? "s " : " ")
                               + info.missingFeatures.map { "<\($0)>" }.joined(separator: ", ")
                               + ", which Tandem does not provide")
        }
        if let period {
            if info.requiredFeatures.contains(LV2.fixedBlockLength) && period == 0 {
                return PluginError(.missingFeature, plugin: spec.name, "<\(spec.uri)> requires a fixed block length"
                                   + " (buf-size:fixedBlockLength), which this engine cannot promise")
            }
            if info.requiredFeatures.contains(LV2.powerOf2BlockLength) && (period <= 0 || period & (period - 1) != 0) {
                return PluginError(.missingFeature, plugin: spec.name, "<\(spec.uri)> requires a power-of-two block"
                                   + " length (buf-size:powerOf2BlockLength); the period is \(period) frames")
            }
        }
        if let odd = info.ports.first(where: { $0.kind == .other && !$0.isOptional }) {
            return PluginError(.unsupportedPort, plugin: spec.name,
                               "port '\(odd.symbol)' of <\(spec.uri)> has a type Tandem does not host")
        }
        return nil
    }
}
