import CLilv
import Foundation
import LV2Host
import Presets

/// What `tandem status` and the control protocol show of one plugin.
public struct PluginStatus: Sendable, Codable, Equatable {
    public var name: String
    public var uri: String
    public var controls: [Control]
    /// Output control ports (meters, gain reduction, latency), as the plugin last wrote them.
    public var outputs: [Control]
    public var instances: Int
    public var latencyFrames: Int
    /// Requests the plugin's worker handled, and requests or responses dropped because a queue was full.
    public var workerRequests: Int?
    public var workerDropped: Int?
    /// Bypassed (see `PluginChain.setBypass`).
    public var bypassed: Bool = false
    /// How the plugin sits on the path: instances, channels before and after, side inputs (chain input names).
    public var channelsIn: Int?
    public var channelsOut: Int?
    public var sideInputs: [String]?
    /// What its cycles cost (see `StageTiming`).
    public var timing: StageTiming?

    public struct Control: Sendable, Codable, Equatable {
        public var symbol: String
        public var value: Float
    }
}

extension PluginChain {
    private func stage(_ name: String) throws(PluginError) -> Stage { try namedStage(name) }

    /// Sets a control by symbol (clamped to the port's range), effective from the next process cycle. Returns the
    /// value set. `rampFrames` above 0: a continuous control glides there over that many frames in its own scale
    /// (logarithmically for a frequency), a discrete one (toggle, integer, enumeration) switches under a crossfade of
    /// the plugin's output with its input (see `ChainState.takeControls`).
    @discardableResult
    public func set(_ plugin: String, _ symbol: String, _ value: Double, clamp: Bool = false,
                    rampFrames: Int = 0) throws(PluginError) -> Float {
        let s = try stage(plugin)
        let v = try checkedValue(s, symbol, value, clamp: clamp)
        guard let index = s.controlIndex(symbol) else {   // checkedValue has refused unknown symbols already
            throw PluginError(.unknownControl, plugin: plugin, "no control '\(symbol)'")
        }
        s.rt.ramps.store(index, max(0, rampFrames))
        s.rt.controls.store(index, Int(v.bitPattern))
        dirty = true
        return v
    }

    /// The number `text` stands for on a control: in its unit ("-7.5 dB", "1.2 kHz") or one of its labels (see
    /// `ControlUnits`).
    public func number(_ plugin: String, _ symbol: String, from text: String) throws(PluginError) -> Double {
        let s = try stage(plugin)
        guard let k = s.controlIndex(symbol) else { throw unknownControl(s, symbol) }
        switch ControlUnits.parse(text, port: s.controls[k]) {
        case .success(let v): return v
        case .failure(let e): throw PluginError(e.code, plugin: plugin, e.message)
        }
    }

    /// A control's value as a person reads it (its unit, or its label).
    public func formatted(_ plugin: String, _ symbol: String, _ value: Float) throws(PluginError) -> String {
        let s = try stage(plugin)
        guard let k = s.controlIndex(symbol) else { throw unknownControl(s, symbol) }
        return ControlUnits.format(value, port: s.controls[k])
    }

    /// How a control moves when it glides (see `ControlScale`): "linear", "logarithmic" or "discrete".
    public func scale(_ plugin: String, _ symbol: String) throws(PluginError) -> String {
        let s = try stage(plugin)
        guard let k = s.controlIndex(symbol) else { throw unknownControl(s, symbol) }
        return Self.scale(of: s.controls[k])
    }

    /// How a control port moves when it glides: "linear", "logarithmic" or "discrete" (see `ControlScale`).
    public static func scale(of port: PluginPortInfo) -> String {
        switch ControlScale.of(port) {
        case .linear: return "linear"
        case .logarithmic: return "logarithmic"
        case .discrete: return "discrete"
        }
    }

    /// Whether `value` may be set on the control (the same check and words as `set`, nothing set).
    public func check(_ plugin: String, _ symbol: String, _ value: Double) throws(PluginError) {
        _ = try checkedValue(try stage(plugin), symbol, value)
    }

    /// The current target of a control.
    public func value(_ plugin: String, _ symbol: String) throws(PluginError) -> Float {
        let s = try stage(plugin)
        guard let k = s.controlIndex(symbol) else { throw unknownControl(s, symbol) }
        return Float(bitPattern: UInt32(truncatingIfNeeded: s.rt.controls.load(k)))
    }

