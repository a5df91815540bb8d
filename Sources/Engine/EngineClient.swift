import Foundation
import Jack
import Logging
import Plugins
import Presets
import Realtime

/// What `EngineClient` needs of an engine's real-time state. The state is the engine's own `BitwiseCopyable` value
/// (all that its process callback touches, built before activation); this is the part every engine has.
protocol EngineState: BitwiseCopyable {
    /// The JACK process callback; its context is a pointer to this state. It reads libjack (port buffers, frame
    /// time) and hands what it read to the engine's cycle body, which touches nothing of libjack. Realtime: safe.
    static var process: JackProcessCallback { get }
    /// Frees what the engine's `allocate` made. Control thread, after the client is closed and the worker joined.
    static func free(_ state: UnsafeMutablePointer<Self>)
    /// Undoes what the warm-up call changed. Control thread, before activation.
    func resetAfterWarmUp()
    /// Process cycles run since activation. Any thread.
    var cyclesRun: Int { get }
    /// Frames of cycles the server ran without calling the client (see `SkippedCycles`). Any thread.
    var missedFrames: Int { get }
    /// Cost of each process cycle, in nanoseconds.
    var cycleCost: CycleHistogram { get }
}

/// The skeleton every engine stands on: one JACK client, its ports, its RT state, its insert chain, an optional
/// worker thread, and their life from open to close. The recorder and the player keep only what differs (what their
/// state holds, what their cycle does, their disk thread and their control API); a rack (ports in, chain, ports out
/// in the same cycle, no disk thread) is its `EngineState`, a `process`/`cycle` pair and a few lines on top of this.
///
/// The contract, in order:
/// 1. `init` opens the client (a taken name is `badConfig`, the rest `jack`), runs the engine's `check` against the
///    server's facts (rate, period), registers the input then the output ports in order, builds the RT state with
///    the engine's `allocate` (which throws `memory` when the rings cannot be had, `badConfig` when they could never
///    fit), installs the start chain (with `strictPlugins` a chain that cannot run as asked is `badConfig`) and the
///    latency callback (on the outputs; on the inputs of an engine without outputs). Nothing runs yet. Any failure
///    undoes what was done and throws.
/// 2. The engine builds what needs the state (its disk thread's object), then calls `activate`: the worker thread
///    starts, the process callback is set and called once on this thread (warm-up), the state's `resetAfterWarmUp`
///    and the engine's `afterWarmUp` undo what it changed, and the client is activated. On failure the worker is
///    stopped and joined and the client closed.
/// 3. `close` (safe twice; the engine may first do its own draining): stops and joins the worker, deactivates and
///    closes the client, frees the chains. The state is freed when this object goes (after `close`), so a thread
///    holding a copy of it is always joined first. A client given up on as the process ends
///    (`JackClient.abandoned`) keeps its chains and state: libjack may still call it.
///
/// Threads: control side only (one owner). The RT callback and the worker run behind it.
// @unchecked Sendable: `worker`, `stopWorker` and `closed` change only on the control thread that owns it (`activate`,
// `close`); the RT callback gets only `state`, the worker thread only the body the engine gave it.
final class EngineClient<State: EngineState>: @unchecked Sendable {
    /// What a client is made of.
    struct Setup {
        var clientName: String
        var server: String?
        /// Short names of the input ports, then of the output ports, each in channel order (a recorder has only
        /// inputs, a player only outputs, a rack both).
        var inputs: [String] = []
        var outputs: [String] = []
        /// Short names of the MIDI input and output ports, registered after the audio ones.
        var midiInputs: [String] = []
        var midiOutputs: [String] = []
        /// "recorder", "player", ...: the chain's label and the words of logs and errors.
        var role: String
        var plugins: [PluginSpec]
        var pluginState: String?
        var strictPlugins: Bool
        /// The control loop's wake-up, posted by the client's notifications (see `SessionEnvironment.loopWakeup`).
        var loopWakeup: Wakeup? = nil
        /// A rack's chain: the channels it takes (its main inputs; the inputs after them are the chain's side
        /// inputs) and gives, its dry/wet mix and output gain. Nil: the insert chain of a recorder or player.
        var through: (inputs: Int, outputs: Int, mix: Double, gainDB: Double)? = nil
        /// Channels the insert chain runs: the inputs, or the outputs of an engine without inputs.
        var chainChannels: Int { inputs.isEmpty ? outputs.count : inputs.count }
    }

