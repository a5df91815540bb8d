import Engine
import Foundation
import Jack
import Logging
import Plugins
import Presets
import Takes

/// The session's plugin chains: live control, state saved into the session folder, changes applied by difference.
extension Session {
    /// Where a session keeps its plugins' saved state: `<directory>/<name>.plugins/<engine>` (a rack's under
    /// `rack-<rack name>`).
    public static func pluginStateDirectory(_ session: SessionSection, engine: ChainEngine) -> String {
        session.pluginStateDirectory(engine: engine.rawValue)
    }

    /// The engines that have a chain in this session: the recorder, the player, each in-process rack.
    public var chainEngines: [ChainEngine] {
        var out: [ChainEngine] = []
        if recorder != nil { out.append(.recorder) }
        if player != nil { out.append(.player) }
        out += racks.keys.sorted().map(ChainEngine.rack)
        return out
    }

    /// Whether `name` names an engine with a chain ("recorder", "player", or a rack of this session).
    public func hasEngine(_ name: String) -> Bool {
        name == "recorder" || name == "player" || racks[name] != nil || supervisors[name] != nil
    }

    /// The frames a glide of `ms` takes at the session's rate (0 for none).
    func rampFrames(_ ms: Double?) -> Int {
        PluginChain.rampFrames(ms: ms, sampleRate: patchClient?.sampleRate ?? 48000)
    }

    /// The engine's chain running in this process (nil: none, or an isolated rack's).
    public func chain(_ engine: ChainEngine) -> PluginChain? { chainEngine(engine)?.plugins.chain }

    /// The engine in this process behind a chain name: its chain holder, and the process cycles it has run.
    func chainEngine(_ engine: ChainEngine) -> (plugins: ChainHolder, cycles: Int)? {
        switch engine {
        case .recorder: return recorder.map { ($0.plugins, $0.cycles) }
        case .player: return player.map { ($0.plugins, $0.cycles) }
        default: return racks[engine.rawValue].map { ($0.plugins, $0.cycles) }
        }
    }

    /// Rebuilds an engine's chain with `specs` (off the process thread; swapped at a cycle boundary).
    func replaceChain(_ engine: ChainEngine, _ specs: [PluginSpec]) {
        tickControlLog()   // what the chain going out applied is logged before it goes
        switch engine {
        case .recorder: recorder?.replacePlugins(specs, savedState: nil)
        case .player: player?.replacePlugins(specs, savedState: nil)
        default: racks[engine.rawValue]?.replacePlugins(specs, savedState: nil)
        }
    }

    /// Sets a control of a plugin live (from the next process cycle); returns the value set (clamped to its range).
    /// Subscribers hear of it (`controlChanged`, from `source`: osc, midi, preset).
    @discardableResult
    public func setPluginControl(_ engine: ChainEngine, plugin: String, symbol: String, value: Double,
                                 source: String = "osc", clamp: Bool = false, rampFrames: Int = 0) throws(PluginError) -> Float {
        guard let c = chain(engine) else {
            throw PluginError(.unknownPlugin, plugin: plugin, "the \(engine.rawValue) has no plugin chain"
                              + (supervisors[engine.rawValue].map { " in this process (the rack runs isolated: its own control port is "
                                  + ($0.controlPort.map(String.init) ?? "not open") + ")" } ?? ""))
        }
        let set = try c.set(plugin, symbol, value, clamp: clamp, rampFrames: rampFrames)
        controlLog.sources[ControlLogState.key(engine.rawValue, plugin, symbol)] = source
        events.append(.controlChanged(engine: engine.rawValue, plugin: plugin, symbol: symbol, value: set, source: source))
        return set
    }

    /// Bypasses a plugin, or brings it back, from the next cycle; subscribers hear of a change (`bypassChanged`).
    public func setPluginBypass(_ engine: ChainEngine, plugin: String, _ on: Bool, source: String = "osc",
                                rampFrames: Int = 0) throws(PluginError) {
        guard let c = chain(engine) else {
            throw PluginError(.unknownPlugin, plugin: plugin, "the \(engine.rawValue) has no plugin chain")
        }
        let was = try c.isBypassed(plugin)
        try c.setBypass(plugin, on, rampFrames: rampFrames)
        controlLog.sources[ControlLogState.key(engine.rawValue, plugin, "bypass")] = source
        if was != on { events.append(.bypassChanged(engine: engine.rawValue, plugin: plugin, bypassed: on, source: source)) }
    }

    /// The current value of a control.
    public func pluginControl(_ engine: ChainEngine, plugin: String, symbol: String) throws(PluginError) -> Float {
        guard let c = chain(engine) else {
            throw PluginError(.unknownPlugin, plugin: plugin, "the \(engine.rawValue) has no plugin chain"
                              + (supervisors[engine.rawValue].map { " in this process (the rack runs isolated: its own control port is "
                                  + ($0.controlPort.map(String.init) ?? "not open") + ")" } ?? ""))
        }
        return try c.value(plugin, symbol)
    }

    /// Saves the chains' state into the session folder: every engine's, or those of `engines`. Returns the folders
    /// written.
    @discardableResult
    public func savePlugins(_ engines: [ChainEngine]? = nil) throws(PluginError) -> [String] {
        guard let session = preset?.session else { return [] }
        var saved: [String] = []
        for engine in engines ?? chainEngines {
            guard let c = chain(engine), !c.isEmpty else { continue }
            let dir = Self.pluginStateDirectory(session, engine: engine)
            try c.save(to: dir)
            saved.append(dir)
        }
        return saved
    }

