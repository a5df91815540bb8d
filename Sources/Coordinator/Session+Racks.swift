import Engine
import Foundation
import Jack
import Logging
import Plugins
import Presets
import Takes

// Racks in a session: in-process ones applied by diff like the other engines, isolated ones run by a supervisor
// (each in a child process that is Tandem itself), and what a rack going down means for a running take.
extension Session {
    /// Whether a rack runs in a child process: as the preset says, else whenever the session also records.
    static func isolates(_ rack: RackSection, in preset: Preset) -> Bool { rack.isolate ?? (preset.recorder != nil) }

    /// Carries out the racks' steps of an apply plan (`ApplyPlan.RackStep`): closes and stops what goes, hands an
    /// isolated rack's process its changed rack, rebuilds chains whose plugins changed, opens what is new. `strict`:
    /// a plugin that cannot run stops the apply.
    func applyRacks(_ steps: [ApplyPlan.RackStep], _ wanted: Preset, _ report: inout ApplyReport,
                    strict: Bool) throws(EngineError) {
        for step in steps {
            switch step {
            case .close(let name):
                racks.removeValue(forKey: name)?.close()
                rackConfigs[name] = nil
                report.clientsClosed += 1
            case .stop(let name):
                // Its maps or ports changed (it starts anew below) or it goes: what it acknowledged is kept for a
                // start of the same rack.
                if let s = supervisors.removeValue(forKey: name) {
                    keepValues(of: s)
                    s.stop()
                }
                report.clientsClosed += 1
            case .updateProcess(let section, let want):
                // Plugins, settings, gain or mix changed and the ports stay: the process takes the rack as a document,
                // as an in-process rack takes a changed preset (no restart, no gap). Else it starts anew.
                guard let s = supervisors[section.name] else { continue }
                if s.update(section, document: Self.rackDocument(section, wanted.session, maps: wanted.maps)) {
                    s.ports = (want.inputs.count, want.outputs.count)
                    report.reconfigured.append("rack \(section.name) (in its process)")
                } else {
                    supervisors.removeValue(forKey: section.name)?.stop()
                    report.clientsClosed += 1
                    try startIsolated(section, wanted, &report)
                }
            case .openPatchClient:
                // Isolated racks only: the session still needs a client of its own to watch and patch the graph (and
                // to see a rack's client name taken before its process tries it).
                do {
                    patchOnlyClient = try JackClient(name: "\(wanted.session.name)-patch", server: server, logger: logger,
                                                     loopWakeup: environment.loopWakeup)
                    // Active, so graph notifications arrive; without a process callback, so it is never woken per cycle.
                    try patchOnlyClient?.activateForNotifications()
                } catch {
                    throw EngineError(.jack, "cannot open the session's patch client: \(error)")
                }
            case .start(let section):
                try startIsolated(section, wanted, &report)
            case .update(let want):
                guard let rack = racks[want.name], let current = rackConfigs[want.name] else { continue }
                var samePorts = true
                if applyPlugins(.rack(want.name), current: current.plugins, want: want.plugins, chain: rack.plugins.chain,
                                replace: { samePorts = rack.replacePlugins($0, savedState: nil) }), samePorts {
                    report.reconfigured.append("rack \(want.name) plugins")
                }
                if current.mix != want.mix { rack.plugins.chain?.mix = want.mix }
                if current.gainDB != want.gainDB { rack.plugins.chain?.gainDB = want.gainDB }
                if samePorts {
                    rackConfigs[want.name] = want
                    continue
                }
                // The new chain's side inputs differ from the ports: the rack is re-created with the new ones (the
                // connection rules connect them as they appear); no stale port stays behind.
                report.reconfigured.append("rack \(want.name) side inputs")
                try reopenRack(want, &report, strict: strict)
            case .reopen(let want):
                try reopenRack(want, &report, strict: strict)
            case .open(let want):
                try openRack(want, &report, strict: strict)
            }
        }
        keptRackValues = keptRackValues.filter { name, _ in wanted.racks.contains { $0.name == name } }
    }

    private func reopenRack(_ want: RackConfig, _ report: inout ApplyReport, strict: Bool) throws(EngineError) {
        racks.removeValue(forKey: want.name)?.close()
        rackConfigs[want.name] = nil
        report.clientsClosed += 1
        try openRack(want, &report, strict: strict)
    }