    let client: JackClient
    let inputs: [JackPort]
    let outputs: [JackPort]
    /// Every port: the inputs, then the outputs.
    var ports: [JackPort] { inputs + outputs }
    let state: UnsafeMutablePointer<State>
    /// The insert chain (built for `chainChannels` channels).
    let plugins: ChainHolder
    let chainChannels: Int
    /// A rack's chain shape (see `Setup.through`).
    let through: (inputs: Int, outputs: Int, mix: Double, gainDB: Double)?
    let role: String
    private let latency: JackLatency
    private let logger: Logger
    private var worker: OSThread?
    private var stopWorker: () -> Void = {}
    private(set) var closed = false

    /// The ports the skeleton registered, audio then MIDI, each in the order the setup names them.
    struct RegisteredPorts {
        var inputs: [JackPort] = []
        var outputs: [JackPort] = []
        var midiInputs: [JackPort] = []
        var midiOutputs: [JackPort] = []
    }

    /// Step 1 of the contract. `check` sees the open client before any port exists; `allocate` gets the client, the
    /// ports registered (audio and MIDI) and the chain slot the state must hold.
    init(_ setup: Setup, logger: Logger, check: (JackClient) throws(EngineError) -> Void = { _ in },
         allocate: (_ client: JackClient, _ ports: RegisteredPorts, _ chain: ChainSlot)
            throws(EngineError) -> UnsafeMutablePointer<State>)
        throws(EngineError) {
        self.logger = logger
        role = setup.role
        chainChannels = setup.chainChannels
        do {
            client = try JackClient(name: setup.clientName, server: setup.server, logger: logger,
                                    loopWakeup: setup.loopWakeup)
        } catch {
            throw EngineError(error.code == .nameTaken ? .badConfig : .jack, error.description)
        }
        var registered = RegisteredPorts()
        do throws(EngineError) {
            try check(client)
            do {
                for name in setup.inputs { registered.inputs.append(try client.registerPort(name, direction: .input)) }
                for name in setup.outputs {
                    registered.outputs.append(try client.registerPort(name, direction: .output))
                }
                for name in setup.midiInputs {
                    registered.midiInputs.append(try client.registerPort(name, direction: .input, type: .midi))
                }
                for name in setup.midiOutputs {
                    registered.midiOutputs.append(try client.registerPort(name, direction: .output, type: .midi))
                }
            } catch {
                throw EngineError(.jack, error.description)
            }
        } catch {
            client.close()
            throw error
        }
        (inputs, outputs) = (registered.inputs, registered.outputs)
        let holder = ChainHolder()
        do throws(EngineError) {
            state = try allocate(client, registered, holder.slot)
        } catch {
            client.close()
            throw error
        }
        plugins = holder
        through = setup.through
        if let why = holder.installForStart(setup.plugins, client: client, channels: chainChannels, label: role,
                                            savedState: setup.pluginState, strict: setup.strictPlugins,
                                            logger: logger, through: setup.through) {
            client.close()
            State.free(state)
            throw EngineError(.badConfig, why)
        }
        // The chain's delay: what leaves the outputs is that much later (capture latency); an engine without outputs
        // keeps its inputs that much later (playback latency).
        // A through client (a rack, both sides) reports as JACK's latency protocol asks of one: each side carries the
        // other's latency plus the chain's.
        if registered.inputs.isEmpty || registered.outputs.isEmpty {
            latency = registered.outputs.isEmpty ? JackLatency(client: client, ports: registered.inputs, outputs: false)
                : JackLatency(client: client, ports: registered.outputs, outputs: true)
        } else {
            latency = JackLatency(client: client, inputs: registered.inputs, outputs: registered.outputs)
        }
    }

