import Foundation
import Presets
import Realtime

/// One change a chain's process thread applied, at the start of the cycle it names (`clock`: that cycle's place on
/// its engine's clock, a JACK frame time live, a render's frame offline). Read by the control thread from
/// `PluginChain.drainChanges`, in the order the cycles applied them: what a take's control log and a render's report
/// say, exact to the cycle.
public struct ChainChange: Sendable, Equatable {
    public enum What: Sendable, Equatable {
        /// A control of a plugin took this value.
        case control(plugin: String, symbol: String, value: Float)
        case bypass(plugin: String, on: Bool)
        /// The chain's dry/wet mix, and its output gain (in dB).
        case mix(Double)
        case gain(dB: Double)
        /// The chain's first cycle (it was swapped in: an LV2 preset loaded, the chain rebuilt).
        case started
    }
    public var clock: Int
    public var what: What
    /// Frames the change glides or crossfades over (0: at once; a bypass or mix or gain: over its cycle).
    public var rampFrames: Int

    public init(clock: Int, what: What, rampFrames: Int = 0) {
        self.clock = clock
        self.what = what
        self.rampFrames = rampFrames
    }
}

extension PluginChain {
    /// The changes the process thread applied since the last call (see `ChainChange`). Control thread (the ring's
    /// one consumer).
    public func drainChanges() -> [ChainChange] {
        var out: [ChainChange] = []
        let c = state.pointee
        var ramp = 0
        while let m = c.changes.pop() {
            guard let kind = ChainState.Change(rawValue: m.kind) else { continue }
            let clock = Int(m.a)
            let bits = UInt32(truncatingIfNeeded: m.c)
            if kind == .ramp {
                ramp = Int(m.c)
                continue
            }
            let before = out.count, rampFrames = ramp
            ramp = 0
            defer { if out.count > before { out[before].rampFrames = rampFrames } }
            switch kind {
            case .control:
                let stage = Int(m.b >> 32), k = Int(m.b & 0xFFFF_FFFF)
                guard stages.indices.contains(stage), stages[stage].controls.indices.contains(k) else { continue }
                out.append(ChainChange(clock: clock, what: .control(plugin: stages[stage].spec.name,
                                                                     symbol: stages[stage].controls[k].symbol,
                                                                     value: Float(bitPattern: bits))))
            case .bypass:
                guard stages.indices.contains(Int(m.b)) else { continue }
                out.append(ChainChange(clock: clock, what: .bypass(plugin: stages[Int(m.b)].spec.name, on: m.c != 0)))
            case .mix:
                out.append(ChainChange(clock: clock, what: .mix(Limits.double(Float(bitPattern: bits)))))
            case .gain:
                out.append(ChainChange(clock: clock, what: .gain(dB: Self.decibels(Float(bitPattern: bits)))))
            case .started:
                out.append(ChainChange(clock: clock, what: .started))
            case .ramp:
                break
            }
        }
        return out
    }

    /// The gain `g` (a factor, as the process thread holds it) in dB: the shortest decimal that sets the same 32-bit
    /// factor again (-3, not the -3.0000002493010487 that 20·log10 of the rounded factor gives), so a log or a
    /// report reads as it was set and a render that applies it gets the same gain to the bit.
    static func decibels(_ g: Float) -> Double {
        guard g > 0 else { return gainRange.lowerBound }
        let exact = 20 * log10(Double(g))
        for digits in 1...16 {
            if let d = Double(String(format: "%.\(digits)g", exact)), Float(pow(10, d / 20)) == g { return d }
        }
        return exact
    }

    /// Changes the process thread could not note because the last ones had not been read (the ring was full).
    public var changesDropped: Int { state.pointee.counts.load(ChainState.Count.changesDropped.rawValue) }

    /// The values the chain holds now count as applied: only what changes later is noted. Building calls it; a
    /// caller that sets the values a chain must start from (a render of a take: the values the take started with,
    /// over the saved state) calls it again before the chain runs. Control thread.
    public func markApplied() {
        let c = state.pointee
        for s in stages {
            for k in 0..<s.controls.count { s.rt.seen[k] = s.rt.controls.load(k) }
            s.rt.seen[s.controls.count] = s.rt.bypass.load()
        }
        c.seenSettings[0] = c.settings.load(ChainState.Setting.mix.rawValue)
        c.seenSettings[1] = c.settings.load(ChainState.Setting.gain.rawValue)
    }
}
