import Jack
import Logging
import Plugins
import Presets
import Takes

extension ChainHolder {
    /// The chain `specs` asks for, for a client of this server (nil when `specs` is empty). The engine runs it once
    /// per cycle with the server's period, so plugins may be promised a fixed block. `mix` and `gainDB`: the chain's
    /// dry/wet mix and output gain (saved values in `savedState` take precedence). Control thread.
    static func chain(_ specs: [PluginSpec], client: JackClient, channels: Int, label: String,
                      savedState: String?, mix: Double = 1, gainDB: Double = 0,
                      through: (inputs: Int, outputs: Int, mix: Double, gainDB: Double)? = nil) -> PluginChain? {
        guard !specs.isEmpty else { return nil }
        if let t = through {
            // A rack: its main inputs in, exactly its outputs out (what cannot end there is left out, and said).
            return PluginChain(specs: specs, inputs: t.inputs, outputs: t.outputs, sampleRate: client.sampleRate,
                               period: client.bufferSize, label: label, savedState: savedState, fixedBlock: true,
                               mix: t.mix, gainDB: t.gainDB)
        }
        return PluginChain(specs: specs, channels: channels, sampleRate: client.sampleRate, period: client.bufferSize,
                           label: label, savedState: savedState, fixedBlock: true, mix: mix, gainDB: gainDB)
    }

    /// Installs the chain an engine starts with. With `strict` (a plugin that cannot run is fatal) returns why the
    /// engine cannot start, having freed the chain (the caller closes the rest); otherwise logs each problem (the
    /// chain runs without what failed) and returns nil. Control thread, before activation.
    func installForStart(_ specs: [PluginSpec], client: JackClient, channels: Int, label: String, savedState: String?,
                         strict: Bool, logger: Logger,
                         through: (inputs: Int, outputs: Int, mix: Double, gainDB: Double)? = nil) -> String? {
        install(Self.chain(specs, client: client, channels: channels, label: label, savedState: savedState,
                           through: through))
        if strict, let why = PluginChain.startFailure(chain, engine: label) {
            close()
            return why
        }
        for p in chain?.problems ?? [] {
            logger.error("plugin problem: \(PluginChain.bypassLine(p))", metadata: ["chain": "\(label)"])
        }
        return nil
    }

    /// Builds the chain `specs` asks for here, off the process thread, and swaps it in for the running one.
    func rebuild(_ specs: [PluginSpec], client: JackClient, channels: Int, label: String, savedState: String?,
                 logger: Logger, through: (inputs: Int, outputs: Int, mix: Double, gainDB: Double)? = nil) {
        replace(with: Self.chain(specs, client: client, channels: channels, label: label, savedState: savedState,
                                 through: through),
                isRunning: { client.isActive && !client.wasShutDown }, logger: logger)
    }
}

extension PluginChain {
    /// The chain's problems as a take's report lists them.
    var takeProblems: [TakeReport.PluginProblem] {
        problems.map { .init(plugin: $0.plugin, code: $0.code.rawValue, bypassed: $0.leavesPluginOut, message: $0.message) }
    }

    /// What stops an engine from starting with this chain when plugin errors are fatal (nil: nothing does).
    static func startFailure(_ chain: PluginChain?, engine: String) -> String? {
        let fatal = chain?.problems.filter(\.stopsStart) ?? []
        guard !fatal.isEmpty else { return nil }
        return "the \(engine)'s plugin chain cannot run as asked: "
            + fatal.map(\.description).joined(separator: "; ")
            + "; nothing started (on_plugin_error = \"bypass\" in [session], or --on-plugin-error bypass, runs without"
            + " what failed)"
    }

    /// One line per problem, saying what became of the plugin, for logs and the status.
    public static func bypassLine(_ e: PluginError) -> String {
        (e.leavesPluginOut ? "bypassed: " : "ignored: ") + e.description
    }
}
