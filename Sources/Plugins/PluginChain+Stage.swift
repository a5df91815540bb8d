import CLilv
import LADSPAHost
import LV2Host
import Presets

extension PluginChain {
    /// One plugin of the chain and everything allocated for it.
    final class Stage {
        let spec: PluginSpec
        let info: PluginInfo
        let source: HostedPlugin
        let layout: ChainLayout.Stage
        var instances: [UnsafeMutablePointer<LilvInstance>] = []
        var workers: [OpaquePointer] = []
        /// Features each instance was created with (for state restore).
        var features: [UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>] = []
        let controls: [PluginPortInfo]
        let outputs: [PluginPortInfo]
        var rt: StageState!
        /// A DSSI plugin's configure keys as given (saved with its state).
        var configured: [String: String] = [:]
        /// The buffers its CV outputs write, per instance in port order (see `PluginChain.sideOutputs`).
        var cvOutputs: [UnsafeMutablePointer<Float>] = []

        init(spec: PluginSpec, info: PluginInfo, source: HostedPlugin, layout: ChainLayout.Stage, sampleRate: Int) {
            self.spec = spec
            self.info = info
            self.source = source
            self.layout = layout
            controls = info.ports.filter { $0.kind == .control && $0.isInput }.map { $0.at(sampleRate: sampleRate) }
            outputs = info.ports.filter { $0.kind == .control && !$0.isInput }
        }

        /// lilv's plugin, for an LV2 plugin.
        var plugin: OpaquePointer? {
            if case .lv2(let p) = source { return p }
            return nil
        }

        /// The control with this symbol (or, for a LADSPA or DSSI plugin, this port index).
        func controlIndex(_ symbol: String) -> Int? {
            controls.firstIndex { $0.symbol == symbol }
                ?? (plugin == nil ? Int(symbol).flatMap { n in controls.firstIndex { $0.index == n } } : nil)
        }

        /// Frames of latency the plugin last reported (0 without a latency port, or for a nonsense value).
        var reportedLatency: Int {
            guard let k = outputs.firstIndex(where: \.reportsLatency) else { return 0 }
            let v = Float(bitPattern: UInt32(truncatingIfNeeded: rt.outputs.load(k)))
            return v.isFinite && v > 0 && v < 1e9 ? Int(v.rounded()) : 0   // a plugin's nonsense cannot trap the host
        }

        /// What the stage's cycles have cost since the chain was built.
        var timing: StageTiming {
            typealias Cell = StageTiming.Cell
            let cycles = rt.timing.load(Cell.cycles.rawValue)
            return StageTiming(cycles: cycles,
                               meanMicros: cycles > 0 ? Double(rt.timing.load(Cell.nanoseconds.rawValue)) / Double(cycles) / 1000 : 0,
                               maxMicros: Double(rt.timing.load(Cell.maximum.rawValue)) / 1000,
                               overBudget: rt.timing.load(Cell.over.rawValue))
        }

        /// Frees the instances (never activated or no longer run). Call inside `host.locked`.
        func free(activated: Bool) {
            if activated { for inst in instances { lilv_instance_deactivate(inst) } }
            for w in workers { lv2host_worker_free(w) }   // the thread stops before the instance goes
            for inst in instances {
                if plugin == nil { ladspahost_free(inst) } else { lilv_instance_free(inst) }
            }
            instances = []
            workers = []
        }
    }
}
