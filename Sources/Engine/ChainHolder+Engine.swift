import Jack
import Logging
import Plugins
import Presets

extension ChainHolder {
    /// The chain `specs` asks for, for a client of this server (nil when `specs` is empty). Control thread.
    static func chain(_ specs: [PluginSpec], client: JackClient, channels: Int, label: String,
                      savedState: String?) -> PluginChain? {
        specs.isEmpty ? nil : PluginChain(specs: specs, channels: channels, sampleRate: client.sampleRate,
                                          period: client.bufferSize, label: label, savedState: savedState)
    }

    /// Builds the chain `specs` asks for here, off the process thread, and swaps it in for the running one.
    func rebuild(_ specs: [PluginSpec], client: JackClient, channels: Int, label: String, savedState: String?,
                 logger: Logger) {
        replace(with: Self.chain(specs, client: client, channels: channels, label: label, savedState: savedState),
                isRunning: { client.isActive && !client.wasShutDown }, logger: logger)
    }
}
