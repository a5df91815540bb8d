import Foundation
import Presets

// Bypass per plugin, and the chain's dry/wet mix and output gain: set on the control thread, taken by the process
// thread at its next cycle, where each change is ramped over that one period (see `ChainState.runStage` and
// `ChainState.mix`).

extension PluginChain {
    /// The range of the output gain in dB (as the player's gain).
    public static let gainRange = Limits.gainDB

    /// The frames a glide of `ms` milliseconds takes at `sampleRate` (nothing for NaN, negative or none; at most
    /// the longest ramp a scene may ask for).
    public static func rampFrames(ms: Double?, sampleRate: Int) -> Int {
        guard let ms, ms.isFinite, ms > 0 else { return 0 }
        return Int((min(ms, Scene.rampRange.upperBound) * Double(sampleRate) / 1000).rounded())
    }

    /// The milliseconds of a glide of `frames` (nil for none), written so `rampFrames` gives the frames back.
    public static func rampMS(frames: Int, sampleRate: Int) -> Double? {
        guard frames > 0, sampleRate > 0 else { return nil }
        return Double(frames) * 1000 / Double(sampleRate)
    }

    static func clampMix(_ v: Double) -> Double { v.isFinite ? min(1, max(0, v)) : 1 }
    static func clampGain(_ v: Double) -> Double {
        v.isFinite ? min(gainRange.upperBound, max(gainRange.lowerBound, v)) : 0
    }

    /// Hands the wanted mix and gain to the process thread. `mixRamp`, `gainRamp`: frames to glide over (0: one
    /// cycle), the gain in equal steps of dB.
    func storeSettings(mixRamp: Int = 0, gainRamp: Int = 0) {
        state.pointee.settings.store(ChainState.Setting.mixRamp.rawValue, max(0, mixRamp))
        state.pointee.settings.store(ChainState.Setting.gainRamp.rawValue, max(0, gainRamp))
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

    /// Sets the mix (clamped to 0...1) gliding over `rampFrames` (0: over the next cycle).
    public func setMix(_ value: Double, rampFrames: Int) {
        mixValue = Self.clampMix(value)
        storeSettings(mixRamp: rampFrames)
        dirty = true
    }

    /// Sets the output gain in dB (clamped) gliding over `rampFrames` in equal steps of dB (0: over the next cycle).
    public func setGain(dB value: Double, rampFrames: Int) {
        gainValue = Self.clampGain(value)
        storeSettings(gainRamp: rampFrames)
        dirty = true
    }

    /// Bypasses a plugin (or brings it back) from the next cycle: through its lv2:enabled port when it has one,
    /// else by the host's crossfade to its input delayed by its latency: over one period (linear), or over
    /// `rampFrames` with equal-power gains. The plugin keeps running while bypassed, so coming back is as smooth as
    /// leaving.
    public func setBypass(_ plugin: String, _ on: Bool, rampFrames: Int = 0) throws(PluginError) {
        let s = try namedStage(plugin)
        s.rt.ramps.store(s.controls.count, max(0, rampFrames))
        s.rt.bypass.store(on ? 1 : 0)
        dirty = true
    }

    /// Until a cycle that starts at `clock` (an engine's frame time), the chain takes no new control, bypass, mix or
    /// gain value: values written to several chains after this, before that cycle, all start in it. A hold more
    /// than `ChainState.holdLimit` frames ahead of a cycle is dropped as stale. nil: no hold.
    public func hold(until clock: UInt32?) {
        state.pointee.settings.store(ChainState.Setting.hold.rawValue, clock.map { 1 << 32 | Int($0) } ?? 0)
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