    private func openRack(_ want: RackConfig, _ report: inout ApplyReport, strict: Bool) throws(EngineError) {
        racks[want.name] = try Rack(config: want, server: server, logger: rackLogger, strictPlugins: strict,
                                    loopWakeup: environment.loopWakeup)
        rackConfigs[want.name] = want
        // The same rack after a server loss: the values it ran with, which its saved state may predate.
        if let kept = keptRackValues.removeValue(forKey: want.name),
           kept.rack == preset?.racks.first(where: { $0.name == want.name }) {
            restoreValues(kept.values, rack: want.name)
        }
        report.clientsOpened += 1
        report.portsRegistered += want.inputs.count + want.outputs.count
    }

    /// Starts an isolated rack's process under a supervisor.
    func startIsolated(_ section: RackSection, _ wanted: Preset, _ report: inout ApplyReport) throws(EngineError) {
        if let c = patchClient, c.clientExists(section.client) {
            throw EngineError(.badConfig, "rack '\(section.name)': the JACK client name '\(section.client)' is"
                              + " taken (another client of the server has it)")
        }
        let supervisor = RackSupervisor(rack: section, document: Self.rackDocument(section, wanted.session, maps: wanted.maps),
                                        arguments: childArguments(section, maps: wanted.maps),
                                        logPath: rackLogPath(section, wanted.session), logger: rackLogger,
                                        loopWakeup: environment.loopWakeup)
        supervisor.maps = Self.mapsRunningIn(section, wanted.maps)
        let config = RackConfig(section: section, session: wanted.session)
        supervisor.ports = (config.inputs.count, config.outputs.count)
        // The same rack after a server loss (or a restart for its maps): its saved state may predate what it
        // acknowledged, so the process is given those values again once it is ready (`replayRackValues`).
        if let kept = keptRackValues.removeValue(forKey: section.name), kept.rack == section, !kept.values.isEmpty {
            supervisor.shadow = kept.values
            supervisor.replay = kept.values
        }
        try supervisor.start(now: clock.real())
        supervisors[section.name] = supervisor
        report.clientsOpened += 1
    }

    var rackLogger: Logger { Logger(label: "tandem.rack") }

    /// Closes every rack and stops every supervisor (their children end cleanly).
    func closeRacks(_ report: inout ApplyReport) {
        for name in racks.keys.sorted() {
            guard let rack = racks.removeValue(forKey: name) else { continue }
            // Kept for a restore after a server loss (`openRack`).
            if let c = rack.plugins.chain, !c.isEmpty, let section = preset?.racks.first(where: { $0.name == name }) {
                keptRackValues[name] = (section, ChainShadow(specs: c.currentSpecs, mix: c.mix, gainDB: c.gainDB))
            }
            rack.close()
            report.clientsClosed += 1
        }
        rackConfigs.removeAll()
        for name in supervisors.keys.sorted() {
            guard let s = supervisors.removeValue(forKey: name) else { continue }
            keepValues(of: s)
            s.stop()
            report.clientsClosed += 1
        }
        patchOnlyClient?.close()
        patchOnlyClient = nil
    }

    /// The child's command line: `tandem rack --child` and the rack's name, its heartbeat on fd 3, and its marker
    /// maps (a preset without a recorder cannot hold them: the process relays their markers to this session). The
    /// supervisor adds its control port and the document channel (fd 4), on which the rest of the rack's
    /// configuration arrives (`rackDocument`).
    func childArguments(_ rack: RackSection, maps: [ControlMap]) -> [String] {
        var args = [Self.tandemExecutable, "rack", "--child", "--heartbeat-fd", "3", "--name", rack.name, "--no-view"]
        for map in Self.mapsRunningIn(rack, maps) where map.isMarker { args += ["--map", map.description] }
        return args
    }

    /// An isolated rack's configuration as its process reads it: a preset holding what the process takes of the
    /// session (its name, server, folder made absolute, tempo and meter; the session's other keys speak of its
    /// recorder, player and surfaces, and would not load without them), the rack's `[[rack]]` table and the maps
    /// that run in its process, as `Preset.toml()` writes them.
    static func rackDocument(_ rack: RackSection, _ session: SessionSection, maps: [ControlMap]) -> String {
        var document = Preset()
        document.session.name = session.name
        document.session.server = session.server
        document.session.directory = URL(fileURLWithPath: session.directory).standardizedFileURL.path
        document.session.tempo = session.tempo
        document.session.meter = session.meter
        document.session.loudness = session.loudness
        document.racks = [rack]
        document.maps = mapsRunningIn(rack, maps).filter { !$0.isMarker }
        return document.toml()
    }

    /// The maps an isolated rack's own process runs: those that hear its MIDI and drive its plugins, and marker
    /// maps (it relays their markers to the session). The session hears the MIDI of its in-process racks only.
    static func mapsRunningIn(_ rack: RackSection, _ maps: [ControlMap]) -> [ControlMap] {
        maps.filter { map in (map.rack == nil || map.rack == rack.name) && (map.plugin?.engine == rack.name || map.isMarker) }
    }

