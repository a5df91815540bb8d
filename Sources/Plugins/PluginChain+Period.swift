import Foundation
import Logging

// A period change: plugins promised a fixed block length (buf-size:fixedBlockLength) cannot be run with another
// length, so the chain is built again for the new period, off the process thread, with everything it had (plugin
// state, control values, bypass, mix, gain), and swapped in at a cycle boundary. Until the swap, cycles of the new
// length pass those plugins over (dry) and count `blockMismatches`; plugins promised nothing just run.

extension PluginChain {
    /// Whether a chain built for `period` would differ from this one: it promised some plugin a fixed block (or a
    /// power of two) that a cycle of `period` frames would break.
    public func needsRebuild(forPeriod period: Int) -> Bool {
        period != self.period && stages.contains { $0.rt.fixedFrames != 0 }
    }

    /// A new chain like this one for cycles of `period` frames: the plugins' state is saved to a temporary folder
    /// and restored into the new instances; controls, bypass, mix and gain are carried over. Control thread.
    public func rebuilt(period: Int, logger: Logger = Logger(label: "tandem.plugins")) -> PluginChain {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("tandem-chain-\(getpid())-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var saved: String? = folder
        do throws(PluginError) {
            try save(to: folder)
        } catch {
            logger.warning("\(error.description); the rebuilt chain starts from its control values",
                           metadata: ["chain": "\(label)"])
            saved = nil
        }
        let wasDirty = dirty
        let new = PluginChain(specs: currentSpecs, inputs: inputChannels, outputs: wantedOutputs,
                              sampleRate: sampleRate, period: period, label: label, savedState: saved,
                              fixedBlock: fixedBlock, mix: mix, gainDB: gainDB, host: host, logger: logger)
        dirty = wasDirty
        new.dirty = wasDirty
        return new
    }
}

extension ChainHolder {
    /// The server's period is now `period` frames: when the running chain promised a fixed block, a rebuilt chain
    /// replaces it (see `PluginChain.rebuilt`). Returns whether it did. Control thread (a JACK buffer-size
    /// notification is handled here by the engine's control loop, not in the callback).
    @discardableResult
    public func periodChanged(to period: Int, isRunning: () -> Bool, logger: Logger) -> Bool {
        guard let chain, chain.needsRebuild(forPeriod: period) else { return false }
        replace(with: chain.rebuilt(period: period, logger: logger), isRunning: isRunning, logger: logger)
        return true
    }
}
