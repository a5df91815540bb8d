import Foundation
import Presets

// Bypass per plugin, and the chain's dry/wet mix and output gain: set on the control thread, taken by the process
// thread at its next cycle, where each change is ramped over that one period (see `ChainState.runStage` and
// `ChainState.mix`).

extension PluginChain {
    /// The range of the output gain in dB (as the player's gain).
    public static let gainRange = Limits.gainDB

    static func clampMix(_ v: Double) -> Double { v.isFinite ? min(1, max(0, v)) : 1 }
    static func clampGain(_ v: Double) -> Double {
        v.isFinite ? min(gainRange.upperBound, max(gainRange.lowerBound, v)) : 0
    }

    /// Hands the wanted mix and gain to the process thread.
    func storeSettings() {
        let gain = Float(pow(10, gainValue / 20))
        state.pointee.settings.store(ChainState.Setting.mix.rawValue, Int(Float(mixValue).bitPattern))
        state.pointee.settings.store(ChainState.Setting.gain.rawValue, Int(gain.bitPattern))
    }

    /// The dry/wet mix, 0 (only the chain's input, delayed by the chain's latency) to 1 (only its output; the
    /// default). Set: clamped to 0...1, ramped over the next cycle.
    public var mix: Double {
        get { mixValue }
        set {
            mixValue = Self.clampMix(newValue)
            storeSettings()
            dirty = true
        }
    }

    /// The gain after the mix, in dB (`gainRange`). Set: clamped, ramped over the next cycle.
    public var gainDB: Double {
        get { gainValue }
        set {
            gainValue = Self.clampGain(newValue)
            storeSettings()
            dirty = true
        }
    }

    /// Bypasses a plugin (or brings it back) from the next cycle: through its lv2:enabled port when it has one,
    /// else by the host's crossfade over one period to its input delayed by its latency. The plugin keeps running
    /// while bypassed, so coming back is as smooth as leaving.
    public func setBypass(_ plugin: String, _ on: Bool) throws(PluginError) {
        let s = try namedStage(plugin)
        s.rt.bypass.store(on ? 1 : 0)
        dirty = true
    }

    /// Whether a plugin is bypassed (as last set).
    public func isBypassed(_ plugin: String) throws(PluginError) -> Bool {
        try namedStage(plugin).rt.bypass.load() != 0
    }

    /// Whether the plugin bypasses itself (it has an lv2:enabled port) rather than by the host's crossfade.
    public func bypassesItself(_ plugin: String) throws(PluginError) -> Bool {
        try namedStage(plugin).rt.enabledControl >= 0
    }

    /// Cycles in which a plugin promised a fixed block length was passed over because the cycle had another
    /// length (the period changed and the chain was not rebuilt yet).
    public var blockMismatches: Int { state.pointee.counts.load(ChainState.Count.blockMismatches.rawValue) }

    /// Cycles the chain has run.
    public var cycles: Int { state.pointee.counts.load(ChainState.Count.cycles.rawValue) }

    func namedStage(_ name: String) throws(PluginError) -> Stage {
        guard let s = stages.first(where: { $0.spec.name == name }) else {
            let known = specs.map(\.name)
            throw PluginError(.unknownPlugin, plugin: name, "no plugin named '\(name)' in the \(label) chain"
                              + (known.isEmpty ? " (it is empty)" : " (plugins: \(known.joined(separator: ", ")))"))
        }
        return s
    }
}