    /// Where an isolated rack's process logs: beside its plugin state.
    func rackLogPath(_ rack: RackSection, _ session: SessionSection) -> String {
        let dir = Self.pluginStateDirectory(session, engine: .rack(rack.name))
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir + ".log"
    }

    /// This program (an isolated rack's child is Tandem itself).
    static var tandemExecutable: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    }

    /// Supervises the isolated racks: a crash or hang is an event, a log line, the status, and a note in the report
    /// of a take recording the rack's output; the supervisor restarts the process.
    func tickRacks() {
        guard !supervisors.isEmpty else { return }
        let now = patchClient?.frameTime ?? 0
        let moving = now != rackCheckFrameTime
        rackCheckFrameTime = now
        for name in supervisors.keys.sorted() {
            guard let s = supervisors[name] else { continue }
            let wasDown = s.downSince != nil
            defer {
                for e in s.takeRelayedEvents() {
                    if e.kind == "control" {
                        relayedControl(e.text)   // a change the rack's process applied, for the take's log
                    } else if e.kind == "mark" {
                        // A marker map fired in the rack's process: "FRAMETIME LABEL".
                        let parts = e.text.split(separator: " ", maxSplits: 1).map(String.init)
                        if let frame = parts.first.flatMap({ UInt32($0) }),
                           !markFromMap(label: parts.count > 1 ? parts[1] : "", frameTime: frame) {
                            events.append(.mapFailed("rack \(name): no take is running: marker not kept"))
                        }
                    } else if let problem = Self.relayedPluginProblem(e, rack: name) {
                        // The rack's process runs without a plugin (or a setting): said like a problem of a chain
                        // here, and noted in the take being recorded.
                        events.append(.pluginProblem(engine: name, plugin: problem.plugin, bypassed: problem.bypassed,
                                                     message: problem.message))
                        var noted = problem
                        noted.plugin = "\(name):\(problem.plugin)"
                        if let r = recorder, r.isRecording { r.notePluginProblems([noted]) }
                    } else {
                        // A change its process made is the same event as an in-process rack's (typed fields on
                        // the event stream), else passed on as told.
                        events.append(Self.typedRelayedEvent(e) ?? .relayed(kind: e.kind, text: e.text))
                    }
                }
            }
            defer { replayRackValues(s) }
            if let incident = s.poll(serverMoving: moving, now: clock.real()) {
                // Its process ended with the server: the one started next may restore older saved state.
                if incident == .serverLost, !s.shadow.isEmpty { s.replay = s.shadow }
                let what: String
                switch incident {
                case .crashed(let why): what = "crashed: \(why)"
                case .hung(let seconds): what = "hung for \(String(format: "%.1f", seconds)) s"
                case .hungStarting(let seconds):
                    what = "hung while starting (not ready after \(String(format: "%.1f", seconds)) s)"
                case .frozen(let seconds):
                    what = "frozen (its process stopped for \(String(format: "%.2f", seconds)) s): killed"
                case .refused(let why):
                    what = "refused to start: \(why) (tried again in \(Int(RackSupervisor.refusedRetrySeconds)) s)"
                case .serverLost:
                    what = "stopped: its JACK server went away (it starts again with the server)"
                }
                events.append(.rackDown(rack: name, what: what))
                noteRackIncident(name, what: what, back: false)
            } else if wasDown && s.downSince == nil, let seconds = s.lastRecoverySeconds {
                events.append(.rackBack(rack: name, seconds: seconds))
                noteRackIncident(name, what: "", back: true)
                logger.info("rack is back", metadata: ["rack": "\(name)", "seconds": "\(String(format: "%.2f", seconds))"])
            }
        }
    }

    /// A `control-changed`, `bypass-changed` or `chain-level-changed` event an isolated rack's process relayed, as
    /// `ControlProtocol.describe` writes it, read back into the session's event; nil for any other.
    static func typedRelayedEvent(_ e: (kind: String, text: String)) -> SessionEvent? {
        let w = e.text.split(separator: " ").map(String.init)
        switch e.kind {
        case "control-changed" where w.count == 5:
            guard let v = Float(w[3]), v.isFinite else { return nil }
            return .controlChanged(engine: w[0], plugin: w[1], symbol: w[2], value: v, source: w[4])
        case "bypass-changed" where w.count == 4 && (w[2] == "1" || w[2] == "0"):
            return .bypassChanged(engine: w[0], plugin: w[1], bypassed: w[2] == "1", source: w[3])
        case "chain-level-changed" where w.count == 4:
            guard let m = Double(w[1]), let g = Double(w[2]), m.isFinite, g.isFinite else { return nil }
            return .chainLevelChanged(engine: w[0], mix: m, gainDB: g, source: w[3])
        default:
            return nil
        }
    }

    /// A `plugin-bypassed` / `plugin-ignored` event an isolated rack's process relayed ("RACK PLUGIN: MESSAGE", as
    /// `ControlProtocol.describe` writes it), or nil for any other event.
    static func relayedPluginProblem(_ e: (kind: String, text: String), rack: String) -> TakeReport.PluginProblem? {
        guard e.kind == "plugin-bypassed" || e.kind == "plugin-ignored" else { return nil }
        var rest = Substring(e.text)
        if rest.hasPrefix(rack + " ") { rest = rest.dropFirst(rack.count + 1) }
        guard let colon = rest.range(of: ": ") else { return nil }
        return TakeReport.PluginProblem(plugin: String(rest[..<colon.lowerBound]), code: "relayed",
                                        bypassed: e.kind == "plugin-bypassed", message: String(rest[colon.upperBound...]))
    }

    /// Tells a running take fed by the rack's outputs (connected to the recorder's inputs, or meant to be by a rule:
    /// a crashed rack's ports are gone) what happened.
    private func noteRackIncident(_ rack: String, what: String, back: Bool) {
        guard let r = recorder, r.isRecording, let section = supervisors[rack]?.rack, let p = preset else { return }
        let outputs = RackConfig(section: section, session: p.session).outputs.map { "\(section.client):\($0)" }
        let ruled = Patchbay.desired(p.connections, outputs: outputs, inputs: r.ports.map(\.name)).map(\.destination)
        let connected = r.ports.filter { port in r.client.connections(of: port.name).contains(where: outputs.contains) }
            .map(\.name)
        let prefix = r.client.name + ":"
        let channels = Set(ruled + connected).map { String($0.dropFirst(prefix.count)) }.sorted(by: Patchbay.portOrder)
        guard !channels.isEmpty else { return }
        r.noteRackIncident(rack: rack, what: what, channels: channels, back: back)
    }
}

