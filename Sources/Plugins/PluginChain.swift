import CLilv
import Foundation
import LV2Host
import Logging
import Presets
import Realtime

/// An LV2 insert chain for one engine: the plugins of a preset, instantiated for a channel layout, with their
/// controls, workers and state. Building, control and state run on the control thread; `state` is what the process
/// thread runs (see `ChainState.run`).
///
/// Channel counts follow `ChainLayout`: a plugin with k inputs and k outputs on a path of n channels (k divides n)
/// runs n / k instances side by side; a plugin whose inputs take the whole path may change its channel count
/// (mono→stereo, stereo→mono); side-chain and optional inputs become the chain's `sideInputs`. A plugin that cannot
/// be used (not installed, needs a feature Tandem lacks, fails to instantiate, does not fit the channels) is left
/// out and reported in `problems`; the rest of the chain runs.
///
/// Threads: control thread only (one owner), except `state`, which the process thread reads once installed.
public final class PluginChain: @unchecked Sendable {
    /// The longest block a plugin is ever run with (buf-size:maxBlockLength; equals JACK's largest period we allow).
    public static let maxBlock = Period.maxFrames
    /// Frames each dry delay line holds: the longest latency a bypass or the dry/wet mix can align is this less
    /// the period (a longer reported latency is clamped).
    static let dryCapacity = 32768

    /// The plugins that run, in order (each with a name unique in the chain).
    public var specs: [PluginSpec] { stages.map(\.spec) }
    /// What went wrong while building (plugins left out, controls ignored, presets or state not applied).
    public internal(set) var problems: [PluginError] = []
    /// Set when a control changed since the last `save`.
    public internal(set) var dirty = false {
        didSet { if dirty { edits &+= 1 } }
    }
    /// How many changes have made the chain dirty: a session saves a change only once the process thread has run
    /// a whole cycle with it (`PluginSaveMark`).
    public private(set) var edits = 0
    /// Saved state files restored while building.
    public internal(set) var restoredFrom: [String] = []
    /// What the process thread runs.
    public let state: UnsafeMutablePointer<ChainState>
    /// Channels the chain takes (`channels`) and gives.
    public let channels: Int
    public var inputChannels: Int { channels }
    public private(set) var outputChannels: Int = 0
    /// Extra inputs of the chain, one per side-chain or optional audio input of a plugin (see `ChainLayout`), in
    /// the order `ChainState.run` takes their buffers. An engine may give each a port named `name`; an engine that
    /// does not leaves them silent.
    public private(set) var sideInputs: [SideInput] = []
    /// The chain's extra outputs: its plugins' CV outputs, named `<plugin>_<port symbol>` (`_2`, `_3` for the
    /// second and later instances), after its path's channels (see `ChainState.sideOutputBuffers`).
    public private(set) var sideOutputs: [SideOutput] = []
    public let label: String
    /// The period the chain was built for, and whether it promised plugins one call per cycle of that length.
    public let period: Int
    public let fixedBlock: Bool
    /// The channel count the chain was asked to end with (nil: whatever its plugins make).
    public let wantedOutputs: Int?

    let host: PluginHost
    let sampleRate: Int
    var stages: [Stage] = []
    /// Wanted dry/wet mix (0 dry ... 1 wet) and output gain in dB.
    var mixValue: Double
    var gainValue: Double
    private var cleanups: [() -> Void] = []
    private let logger: Logger

    /// An extra input of the chain: a side-chain or optional audio input of one plugin.
    /// One extra output of the chain (a plugin's CV output).
    public struct SideOutput: Sendable, Equatable {
        /// `<plugin>_<port symbol>` (`_2`, `_3` for later instances), e.g. "adsr_out": what an engine names its port.
        public var name: String
        public var plugin: String
        public var port: String
    }

    public struct SideInput: Sendable, Equatable {
        /// `<plugin>_<port symbol>`, e.g. "sc2_sidechain": what an engine names its port.
        public var name: String
        public var plugin: String
        public var port: String
    }

    /// One plugin of the chain and everything allocated for it.
    final class Stage {
        let spec: PluginSpec
        let info: PluginInfo
        let plugin: OpaquePointer
        let layout: ChainLayout.Stage
        var instances: [UnsafeMutablePointer<LilvInstance>] = []
        var workers: [OpaquePointer] = []
        /// Features each instance was created with (for state restore).
        var features: [UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>] = []
        let controls: [PluginPortInfo]
        let outputs: [PluginPortInfo]
        var rt: StageState!
        /// The buffers its CV outputs write, per instance in port order (see `PluginChain.sideOutputs`).
        var cvOutputs: [UnsafeMutablePointer<Float>] = []

