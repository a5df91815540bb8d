import CLilv
import Foundation
import LV2Host
import Logging
import Presets
import Realtime

/// An LV2 insert chain for one engine: the plugins of a preset, instantiated for a channel count, with their
/// controls, workers and state. Building, control and state run on the control thread; `state` is what the process
/// thread runs (see `ChainState.run`).
///
/// Channel counts adapt: a plugin with k audio inputs and k outputs on a path of n channels (n a multiple of k)
/// runs n / k instances side by side (a mono plugin on a stereo path runs twice). A plugin that cannot be used
/// (not installed, needs a feature Tandem lacks, fails to instantiate, does not fit the channels) is left out and
/// reported in `problems`; the rest of the chain runs.
///
/// Threads: control thread only (one owner), except `state`, which the process thread reads once installed.
public final class PluginChain: @unchecked Sendable {
    /// The longest block a plugin is ever run with (buf-size:maxBlockLength; equals JACK's largest period we allow).
    public static let maxBlock = Period.maxFrames

    /// The plugins that run, in order (each with a name unique in the chain).
    public var specs: [PluginSpec] { stages.map(\.spec) }
    /// What went wrong while building (plugins left out, controls ignored, presets or state not applied).
    public internal(set) var problems: [PluginError] = []
    /// Set when a control changed since the last `save`.
    public internal(set) var dirty = false
    /// Saved state files restored while building.
    public internal(set) var restoredFrom: [String] = []
    /// What the process thread runs.
    public let state: UnsafeMutablePointer<ChainState>
    public let channels: Int
    public let label: String

    let host: PluginHost
    let sampleRate: Int
    var stages: [Stage] = []
    private var cleanups: [() -> Void] = []
    private let logger: Logger

    /// One plugin of the chain and everything allocated for it.
    final class Stage {
        let spec: PluginSpec
        let info: PluginInfo
        let plugin: OpaquePointer
        var instances: [UnsafeMutablePointer<LilvInstance>] = []
        var workers: [OpaquePointer] = []
        /// Features each instance was created with (for state restore).
        var features: [UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>] = []
        let controls: [PluginPortInfo]
        let outputs: [PluginPortInfo]
        var rt: StageState!

        init(spec: PluginSpec, info: PluginInfo, plugin: OpaquePointer, sampleRate: Int) {
            self.spec = spec
            self.info = info
            self.plugin = plugin
            controls = info.ports.filter { $0.kind == .control && $0.isInput }.map { $0.at(sampleRate: sampleRate) }
            outputs = info.ports.filter { $0.kind == .control && !$0.isInput }
        }

        func controlIndex(_ symbol: String) -> Int? { controls.firstIndex { $0.symbol == symbol } }

        /// Frames of latency the plugin last reported (0 without a latency port, or for a nonsense value).
        var reportedLatency: Int {
            guard let k = outputs.firstIndex(where: \.reportsLatency) else { return 0 }
            let v = Float(bitPattern: UInt32(truncatingIfNeeded: rt.outputs.load(k)))
            return v.isFinite && v > 0 && v < 1e9 ? Int(v.rounded()) : 0   // a plugin's nonsense cannot trap the host
        }
    }

