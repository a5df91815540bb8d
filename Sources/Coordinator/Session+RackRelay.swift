import Commands
import Engine
import Foundation
import Presets

// An isolated rack loses nothing: what the session does for an in-process rack's chain it does for an isolated one
// through the rack's process (`rackRelay`, its control port): plugin commands from maps, a plugin save, maps added
// or cleared at run time (handed over as its document), and the values it acknowledged, which a process started
// after a server loss is given again. Control thread.
extension Session {
    /// Carries a plugin command naming an isolated rack to its process, with `context`'s source; nil when the
    /// command is not one, the rack is not isolated, or no relay is installed (the session then answers itself).
    func relayToIsolatedRack(_ command: Command, _ context: CommandContext) -> CommandReply? {
        switch command {
        case .pluginSet, .pluginGet, .pluginBypass, .pluginMix, .pluginGain, .pluginPreset, .pluginList(engine: _?): break
        default: return nil
        }
        guard let name = command.engine, racks[name] == nil, let s = supervisors[name], let relay = rackRelay else {
            return nil
        }
        let reply = relay(command, name, s.isRunning && s.ready ? s.controlPort : nil, context.source)
        acknowledgeRelayed(command, reply: reply)
        return reply
    }

    /// Notes what an isolated rack's process acknowledged to a relayed command (its reply `ok`): a value set, a
    /// bypass, mix or gain. Kept by its supervisor, or with the values kept while the server is away. Called by every
    /// surface that relays (OSC, HTTP, maps) before it answers, so what was answered is kept.
    public func acknowledgeRelayed(_ command: Command, reply: CommandReply) {
        guard reply.ok, let name = command.engine, racks[name] == nil else { return }
        if let s = supervisors[name] {
            s.shadow.record(command, detail: reply.detail)
        } else if let section = keptRackValues[name]?.rack ?? preset?.racks.first(where: { $0.name == name }) {
            // Its supervisor went with the server: kept for the process started when the server is back.
            var values = keptRackValues[name]?.values ?? ChainShadow()
            values.record(command, detail: reply.detail)
            keptRackValues[name] = (section, values)
        }
    }

    /// Keeps what a supervisor's process acknowledged, for a start of the same rack (`startIsolated`).
    func keepValues(of s: RackSupervisor) {
        guard !s.shadow.isEmpty else { return }
        keptRackValues[s.rack.name] = (s.rack, s.shadow)
    }

    /// Gives a process that started after a server loss the values its rack acknowledged before (its saved state may
    /// be older: a value is saved only once a whole cycle has run it), once it is ready. They are said as changes
    /// with the source `restore`.
    func replayRackValues(_ s: RackSupervisor) {
        guard let values = s.replay, s.isRunning, s.ready, let relay = rackRelay else { return }
        s.replay = nil
        let name = s.rack.name
        var refused: [String] = []
        for command in values.commands(rack: name) {
            let reply = relay(command, name, s.controlPort, "restore")
            if !reply.ok { refused.append("\(command.address): \(reply.detail)") }
        }
        if refused.isEmpty {
            logger.info("rack given its acknowledged values again", metadata: ["rack": "\(name)"])
        } else {
            logger.warning("rack did not take every acknowledged value", metadata: [
                "rack": "\(name)", "refused": "\(refused.joined(separator: "; "))"])
            if !s.isRunning { s.replay = values }   // it went down again: at its next start
        }
    }

    /// Brings an in-process rack's new chain to the values the chain it replaces ran with (after a server loss), each
    /// one that differs said as a change with the source `restore`.
    func restoreValues(_ values: ChainShadow, rack name: String) {
        guard let chain = chain(.rack(name)) else { return }
        for command in values.commands(rack: name) {
            switch command {
            case .pluginSet(_, let plugin, let symbol, .number(let v), _):
                guard let now = try? chain.value(plugin, symbol), Double(now) != v, Float(v) != now else { continue }
                _ = try? setPluginControl(.rack(name), plugin: plugin, symbol: symbol, value: v, source: "restore")
            case .pluginBypass(_, let plugin, let on?, _):
                guard let now = try? chain.isBypassed(plugin), now != on else { continue }
                try? setPluginBypass(.rack(name), plugin: plugin, on, source: "restore")
            case .pluginMix(_, let m?, _) where chain.mix != m, .pluginGain(_, let m?, _) where chain.gainDB != m:
                if case .pluginMix = command { chain.mix = m } else { chain.gainDB = m }
                events.append(.chainLevelChanged(engine: name, mix: chain.mix, gainDB: chain.gainDB, source: "restore"))
            default:
                break
            }
        }
    }

    /// Saves each isolated rack's chain state in its own process (as `/tandem/plugin/save` there): the folders
    /// written, and a refusal per rack whose process could not (down, or no answer).
    public func saveIsolatedPlugins(source: String) -> (folders: [String], problems: [String]) {
        var folders: [String] = [], problems: [String] = []
        guard let relay = rackRelay else { return ([], []) }
        for name in supervisors.keys.sorted() where racks[name] == nil {
            guard let s = supervisors[name] else { continue }
            let reply = relay(.pluginSave, name, s.isRunning && s.ready ? s.controlPort : nil, source)
            if reply.ok {
                if !reply.detail.isEmpty { folders.append(reply.detail) }
            } else {
                problems.append("rack \(name): \(reply.detail)")
            }
        }
        return (folders, problems)
    }

    /// After the session's maps changed at run time: each isolated rack whose maps changed is handed them as its
    /// document (no restart); a changed marker map (given on its command line) starts its process anew. The preset
    /// in force holds them, so a restore after a server loss starts the processes with them.
    func handIsolatedRacksTheirMaps() {
        guard var p = preset else { return }
        p.maps = maps
        preset = p
        for name in supervisors.keys.sorted() where racks[name] == nil {
            guard let s = supervisors[name] else { continue }
            let want = Self.mapsRunningIn(s.rack, maps)
            guard want != s.maps else { continue }
            if want.filter(\.isMarker) == s.maps.filter(\.isMarker),
               s.updateMaps(want, document: Self.rackDocument(s.rack, p.session, maps: maps)) {
                continue
            }
            supervisors.removeValue(forKey: name)
            keepValues(of: s)
            s.stop()
            var report = ApplyReport()
            do {
                try startIsolated(s.rack, p, &report)
            } catch {
                logger.error("rack could not be started with its new maps", metadata: ["rack": "\(name)",
                                                                                       "error": "\(error)"])
            }
        }
    }

    /// The plugins of an engine's chain by their names in it: the running chain's, or an isolated rack's as its
    /// preset gives them.
    func chainSpecs(_ engine: ChainEngine) -> [PluginSpec] {
        if let c = chain(engine) { return c.specs }
        guard racks[engine.rawValue] == nil, let s = supervisors[engine.rawValue] else { return [] }
        return PluginSpec.uniqueNames(s.rack.plugins)
    }
}
