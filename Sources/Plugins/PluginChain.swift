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
// @unchecked Sendable: every var changes only on the control thread that owns the chain; the process thread reaches
// only `state` (handed over through a `ChainSlot`'s atomic cells) and the atomics and buffers it points to.
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
    public let sampleRate: Int
    var stages: [Stage] = []
    /// Wanted dry/wet mix (0 dry ... 1 wet) and output gain in dB.
    var mixValue: Double
    var gainValue: Double
    /// What building allocated, freed in reverse order by `deinit`.
    var cleanups: [() -> Void] = []
    private let logger: Logger

    /// One extra output of the chain (a plugin's CV output).
    public struct SideOutput: Sendable, Equatable {
        /// `<plugin>_<port symbol>` (`_2`, `_3` for later instances), e.g. "adsr_out": what an engine names its port.
        public var name: String
        public var plugin: String
        public var port: String
    }

    /// An extra input of the chain: a side-chain or optional audio input of one plugin.
    public struct SideInput: Sendable, Equatable {
        /// `<plugin>_<port symbol>`, e.g. "sc2_sidechain": what an engine names its port.
        public var name: String
        public var plugin: String
        public var port: String
    }

    /// Builds a chain that takes and gives `channels` channels (what the recorder and player need).
    public convenience init(specs: [PluginSpec], channels: Int, sampleRate: Int, period: Int, label: String,
                            savedState: String? = nil, fixedBlock: Bool = true, mix: Double = 1, gainDB: Double = 0,
                            host: PluginHost = .shared, logger: Logger = Logger(label: "tandem.plugins")) {
        self.init(specs: specs, inputs: channels, outputs: channels, sampleRate: sampleRate, period: period,
                  label: label, savedState: savedState, fixedBlock: fixedBlock, mix: mix, gainDB: gainDB, midi: false,
                  host: host, logger: logger)
    }

    /// Builds the chain. `outputs`: the channel count it must end with, or nil for whatever its plugins make (a
    /// rack). `fixedBlock`: the engine runs the chain once per cycle with `period` frames, so plugins may be
    /// promised buf-size:fixedBlockLength (and powerOf2BlockLength when `period` is a power of two). `savedState`:
    /// a folder from `save(to:)`; state saved there for a plugin of the same name and URI is restored over the
    /// preset's values. `midi`: the engine feeds the chain MIDI (a rack); without, an instrument is left out.
    public init(specs: [PluginSpec], inputs: Int, outputs: Int?, sampleRate: Int, period: Int, label: String,
                savedState: String? = nil, fixedBlock: Bool = true, mix: Double = 1, gainDB: Double = 0,
                midi: Bool = true, host: PluginHost = .shared, logger: Logger = Logger(label: "tandem.plugins")) {
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
            var candidates: [(PluginSpec, PluginInfo, HostedPlugin)] = []
            for spec in PluginSpec.uniqueNames(specs) {
                let plugin: HostedPlugin
                switch host.source(spec.uri) {
                case .success(let found): plugin = found
                case .failure(let why):
                    problems.append(PluginError(.notInstalled, plugin: spec.name, why.why))
                    continue
                }
                let info = host.describe(plugin)
                if let e = Self.unusable(spec, info, period: fixedBlock ? period : 0)
                    ?? Self.silentInstrument(spec, info, midi: midi) {
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
                // The ports hold the values the first cycle will run with before activate: a plugin that reads
                // its controls there (caps' smoothed gains) starts at them instead of gliding from the defaults.
                for i in 0..<s.rt.instanceCount {
                    let values = s.rt.instances[i].controlValues
                    for k in 0..<s.controls.count { values[k] = Float(bitPattern: UInt32(truncatingIfNeeded: s.rt.controls.load(k))) }
                }
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
        let settingGlides = UnsafeMutablePointer<Glide>.allocate(capacity: 2)
        settingGlides.initialize(repeating: Glide(), count: 2)
        cleanups.append {
            changes.deallocate()
            seenSettings.deallocate()
            settingGlides.deallocate()
        }
        state.initialize(to: ChainState(stages: stagePointer, stageCount: stages.count, inputChannels: inputs,
                                        outputChannels: outputChannels, width: width, between: between,
                                        sideInputs: sides.count, sideOutputs: cvOutputs.count,
                                        sideOutputBuffers: sideOutputBuffers, silence: zeroed(Self.maxBlock), settings: settings,
                                        current: current, dry: delayLines(channels: outputChannels), counts: counts,
                                        sequenceURID: host.urid(LV2.atomSequence), midiURID: host.urid(LV2.midiEvent),
                                        timeURIDs: timeURIDs, timeSent: timeSent,
                                        takesTime: stages.contains { $0.rt.takesTime }, changes: changes,
                                        seenSettings: seenSettings, settingGlides: settingGlides))
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
}
