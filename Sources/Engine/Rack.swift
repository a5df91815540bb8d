import Foundation
import Jack
import Logging
import Loudness
import Plugins
import Presets
import Realtime

/// The rack: one JACK client whose callback runs an LV2 chain from its input ports to its output ports in the same
/// cycle (no ring, no disk, no thread of its own). A session has any number; each is its own client, so JACK2 can
/// run independent racks on separate cores, and racks chain to each other and to the other engines through the
/// connection rules.
///
/// Threads: control side only (one owner); the RT body is `Rack+Process.swift`.
public final class Rack {
    /// What the rack runs: as asked, but with the side input ports its chain has (see `init`).
    public let config: RackConfig
    private let logger: Logger
    /// The client, its ports, RT state and chain (see `EngineClient`; the inputs are its ports, the outputs its
    /// return ports).
    let engine: EngineClient<RackState>

    public var client: JackClient { engine.client }
    /// The main inputs (the side inputs' ports follow them in `sidePorts`).
    public var inputs: [JackPort] { Array(engine.inputs.prefix(config.inputs.count)) }
    public var sidePorts: [JackPort] { Array(engine.inputs.dropFirst(config.inputs.count)) }
    /// The main outputs (the chain's CV outputs' ports follow them in `sideOutputPorts`).
    public var outputs: [JackPort] { Array(engine.outputs.prefix(config.outputs.count)) }
    public var sideOutputPorts: [JackPort] { Array(engine.outputs.dropFirst(config.outputs.count)) }
    public var plugins: ChainHolder { engine.plugins }
    public var name: String { config.name }

    /// Opens the client, registers the inputs then the outputs, builds the chain and activates. `strictPlugins`: a
    /// plugin that cannot run as asked is an error (nothing started); otherwise the rack runs without it. The side
    /// input ports are the built chain's: when a plugin with a side input is left out (it cannot be loaded or
    /// instantiated), its port is not registered and the ports after it keep feeding their own plugins.
    public init(config: RackConfig, server: String?, logger: Logger = Logger(label: "tandem.rack"),
                strictPlugins: Bool = false, loopWakeup: Wakeup? = nil) throws(EngineError) {
        guard !config.outputs.isEmpty else {
            throw EngineError(.badConfig, "rack '\(config.name)' needs at least one output port")
        }
        var config = config
        var (engine, tap) = try Self.open(config, server: server, logger: logger, strictPlugins: strictPlugins,
                                          loopWakeup: loopWakeup)
        if let chain = engine.plugins.chain, chain.sideInputs.map(\.name) != config.sideInputs
            || chain.sideOutputs.map(\.name) != config.sideOutputs {
            // A plugin with a side input or a CV output was left out: ports named from the preset would feed (or be
            // fed by) the wrong plugins.
            logger.warning("a plugin with a side input or CV output was left out: the rack's extra ports follow its chain",
                           metadata: ["rack": "\(config.name)", "chain": "\(chain.sideInputs.map(\.name) + chain.sideOutputs.map(\.name))",
                                      "preset": "\(config.sideInputs + config.sideOutputs)"])
            engine.close()
            tap?.close(freeRing: !engine.client.abandoned)
            config.sideInputs = chain.sideInputs.map(\.name)
            config.sideOutputs = chain.sideOutputs.map(\.name)
            (engine, tap) = try Self.open(config, server: server, logger: logger, strictPlugins: strictPlugins,
                                          loopWakeup: loopWakeup)
        }
        self.config = config
        self.engine = engine
        loudnessTap = tap
        self.logger = logger
        try engine.activate(worker: nil)
        loudnessTap?.start()
        engine.refreshPluginLatency()
        timebase = Self.offerTimebase(config, client: engine.client, logger: logger)
    }