        init(spec: PluginSpec, info: PluginInfo, plugin: OpaquePointer, layout: ChainLayout.Stage, sampleRate: Int) {
            self.spec = spec
            self.info = info
            self.plugin = plugin
            self.layout = layout
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
            for inst in instances { lilv_instance_free(inst) }
            instances = []
            workers = []
        }
    }

    /// Builds a chain that takes and gives `channels` channels (what the recorder and player need).
    public convenience init(specs: [PluginSpec], channels: Int, sampleRate: Int, period: Int, label: String,
                            savedState: String? = nil, fixedBlock: Bool = true, mix: Double = 1, gainDB: Double = 0,
                            host: PluginHost = .shared, logger: Logger = Logger(label: "tandem.plugins")) {
        self.init(specs: specs, inputs: channels, outputs: channels, sampleRate: sampleRate, period: period,
                  label: label, savedState: savedState, fixedBlock: fixedBlock, mix: mix, gainDB: gainDB, host: host,
                  logger: logger)
    }

    /// Builds the chain. `outputs`: the channel count it must end with, or nil for whatever its plugins make (a
    /// rack). `fixedBlock`: the engine runs the chain once per cycle with `period` frames, so plugins may be
    /// promised buf-size:fixedBlockLength (and powerOf2BlockLength when `period` is a power of two). `savedState`:
    /// a folder from `save(to:)`; state saved there for a plugin of the same name and URI is restored over the
    /// preset's values.
    public init(specs: [PluginSpec], inputs: Int, outputs: Int?, sampleRate: Int, period: Int, label: String,
                savedState: String? = nil, fixedBlock: Bool = true, mix: Double = 1, gainDB: Double = 0,
                host: PluginHost = .shared, logger: Logger = Logger(label: "tandem.plugins")) {
        self.host = host
        self.sampleRate = sampleRate
        self.channels = inputs
        self.label = label
        self.logger = logger
        self.period = period
        self.fixedBlock = fixedBlock
        wantedOutputs = outputs
        mixValue = Self.clampMix(mix)
        gainValue = Self.clampGain(gainDB)
        state = .allocate(capacity: 1)
        let (options, optionValues) = Self.options(host: host, sampleRate: sampleRate, period: period)
        cleanups.append {
            options.deallocate()
            optionValues.deallocate()
        }
        var built: [Stage] = []
        var endWidth = inputs
        host.locked {
            // Look every plugin up, then lay the chain out, then instantiate; a plugin that fails to instantiate
            // is dropped and the rest laid out again (it may have changed the channel count).
            var candidates: [(PluginSpec, PluginInfo, OpaquePointer)] = []
            for spec in PluginSpec.uniqueNames(specs) {
                guard let plugin = host.lilvPlugin(spec.uri) else {
                    let near = host.similarLocked(to: spec.uri)
                    problems.append(PluginError(.notInstalled, plugin: spec.name, "<\(spec.uri)> is not installed"
                        + (near.isEmpty ? " (see `tandem plugins`)" : " (installed: \(near.joined(separator: ", ")))")))
                    continue
                }
                let info = host.describe(plugin, presets: false)
                if let e = Self.unusable(spec, info, period: fixedBlock ? period : 0) {
                    problems.append(e)
                    continue
                }
                candidates.append((spec, info, plugin))
            }
            var instantiated: [String: Stage] = [:]
            while true {
                let (plan, planProblems) = ChainLayout.plan(candidates.map { ($0.0, $0.1) }, inputs: inputs,
                                                            outputs: outputs, label: label)
                var failed: Int?
                built = []
                endWidth = inputs
                for (k, layout) in plan.enumerated() {
                    guard let layout else { continue }
                    let (spec, info, plugin) = candidates[k]
                    if let s = instantiated[spec.name], s.layout == layout {
                        built.append(s)
                        endWidth = layout.widthOut
                        continue
                    }
                    instantiated[spec.name]?.free(activated: false)
                    do throws(PluginError) {
                        let s = try build(spec, info: info, plugin: plugin, layout: layout, options: options)
                        instantiated[spec.name] = s
                        built.append(s)
                        endWidth = layout.widthOut
                    } catch {
                        instantiated[spec.name] = nil
                        problems.append(error)
                        failed = k
                        break
                    }
                }
                if let failed {
                    candidates.remove(at: failed)
                    continue
                }
                problems += planProblems
                for (name, s) in instantiated where !built.contains(where: { $0 === s }) {
                    s.free(activated: false)
                    instantiated[name] = nil
                }
                break
            }
            for s in built {
                applyInitialValues(s, savedState: savedState)
                for inst in s.instances { lilv_instance_activate(inst) }
            }
        }
        stages = built
        var side = 0
        for s in stages {
            s.rt.firstSide = side
            side += s.layout.sideInputs.count
        }
        outputChannels = stages.isEmpty ? (outputs ?? inputs) : endWidth
        var sides: [SideInput] = []
        for s in stages {
            for index in s.layout.sideInputs {
                let symbol = s.info.ports.first { $0.index == index }?.symbol ?? "port\(index)"
                sides.append(SideInput(name: "\(s.spec.name)_\(symbol)", plugin: s.spec.name, port: symbol))
            }
        }
        sideInputs = sides
        var cvOutputs: [UnsafeMutablePointer<Float>] = []
        sideOutputs = stages.flatMap { s -> [SideOutput] in
            let symbols = s.layout.sideOutputs.map { index in s.info.ports.first { $0.index == index }?.symbol ?? "port\(index)" }
            cvOutputs += s.cvOutputs
            return (0..<max(1, s.rt.instanceCount)).flatMap { i in
                symbols.map { SideOutput(name: "\(s.spec.name)_\($0)" + (i > 0 ? "_\(i + 1)" : ""), plugin: s.spec.name, port: $0) }
            }
        }
        let sideOutputBuffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, cvOutputs.count))
        for (k, b) in cvOutputs.enumerated() { (sideOutputBuffers + k).initialize(to: b) }
        cleanups.append { sideOutputBuffers.deallocate() }
        let width = max(1, ([inputs, outputChannels] + stages.flatMap { [$0.layout.widthIn, $0.layout.widthOut] }).max() ?? 1)
        let between = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2 * width)
        for i in 0..<(2 * width) { (between + i).initialize(to: zeroed(Self.maxBlock)) }
        let stagePointer = UnsafeMutablePointer<StageState>.allocate(capacity: max(1, stages.count))
        for (k, s) in stages.enumerated() { (stagePointer + k).initialize(to: s.rt) }
        let settings = AtomicCounterArray.allocate(count: ChainState.Setting.allCases.count)
        let counts = AtomicCounterArray.allocate(count: ChainState.Count.allCases.count)
        let timeURIDs = UnsafeMutablePointer<LV2HostTimeURIDs>.allocate(capacity: 1)
        let t = { (name: String) in host.urid(LV2.time + name) }
        timeURIDs.initialize(to: LV2HostTimeURIDs(
            object: host.urid(LV2.ext + "atom#Object"), long_: host.urid(LV2.atomLong), float_: host.urid(LV2.atomFloat),
            int_: host.urid(LV2.atomInt), position: t("Position"), frame: t("frame"), speed: t("speed"), bar: t("bar"),
            bar_beat: t("barBeat"), beat_unit: t("beatUnit"), beats_per_bar: t("beatsPerBar"),
            beats_per_minute: t("beatsPerMinute")))
        let timeSent = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        timeSent.initialize(to: 0)
        cleanups.append {
            timeURIDs.deallocate()
            timeSent.deallocate()
        }
        let current = zeroed(2)
        current[0] = 1
        current[1] = 1
        let changes = MessageRing.allocate(capacity: ChainState.changeCapacity)
        let seenSettings = UnsafeMutablePointer<Int>.allocate(capacity: 2)
        seenSettings.initialize(repeating: 0, count: 2)
        cleanups.append {
            changes.deallocate()
            seenSettings.deallocate()
        }
        state.initialize(to: ChainState(stages: stagePointer, stageCount: stages.count, inputChannels: inputs,
                                        outputChannels: outputChannels, width: width, between: between,
                                        sideInputs: sides.count, sideOutputs: cvOutputs.count,
                                        sideOutputBuffers: sideOutputBuffers, silence: zeroed(Self.maxBlock), settings: settings,
                                        current: current, dry: delayLines(channels: outputChannels), counts: counts,
                                        sequenceURID: host.urid(LV2.atomSequence), midiURID: host.urid(LV2.midiEvent),
                                        timeURIDs: timeURIDs, timeSent: timeSent,
                                        takesTime: stages.contains { $0.rt.takesTime }, changes: changes,
                                        seenSettings: seenSettings))
        cleanups.append { [state] in
            between.deallocate()
            stagePointer.deallocate()
            settings.deallocate()
            counts.deallocate()
            state.deallocate()
        }
        if let savedState { restoreSettings(from: savedState) }
        storeSettings()
        markApplied()
        for p in problems { logger.error("\(p.description)", metadata: ["chain": "\(label)"]) }
    }

    /// Frees everything. Only once the process thread no longer runs this chain (see `ChainHolder`).
    deinit {
        host.locked {
            for s in stages { s.free(activated: true) }
        }
        for c in cleanups.reversed() { c() }
    }

    public var isEmpty: Bool { stages.isEmpty }

    // MARK: Building

    func zeroed(_ count: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: count)
        p.initialize(repeating: 0, count: count)
        cleanups.append { p.deallocate() }
        return p
    }

    /// `channels` delay lines of `dryCapacity` frames, silent.
    func delayLines(channels: Int) -> DelayLines {
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, channels))
        for c in 0..<channels { (buffers + c).initialize(to: zeroed(Self.dryCapacity)) }
        // No lines: capacity 0, and the process thread never touches the buffers.
        let position = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        position.initialize(to: 0)
        cleanups.append {
            buffers.deallocate()
            position.deallocate()
        }
        return DelayLines(buffers: buffers, channels: channels, capacity: channels > 0 ? Self.dryCapacity : 0,
                          position: position)
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

    /// Bytes of every atom port's buffer (the header included): room for about 340 three-byte MIDI events per
    /// cycle, more when a port's rsz:minimumSize asks (up to `atomCapacityLimit`).
    static let atomCapacity = 8192
    static let atomCapacityLimit = 1 << 20

    /// The buffer size for the atom ports of a plugin: `atomCapacity`, or the largest rsz:minimumSize its ports ask
    /// for (rounded up to 8, at most `atomCapacityLimit`).
    static func atomBufferSize(_ info: PluginInfo) -> Int {
        let asked = info.ports.filter { $0.kind == .atom }.compactMap(\.minimumSize).max() ?? 0
        return min(atomCapacityLimit, max(atomCapacity, (asked + 7) & ~7))
    }

    /// Call inside `host.locked`.
    private func build(_ spec: PluginSpec, info: PluginInfo, plugin: OpaquePointer, layout: ChainLayout.Stage,
                       options: UnsafeMutablePointer<LV2_Options_Option>) throws(PluginError) -> Stage {
        let stage = Stage(spec: spec, info: info, plugin: plugin, layout: layout, sampleRate: sampleRate)
        let instanceCount = layout.instances
        let usesWorker = info.extensionData.contains(LV2.workerInterface)
            || info.requiredFeatures.contains(LV2.workerSchedule) || info.optionalFeatures.contains(LV2.workerSchedule)
        let mentions = Set(info.requiredFeatures + info.optionalFeatures)
        let fixed = fixedBlock && mentions.contains(LV2.fixedBlockLength)
        let powerOf2 = fixedBlock && mentions.contains(LV2.powerOf2BlockLength) && period > 0 && period & (period - 1) == 0
        let controls = AtomicCounterArray.allocate(count: max(1, stage.controls.count))
        let outputs = AtomicCounterArray.allocate(count: max(1, stage.outputs.count))
        let bypass = AtomicCounter.allocate(spec.bypass ? 1 : 0)
        cleanups.append {
            controls.deallocate()
            outputs.deallocate()
            bypass.deallocate()
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
            if fixed { list.append((LV2.fixedBlockLength, nil)) }
            if powerOf2 { list.append((LV2.powerOf2BlockLength, nil)) }
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
                stage.free(activated: false)
                throw PluginError(.instantiateFailed, plugin: spec.name,
                                  "<\(spec.uri)> failed to instantiate: " + Self.whyNoInstance(plugin, uri: spec.uri))
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
            let perInstanceOut = layout.outputs.count
            instances.advanced(by: i).initialize(to: connectInstance(
                instance, stage: stage, first: i * layout.mainInputs.count, firstOutput: i * perInstanceOut,
                worker: worker, sequence: sequence, chunk: chunk))
        }
        let latencyOutput = stage.outputs.firstIndex(where: \.reportsLatency) ?? -1
        let enabled = stage.controls.firstIndex { $0.designation == LV2.enabled } ?? -1
        let fade = zeroed(1)
        fade.pointee = spec.bypass && enabled < 0 ? 1 : 0
        let midiBypassed = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        midiBypassed.initialize(to: spec.bypass ? 1 : 0)
        let seen = UnsafeMutablePointer<Int>.allocate(capacity: stage.controls.count + 1)
        seen.initialize(repeating: 0, count: stage.controls.count + 1)
        cleanups.append {
            midiBypassed.deallocate()
            seen.deallocate()
        }
        let takesMIDI = info.ports.contains { $0.kind == .atom && $0.isInput && $0.supportsMIDI }
        let timing = AtomicCounterArray.allocate(count: StageTiming.Cell.allCases.count)
        cleanups.append { timing.deallocate() }
        stage.rt = StageState(instances: instances, instanceCount: instanceCount, ins: layout.mainInputs.count,
                              sides: layout.sideInputs.count, outs: layout.outputs.count, widthIn: layout.widthIn,
                              widthOut: layout.widthOut, controls: controls, controlCount: stage.controls.count,
                              outputs: outputs, outputCount: stage.outputs.count, latencyOutput: latencyOutput,
                              enabledControl: enabled, bypass: bypass, fade: fade,
                              dry: delayLines(channels: latencyOutput >= 0 && enabled < 0 ? layout.widthOut : 0),
                              fixedFrames: fixed ? period : 0, firstSide: 0,
                              midiChannels: spec.midiChannel.map { UInt32(1) << UInt32($0 - 1) } ?? 0xFFFF,
                              takesMIDI: takesMIDI,
                              takesTime: info.ports.contains { $0.kind == .atom && $0.isInput && $0.supportsTime },
                              midiBypassed: midiBypassed, timing: timing,
                              budgetPerFrame: Int(StageTiming.budgetShare * 1e9 * 1024 / Double(max(1, sampleRate))),
                              seen: seen)
        return stage
    }

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

    /// Connects the ports that never move (controls, atoms, CV) and returns the instance's process-thread view.
    private func connectInstance(_ instance: UnsafeMutablePointer<LilvInstance>, stage: Stage, first: Int,
                                 firstOutput: Int, worker: OpaquePointer?, sequence: UInt32,
                                 chunk: UInt32) -> InstanceState {
        let info = stage.info, layout = stage.layout
        let audioIn = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, layout.mainInputs.count))
        let sideIn = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, layout.sideInputs.count))
        let audioOut = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, layout.outputs.count))
        for (k, p) in layout.mainInputs.enumerated() { audioIn[k] = UInt32(p) }
        for (k, p) in layout.sideInputs.enumerated() { sideIn[k] = UInt32(p) }
        for (k, p) in layout.outputs.enumerated() { audioOut[k] = UInt32(p) }
        let controlValues = zeroed(max(1, stage.controls.count))
        let outputValues = zeroed(max(1, stage.outputs.count))
        let atomPorts = info.ports.filter { $0.kind == .atom }.sorted { ($0.isInput ? 0 : 1, $0.index) < ($1.isInput ? 0 : 1, $1.index) }
        let atoms = UnsafeMutablePointer<UnsafeMutableRawPointer>.allocate(capacity: max(1, atomPorts.count))
        let atomFlags = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, atomPorts.count))
        atomFlags.initialize(repeating: 0, count: max(1, atomPorts.count))
        for (k, p) in atomPorts.enumerated() {
            atomFlags[k] = (p.supportsMIDI ? AtomFlag.midi : 0) | (p.supportsTime && p.isInput ? AtomFlag.time : 0)
        }
        let atomSize = Self.atomBufferSize(info)
        cleanups.append {
            atomFlags.deallocate()
            audioIn.deallocate()
            sideIn.deallocate()
            audioOut.deallocate()
            atoms.deallocate()
        }
        for port in info.ports {
            let index = UInt32(port.index)
            switch port.kind {
            case .audio:
                break   // connected every cycle (`ChainState.runStage`)
            case .control:
                if port.isInput, let k = stage.controlIndex(port.symbol) {
                    controlValues[k] = port.defaultValue ?? 0
                    lilv_instance_connect_port(instance, index, controlValues + k)
                } else if let k = stage.outputs.firstIndex(where: { $0.index == port.index }) {
                    lilv_instance_connect_port(instance, index, outputValues + k)
                }
            case .cv:
                // Inputs: silence until a side input connects them each cycle; outputs: a buffer of their own.
                let buffer = zeroed(Self.maxBlock)
                lilv_instance_connect_port(instance, index, buffer)
                if !port.isInput { stage.cvOutputs.append(buffer) }
            case .atom:
                let k = atomPorts.firstIndex { $0.index == port.index }!
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: atomSize, alignment: 8)
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: atomSize)
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
            audioIn: audioIn, sideIn: sideIn, audioOut: audioOut, firstChannel: first, firstOutput: firstOutput,
            controlValues: controlValues,
            outputValues: outputValues, atoms: atoms, atomFlags: atomFlags, atomInputs: atomPorts.filter(\.isInput).count,
            atomCount: atomPorts.count, atomCapacity: UInt32(atomSize), sequenceURID: sequence,
            chunkURID: chunk, worker: worker)
    }
}