    func unknownControl(_ s: Stage, _ symbol: String) -> PluginError {
        PluginError(.unknownControl, plugin: s.spec.name, "<\(s.spec.uri)> has no control '\(symbol)' (controls: "
                    + (s.controls.isEmpty ? "none" : s.controls.map(\.symbol).joined(separator: ", ")) + ")")
    }

    /// The value a control would take: an error for an unknown symbol, a non-number, or (unless `clamp`: a control
    /// map's scaled value, which rounding may take a hair past an end) a value outside the control's range, in the
    /// words `preset check` uses for the same value in a preset.
    func checkedValue(_ s: Stage, _ symbol: String, _ value: Double, clamp: Bool = false) throws(PluginError) -> Float {
        guard let k = s.controlIndex(symbol) else { throw unknownControl(s, symbol) }
        guard value.isFinite else { throw PluginError(.badValue, plugin: s.spec.name, "control '\(symbol)': \(value) is not a number") }
        let port = s.controls[k]
        let lo = Double(port.minimum ?? -.infinity), hi = Double(port.maximum ?? .infinity)
        if !clamp && !(value >= lo && value <= hi) {
            // A value that came as a 32-bit float (OSC) is shown as one (1e+30, not 1.0000000150474662e+30).
            let shown = Double(Float(value)) == value ? "\(Float(value))" : "\(value)"
            throw PluginError(.badValue, plugin: s.spec.name, "control '\(symbol)' = \(shown) is outside its range"
                              + " \(port.minimum ?? -.infinity) to \(port.maximum ?? .infinity)")
        }
        if !clamp, let why = port.kindProblem(value) {
            throw PluginError(.badValue, plugin: s.spec.name, "control '\(symbol)' = \(Limits.number(value)) \(why)")
        }
        var v = Float(min(max(port.snapped(value), lo), hi))
        if !v.isFinite { v = value < 0 ? -Float.greatestFiniteMagnitude : .greatestFiniteMagnitude }
        return v
    }

    /// Total latency of the chain in frames: the sum of what each plugin reports.
    public var latency: Int { stages.reduce(0) { $0 + $1.reportedLatency } }

    /// A stage's timing, with its mean as a share of this chain's period.
    func timing(_ s: Stage) -> StageTiming {
        var t = s.timing
        if period > 0 && sampleRate > 0 { t.meanShare = t.meanMicros / (Double(period) / Double(sampleRate) * 1e6) }
        return t
    }

    /// A plugin's input controls as this chain runs them (ranges and defaults at its rate), nil for no such plugin.
    public func controls(of plugin: String) -> [PluginPortInfo]? {
        stages.first { $0.spec.name == plugin }?.controls
    }

    public var status: [PluginStatus] {
        stages.map { s in
            let controls = s.controls.enumerated().map { k, p in
                PluginStatus.Control(symbol: p.symbol, value: Float(bitPattern: UInt32(truncatingIfNeeded: s.rt.controls.load(k))))
            }
            let outputs = s.outputs.enumerated().map { k, p in
                PluginStatus.Control(symbol: p.symbol, value: Float(bitPattern: UInt32(truncatingIfNeeded: s.rt.outputs.load(k))))
            }
            return PluginStatus(
                name: s.spec.name, uri: s.spec.uri, controls: controls, outputs: outputs, instances: s.instances.count,
                latencyFrames: s.reportedLatency,
                workerRequests: s.workers.isEmpty ? nil : s.workers.reduce(0) { $0 + Int(lv2host_worker_handled($1)) },
                workerDropped: s.workers.isEmpty ? nil : s.workers.reduce(0) { $0 + Int(lv2host_worker_dropped($1)) },
                bypassed: s.rt.bypass.load() != 0, channelsIn: s.layout.widthIn, channelsOut: s.layout.widthOut,
                sideInputs: sideInputs.filter { $0.plugin == s.spec.name }.map(\.name), timing: timing(s))
        }
    }

    /// The chain as plugin specs with the current control values (what a preset would need to say to get here).
    public var currentSpecs: [PluginSpec] {
        status.enumerated().map { k, st in
            var spec = specs[k]
            spec.controls = st.controls.map { .init(symbol: $0.symbol, value: Limits.double($0.value)) }
            spec.bypass = st.bypassed
            return spec
        }
    }
}