    /// Builds the chain. `savedState`: a folder from `save(to:)`; state saved there for a plugin of the same name and
    /// URI is restored over the preset's values.
    public init(specs: [PluginSpec], channels: Int, sampleRate: Int, period: Int, label: String,
                savedState: String? = nil, host: PluginHost = .shared,
                logger: Logger = Logger(label: "tandem.plugins")) {
        self.host = host
        self.sampleRate = sampleRate
        self.channels = channels
        self.label = label
        self.logger = logger
        state = .allocate(capacity: 1)
        let (options, optionValues) = Self.options(host: host, sampleRate: sampleRate, period: period)
        cleanups.append {
            options.deallocate()
            optionValues.deallocate()
        }
        host.locked {
            for spec in PluginSpec.uniqueNames(specs) {
                do throws(PluginError) {
                    let stage = try build(spec, options: options)
                    applyInitialValues(stage, savedState: savedState)
                    for inst in stage.instances { lilv_instance_activate(inst) }
                    stages.append(stage)
                } catch {
                    problems.append(error)
                }
            }
        }
        let between = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2 * max(1, channels))
        for i in 0..<(2 * max(1, channels)) { (between + i).initialize(to: zeroed(Self.maxBlock)) }
        let stagePointer = UnsafeMutablePointer<StageState>.allocate(capacity: max(1, stages.count))
        for (k, s) in stages.enumerated() { (stagePointer + k).initialize(to: s.rt) }
        state.initialize(to: ChainState(stages: stagePointer, stageCount: stages.count, channels: channels,
                                        between: between))
        cleanups.append { [state] in
            between.deallocate()
            stagePointer.deallocate()
            state.deallocate()
        }
        for p in problems { logger.error("\(p.description)", metadata: ["chain": "\(label)"]) }
    }

    /// Frees everything. Only once the process thread no longer runs this chain (see `ChainHolder`).
    deinit {
        host.locked {
            for s in stages {
                for inst in s.instances { lilv_instance_deactivate(inst) }
                for w in s.workers { lv2host_worker_free(w) }   // the thread stops before the instance goes
                for inst in s.instances { lilv_instance_free(inst) }
            }
        }
        for c in cleanups.reversed() { c() }
    }

    public var isEmpty: Bool { stages.isEmpty }

    // MARK: Building

    private func zeroed(_ count: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: count)
        p.initialize(repeating: 0, count: count)
        cleanups.append { p.deallocate() }
        return p
    }

    private func cString(_ s: String) -> UnsafePointer<CChar> {
        let p = strdup(s)!
        cleanups.append { free(p) }
        return UnsafePointer(p)
    }

    /// The options every instance gets: sample rate, block lengths, atom sequence size.
    private static func options(host: PluginHost, sampleRate: Int, period: Int)
        -> (UnsafeMutablePointer<LV2_Options_Option>, UnsafeMutableRawPointer) {
        let values = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
        values.storeBytes(of: Float(sampleRate), toByteOffset: 0, as: Float.self)
        values.storeBytes(of: Int32(1), toByteOffset: 4, as: Int32.self)
        values.storeBytes(of: Int32(maxBlock), toByteOffset: 8, as: Int32.self)
        values.storeBytes(of: Int32(period), toByteOffset: 12, as: Int32.self)
        values.storeBytes(of: Int32(atomCapacity), toByteOffset: 16, as: Int32.self)
        let float = host.urid(LV2.atomFloat), int = host.urid(LV2.atomInt)
        let entries: [(String, Int, UInt32, UInt32)] = [
            (LV2.sampleRate, 0, 4, float), (LV2.minBlockLength, 4, 4, int), (LV2.maxBlockLength, 8, 4, int),
            (LV2.nominalBlockLength, 12, 4, int), (LV2.sequenceSize, 16, 4, int),
        ]
        let options = UnsafeMutablePointer<LV2_Options_Option>.allocate(capacity: entries.count + 1)
        for (i, e) in entries.enumerated() {
            (options + i).initialize(to: LV2_Options_Option(
                context: LV2_OPTIONS_INSTANCE, subject: 0, key: host.urid(e.0), size: e.2, type: e.3,
                value: UnsafeRawPointer(values + e.1)))
        }
        (options + entries.count).initialize(to: LV2_Options_Option(
            context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil))
        return (options, values)
    }

    static let atomCapacity = 8192

    /// Call inside `host.locked`.
    private func build(_ spec: PluginSpec, options: UnsafeMutablePointer<LV2_Options_Option>) throws(PluginError) -> Stage {
        guard let plugin = host.lilvPlugin(spec.uri) else {
            let near = host.similarLocked(to: spec.uri)
            throw PluginError(.notInstalled, plugin: spec.name, "<\(spec.uri)> is not installed"
                              + (near.isEmpty ? " (see `tandem plugins`)" : " (installed: \(near.joined(separator: ", ")))"))
        }
        let info = host.describe(plugin, presets: false)
        if let e = Self.unusable(spec, info, channels: channels) { throw e }
        let ins = info.audioInputs, outs = info.audioOutputs
        let stage = Stage(spec: spec, info: info, plugin: plugin, sampleRate: sampleRate)
        let instanceCount = channels / ins
        let usesWorker = info.extensionData.contains(LV2.workerInterface)
            || info.requiredFeatures.contains(LV2.workerSchedule) || info.optionalFeatures.contains(LV2.workerSchedule)
        let controls = AtomicCounterArray.allocate(count: max(1, stage.controls.count))
        let outputs = AtomicCounterArray.allocate(count: max(1, stage.outputs.count))
        cleanups.append {
            controls.deallocate()
            outputs.deallocate()
        }
        for (k, port) in stage.controls.enumerated() {
            controls.store(k, Int((port.defaultValue ?? port.minimum ?? 0).bitPattern))
        }
        let instances = UnsafeMutablePointer<InstanceState>.allocate(capacity: instanceCount)
        cleanups.append { instances.deallocate() }
        let sequence = host.urid(LV2.atomSequence), chunk = host.urid(LV2.atomChunk)
        for i in 0..<instanceCount {
            let worker = usesWorker ? lv2host_worker_new(1 << 16) : nil
            let log = lv2host_log_new(host.urids, "\(label)/\(spec.name)")
            cleanups.append { lv2host_log_free(log) }
            var list: [(String, UnsafeMutableRawPointer?)] = [
                (LV2.uridMap, UnsafeMutableRawPointer(host.map)), (LV2.uridUnmap, UnsafeMutableRawPointer(host.unmap)),
                (LV2.options, UnsafeMutableRawPointer(options)), (LV2.boundedBlockLength, nil),
                (LV2.log, log.map { UnsafeMutableRawPointer(lv2host_log_feature($0)) }), (LV2.loadDefaultState, nil),
            ]
            if let worker { list.append((LV2.workerSchedule, UnsafeMutableRawPointer(lv2host_worker_schedule_feature(worker)))) }
            let featureStructs = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: list.count)
            let features = UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>.allocate(capacity: list.count + 1)
            for (k, f) in list.enumerated() {
                (featureStructs + k).initialize(to: LV2_Feature(URI: cString(f.0), data: f.1))
                (features + k).initialize(to: UnsafePointer(featureStructs + k))
            }
            (features + list.count).initialize(to: nil)
            cleanups.append {
                featureStructs.deallocate()
                features.deallocate()
            }
            guard let instance = lilv_plugin_instantiate(plugin, Double(sampleRate), features) else {
                if let worker { lv2host_worker_free(worker) }
                for inst in stage.instances { lilv_instance_free(inst) }
                for w in stage.workers { lv2host_worker_free(w) }
                throw PluginError(.instantiateFailed, plugin: spec.name,
                                  "<\(spec.uri)> failed to instantiate (the plugin's library refused; its own messages,"
                                  + " if any, are above)")
            }
            stage.instances.append(instance)
            stage.features.append(features)
            if let worker {
                stage.workers.append(worker)
                let iface = lilv_instance_get_extension_data(instance, LV2.workerInterface)
                if lv2host_worker_start(worker, lilv_instance_get_handle(instance),
                                        iface?.assumingMemoryBound(to: LV2_Worker_Interface.self)) != 0 {
                    problems.append(PluginError(.worker, plugin: spec.name,
                                                "<\(spec.uri)> asks for a worker but has no worker interface; scheduled work is dropped"))
                }
            }
            instances.advanced(by: i).initialize(to: connectInstance(instance, stage: stage, first: i * ins,
                                                                     worker: worker, sequence: sequence, chunk: chunk))
        }
        stage.rt = StageState(instances: instances, instanceCount: instanceCount, ins: ins, outs: outs,
                              controls: controls, controlCount: stage.controls.count,
                              outputs: outputs, outputCount: stage.outputs.count,
                              latencyOutput: stage.outputs.firstIndex(where: \.reportsLatency) ?? -1)
        return stage
    }

    /// Why a plugin cannot run in a chain of `channels` channels (a feature Tandem lacks, a channel layout that
    /// does not fit, a port type Tandem does not host), or nil. Shared by building and by `PluginHost.check`.
    static func unusable(_ spec: PluginSpec, _ info: PluginInfo, channels: Int) -> PluginError? {
        if !info.missingFeatures.isEmpty {
            return PluginError(.missingFeature, plugin: spec.name, "<\(spec.uri)> requires the LV2 feature"
                               + (info.missingFeatures.count > 1 ? "s " : " ")
                               + info.missingFeatures.map { "<\($0)>" }.joined(separator: ", ")
                               + ", which Tandem does not provide")
        }
        let ins = info.audioInputs, outs = info.audioOutputs
        guard ins > 0, ins == outs, channels % ins == 0 else {
            return PluginError(.channels, plugin: spec.name, "<\(spec.uri)> has \(ins) audio input(s) and \(outs) output(s);"
                               + " on a \(channels)-channel path an insert needs as many outputs as inputs, and a"
                               + " number of inputs that divides \(channels)")
        }
        if let odd = info.ports.first(where: { $0.kind == .other && !$0.isOptional }) {
            return PluginError(.unsupportedPort, plugin: spec.name,
                               "port '\(odd.symbol)' of <\(spec.uri)> has a type Tandem does not host")
        }
        return nil
    }

    /// Connects the ports that never move (controls, atoms, CV) and returns the instance's process-thread view.
    private func connectInstance(_ instance: UnsafeMutablePointer<LilvInstance>, stage: Stage, first: Int,
                                 worker: OpaquePointer?, sequence: UInt32, chunk: UInt32) -> InstanceState {
        let info = stage.info
        let audioIn = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, info.audioInputs))
        let audioOut = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, info.audioOutputs))
        let controlValues = zeroed(max(1, stage.controls.count))
        let outputValues = zeroed(max(1, stage.outputs.count))
        let atomPorts = info.ports.filter { $0.kind == .atom }.sorted { ($0.isInput ? 0 : 1, $0.index) < ($1.isInput ? 0 : 1, $1.index) }
        let atoms = UnsafeMutablePointer<UnsafeMutableRawPointer>.allocate(capacity: max(1, atomPorts.count))
        cleanups.append {
            audioIn.deallocate()
            audioOut.deallocate()
            atoms.deallocate()
        }
        var ai = 0, ao = 0
        for port in info.ports {
            let index = UInt32(port.index)
            switch port.kind {
            case .audio:
                if port.isInput { audioIn[ai] = index; ai += 1 } else { audioOut[ao] = index; ao += 1 }
            case .control:
                if port.isInput, let k = stage.controlIndex(port.symbol) {
                    controlValues[k] = port.defaultValue ?? 0
                    lilv_instance_connect_port(instance, index, controlValues + k)
                } else if let k = stage.outputs.firstIndex(where: { $0.index == port.index }) {
                    lilv_instance_connect_port(instance, index, outputValues + k)
                }
            case .cv:
                lilv_instance_connect_port(instance, index, zeroed(Self.maxBlock))
            case .atom:
                let k = atomPorts.firstIndex { $0.index == port.index }!
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.atomCapacity, alignment: 8)
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: Self.atomCapacity)
                cleanups.append { buffer.deallocate() }
                (atoms + k).initialize(to: buffer)
                lilv_instance_connect_port(instance, index, buffer)
            case .other:
                lilv_instance_connect_port(instance, index, nil)
            }
        }
        let descriptor = instance.pointee.lv2_descriptor.pointee
        return InstanceState(
            handle: instance.pointee.lv2_handle, connect: descriptor.connect_port!, run: descriptor.run!,
            audioIn: audioIn, audioOut: audioOut, firstChannel: first, controlValues: controlValues,
            outputValues: outputValues, atoms: atoms, atomInputs: atomPorts.filter(\.isInput).count,
            atomCount: atomPorts.count, atomCapacity: UInt32(Self.atomCapacity), sequenceURID: sequence,
            chunkURID: chunk, worker: worker)
    }
}