extension RackConfig {
    /// The rack a `[[rack]]` table asks for. Inputs left out: what the first plugin takes (2 when it cannot be looked
    /// up); outputs left out: what the chain gives from them (`ChainLayout`: mono→stereo, stereo→mono, N instances
    /// of a mono plugin); the chain's side inputs (side-chain and optional audio inputs) become input ports named
    /// `<plugin>_<port symbol>`.
    public init(section r: RackSection, session: SessionSection, host: PluginHost = .shared) {
        self.init()
        name = r.name
        clientName = r.client
        plugins = r.plugins
        gainDB = r.gainDB
        mix = r.mix
        let named = PluginSpec.uniqueNames(r.plugins)
        let infos = named.compactMap { spec in host.plugin(spec.uri).map { (spec, $0) } }
        // An instrument first (no audio input): no audio input port unless asked (the same shape a render takes).
        let (ins, outs) = ChainLayout.throughShape(r.plugins, inputs: r.inputs?.count, outputs: r.outputs?.count,
                                                   label: "rack \(r.name)", host: host)
        let plan = ChainLayout.plan(infos, inputs: ins, outputs: r.outputs?.count, label: "rack \(r.name)")
        inputs = r.inputs ?? (0..<ins).map { "in_\($0 + 1)" }
        outputs = r.outputs ?? (1...max(1, outs)).map { "out_\($0)" }
        sideInputs = zip(infos, plan.stages).flatMap { pair, stage -> [String] in
            guard let stage else { return [] }
            return stage.sideInputs.map { "\(pair.0.name)_\(pair.1.ports[$0].symbol)" }
        }
        sideOutputs = zip(infos, plan.stages).flatMap { pair, stage -> [String] in
            guard let stage else { return [] }
            return (0..<max(1, stage.instances)).flatMap { i in
                stage.sideOutputs.map { "\(pair.0.name)_\(pair.1.ports[$0].symbol)" + (i > 0 ? "_\(i + 1)" : "") }
            }
        }
        (midiInputs, midiOutputs) = Self.midiPorts(r, infos: infos.map(\.1))
        tempo = session.tempo
        meter = session.meter
        pluginState = session.restorePlugins ? Session.pluginStateDirectory(session, engine: .rack(r.name)) : nil
        if !r.loudnessOff, r.loudness || session.loudness { loudness = .programme(channels: outputs.count) }
    }
}