    /// Saves chains whose controls changed (at most once a second) once their process thread has run a whole cycle
    /// with the change (`PluginSaveMark`): a control value that hung a plugin is never saved, so a restarted rack
    /// does not come back hung. And reports latency changes to JACK.
    func tickPlugins() {
        tickControlLog()
        recorder?.plugins.collect()
        player?.plugins.collect()
        recorder?.refreshPluginLatency()
        player?.refreshPluginLatency()
        for rack in racks.values {
            rack.plugins.collect()
            rack.refreshPluginLatency()
        }
        periodChanges()
        guard preset?.session.savePlugins == true else { return }
        let chains = chainEngines.compactMap { engine -> PluginKeeping.Chain? in
            guard let e = chainEngine(engine), let c = e.plugins.chain else { return nil }
            return PluginKeeping.Chain(engine: engine, chain: ObjectIdentifier(c), dirty: c.dirty, edits: c.edits,
                                       cycles: e.cycles)
        }
        let settled = pluginKeeping.look(chains, at: clock.real())
        guard !settled.isEmpty else { return }
        do {
            try savePlugins(settled)
        } catch {
            pluginLogger.error("\(error.description)")
        }
    }

    /// Announces the problems of every chain built since the last call (an event and an error line per problem).
    func announcePluginProblems() {
        for engine in chainEngines {
            let c = chain(engine)
            if announcedChains[engine]?.chain === c { continue }
            announcedChains[engine] = WeakChain(chain: c)
            for p in c?.problems ?? [] {
                pluginLogger.error("\(PluginChain.bypassLine(p))", metadata: ["chain": "\(engine.rawValue)"])
                events.append(.pluginProblem(engine: engine.rawValue, plugin: p.plugin, bypassed: p.leavesPluginOut,
                                             message: p.message))
            }
        }
    }

    /// Brings a running chain to `want`: control values only when the same plugins stay in the same order (no
    /// rebuild), otherwise a new chain built off the process thread and swapped in. Returns whether anything changed.
    /// Subscribers hear of each control value and bypass the preset gives anew (source `preset`).
    func applyPlugins(_ engine: ChainEngine, current: [PluginSpec], want: [PluginSpec], chain: PluginChain?,
                      replace: ([PluginSpec]) -> Void) -> Bool {
        guard current != want else { return false }
        let sameShape = current.count == want.count && zip(current, want).allSatisfy {
            $0.uri == $1.uri && $0.name == $1.name && $0.preset == $1.preset
        }
        if sameShape, let chain {
            for (old, new) in zip(current, want) {
                for c in new.controls where !old.controls.contains(c) {
                    if let set = try? chain.set(new.name, c.symbol, c.value) {
                        events.append(.controlChanged(engine: engine.rawValue, plugin: new.name, symbol: c.symbol,
                                                      value: set, source: "preset"))
                    }
                }
                if old.bypass != new.bypass, (try? chain.setBypass(new.name, new.bypass)) != nil {
                    events.append(.bypassChanged(engine: engine.rawValue, plugin: new.name, bypassed: new.bypass,
                                                 source: "preset"))
                }
            }
            return true
        }
        replace(want)
        // A rebuilt chain: the values the preset names, as the new chain holds them.
        if let rebuilt = self.chain(engine) {
            for spec in want {
                for c in spec.controls {
                    guard let v = try? rebuilt.value(spec.name, c.symbol) else { continue }
                    events.append(.controlChanged(engine: engine.rawValue, plugin: spec.name, symbol: c.symbol, value: v,
                                                  source: "preset"))
                }
            }
        }
        return true
    }
}

extension ChainConfig {
    /// Whether `other` differs only in its plugin chain.
    func differsOnlyInPlugins(from other: Self) -> Bool {
        var a = self, b = other
        a.plugins = []
        b.plugins = []
        return a == b
    }
}

extension RecorderConfig: ChainConfig {}
extension PlayerConfig: ChainConfig {}

extension Session {
    /// After the server's period changed: chains that promised their plugins a fixed block are rebuilt for the new
    /// one off the process thread (until then the callback passes those plugins over; see `PluginChain.rebuilt`).
    func periodChanges() {
        // Every loop turn, so no arrays. Only chains are asked about: the period is read from JACK's notification
        // counter, never queried per poll.
        func check(_ holder: ChainHolder, _ client: JackClient) {
            let period = client.notifications.bufferSize.load()
            guard let chain = holder.chain, client.notifications.count(.bufferSize) > 0, period > 0,
                  chain.period != period else { return }
            if holder.periodChanged(to: period, isRunning: { client.isActive && !client.wasShutDown }, logger: pluginLogger) {
                pluginLogger.info("plugin chain rebuilt for the new period", metadata: ["client": "\(client.name)",
                                                                                       "period": "\(period)"])
            }
        }
        if let r = recorder { check(r.plugins, r.client) }
        if let p = player { check(p.plugins, p.client) }
        for rack in racks.values { check(rack.plugins, rack.client) }
    }
}