    /// The client, its ports (inputs, side inputs, outputs) and the start chain, not yet active.
    private static func open(_ config: RackConfig, server: String?, logger: Logger,
                             strictPlugins: Bool, loopWakeup: Wakeup?) throws(EngineError)
        -> (EngineClient<RackState>, LoudnessTap?) {
        let setup = EngineClient<RackState>.Setup(
            clientName: config.clientName, server: server, inputs: config.inputs + config.sideInputs,
            outputs: config.outputs + config.sideOutputs, midiInputs: config.midiInputs, midiOutputs: config.midiOutputs,
            role: "rack \(config.name)", plugins: config.plugins,
            pluginState: config.pluginState, strictPlugins: strictPlugins, loopWakeup: loopWakeup,
            through: (config.inputs.count, config.outputs.count, config.mix, config.gainDB))
        let (ins, sides, outs) = (config.inputs.count, config.sideInputs.count, config.outputs.count)
        let sideOuts = config.sideOutputs.count
        var tap: LoudnessTap?
        let engine = try EngineClient(setup, logger: logger, allocate: { client, registered, slot throws(EngineError) in
            tap = try LoudnessTap(engine: config.name, groups: config.loudness, channels: outs + sideOuts,
                                  names: config.outputs + config.sideOutputs, sampleRate: client.sampleRate)
            let midi = RackMIDI.allocate(inputs: registered.midiInputs, outputs: registered.midiOutputs,
                                         sequenceURID: AtomSequence.sequenceURID, midiURID: AtomSequence.midiURID,
                                         wake: client.notifications.loop)
            return RackState.allocate(client: client.cycleHandle, inputs: registered.inputs, outputs: registered.outputs,
                                      channels: (ins, sides, outs, sideOuts), chain: slot, midi: midi,
                                      loudness: tap?.feed)
        })
        return (engine, tap)
    }

    /// The main outputs' loudness meters (nil: not measured).
    private var loudnessTap: LoudnessTap?
    /// Each programme's loudness (`RackConfig.loudness`; empty when not measured). Any thread.
    public var loudness: [ProgrammeLoudness] { loudnessTap?.readings ?? [] }

    /// The tempo and meter this rack gives JACK as timebase master, or nil (see `offerTimebase`).
    var timebase: UnsafeMutablePointer<ConstantTimebase>?

    deinit { close() }

    public var sampleRate: Int { engine.sampleRate }
    public var cycles: Int { engine.cycles }
    public var missedFrames: Int { engine.missedFrames }
    public var xruns: Int { engine.xruns }
    public var cycleCost: CycleHistogram.Summary { engine.cycleCost }
    /// The chain's latency in frames, as reported on the ports.
    public var latency: Int { plugins.chain?.latency ?? 0 }

    /// Reports the chain's current latency to JACK (a through client's: each side carries the other's plus it).
    public func refreshPluginLatency() { engine.refreshPluginLatency() }

    /// Replaces the chain while running: built here, taken by the process thread at the start of a cycle and
    /// crossfaded over that cycle. Returns false, changing nothing, when the new chain's side inputs are not the
    /// rack's side input ports (a plugin with a side input added, removed or left out): the ports must change, so
    /// the caller re-creates the rack.
    @discardableResult
    public func replacePlugins(_ specs: [PluginSpec], savedState: String? = nil) -> Bool {
        let through = engine.through.map {
            ($0.inputs, $0.outputs, plugins.chain?.mix ?? $0.mix, plugins.chain?.gainDB ?? $0.gainDB)
        }
        let chain = ChainHolder.chain(specs, client: client, channels: engine.chainChannels, label: engine.role,
                                      savedState: savedState, through: through)
        guard (chain?.sideInputs.map(\.name) ?? []) == config.sideInputs,
              (chain?.sideOutputs.map(\.name) ?? []) == config.sideOutputs else { return false }
        let client = self.client
        plugins.replace(with: chain, isRunning: { client.isActive && !client.wasShutDown }, logger: logger)
        engine.refreshPluginLatency()
        return true
    }

    /// Deactivates and closes the client.
    public func close() {
        engine.close()
        loudnessTap?.close(freeRing: !client.abandoned)
        timebase?.deallocate()   // the client is closed: its timebase callback no longer runs
        timebase = nil
    }
}