    /// Step 2 of the contract. `worker`: the engine's thread (its name, its body, and how to ask it to return), or
    /// nil for an engine without one.
    func activate(worker: (name: String, body: @Sendable () -> Void, stop: () -> Void)?,
                  afterWarmUp: () -> Void = {}) throws(EngineError) {
        if let worker {
            self.worker = OSThread(name: worker.name, body: worker.body)
            stopWorker = worker.stop
        }
        let s = state
        do {
            try client.activate(process: State.process, context: UnsafeMutableRawPointer(state)) {
                s.pointee.resetAfterWarmUp()
                afterWarmUp()
            }
        } catch {
            joinWorker()
            client.close()
            throw EngineError(.jack, error.description)
        }
        logger.info("\(role) ready", metadata: ["client": "\(client.name)", "ports": "\(ports.count)",
                                                "rate": "\(client.sampleRate)"])
    }

    /// Step 3 of the contract.
    func close() {
        guard !closed else { return }
        closed = true
        joinWorker()
        client.close()
        // A client given up on as the process ends may still run its callback: its chains and state stay.
        guard !client.abandoned else { return }
        plugins.close()
        logger.info("\(role) closed", metadata: ["client": "\(client.name)"])
    }

    private func joinWorker() {
        guard let w = worker else { return }
        stopWorker()
        w.join()
        worker = nil
    }

    deinit {
        close()
        if !client.abandoned { State.free(state) }
    }

    // MARK: Status and chain (control side)

    var sampleRate: Int { client.sampleRate }
    var cycles: Int { state.pointee.cyclesRun }
    var missedFrames: Int { state.pointee.missedFrames }
    /// Xruns the server reported to this client.
    var xruns: Int { client.notifications.count(.xrun) }
    /// p50 / p99 / max cost of the process callback since activation, in nanoseconds.
    var cycleCost: CycleHistogram.Summary { state.pointee.cycleCost.summary() }

    /// Reports the insert chain's current latency to JACK (outputs: capture latency; inputs: playback latency).
    func refreshPluginLatency() { latency.set(plugins.chain?.latency ?? 0) }

    /// Replaces the insert chain while running: built here, taken by the process thread at the start of a cycle.
    func replacePlugins(_ specs: [PluginSpec], savedState: String?) {
        plugins.rebuild(specs, client: client, channels: chainChannels, label: role, savedState: savedState,
                        logger: logger, through: through.map { ($0.inputs, $0.outputs, plugins.chain?.mix ?? $0.mix, plugins.chain?.gainDB ?? $0.gainDB) })
        refreshPluginLatency()
    }

    /// Frames of a ring that holds `seconds` at the server's rate plus two of the longest periods, for `channels`
    /// channels; `badConfig` when it could never be resident on this machine (`what` and `hint` name it for the user).
    static func ringFrames(seconds: Double, rate: Int, channels: Int, what: String, hint: String)
        throws(EngineError) -> Int {
        guard let frames = Limits.frames(seconds: seconds, rate: Double(rate)) else {
            throw EngineError(.badConfig, "\(what) of \(seconds) s cannot be held: \(hint)")
        }
        let ringFrames = frames + 2 * Period.maxFrames
        let (bytes, overflow) = ringFrames.multipliedReportingOverflow(by: channels * MemoryLayout<Float>.stride)
        guard !overflow, ResidentMemory.plausible(bytes: bytes) else {
            let mib = overflow ? Int.max >> 20 : bytes >> 20
            throw EngineError(.badConfig, "\(what) of \(mib) MiB at \(rate) Hz is more "
                              + "than half this machine's memory: \(hint)")
        }
        return ringFrames
    }
}
