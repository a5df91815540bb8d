import Foundation
import Jack
import Logging
import Plugins
import Presets

// Racks in a session: in-process ones applied by diff like the other engines, isolated ones run by a supervisor
// (each in a child process that is Tandem itself), and what a rack going down means for a running take.
extension Session {
    /// Whether a rack runs in a child process: as the preset says, else whenever the session also records.
    static func isolates(_ rack: RackSection, in preset: Preset) -> Bool { rack.isolate ?? (preset.recorder != nil) }

    /// Brings the racks to `wanted`'s: closes the ones gone or changed beyond their plugins, rebuilds chains whose
    /// plugins changed, opens the new ones. `strict`: a plugin that cannot run stops the apply.
    func applyRacks(_ wanted: Preset, _ report: inout ApplyReport, strict: Bool) throws(EngineError) {
        let wantedNames = Set(wanted.racks.map(\.name))
        for name in racks.keys.sorted() where !wantedNames.contains(name) || wanted.racks.first(where: { $0.name == name })
            .map({ Self.isolates($0, in: wanted) }) == true {
            racks.removeValue(forKey: name)?.close()
            rackConfigs[name] = nil
            report.clientsClosed += 1
        }
        for name in supervisors.keys.sorted() {
            guard let s = supervisors[name], let section = wanted.racks.first(where: { $0.name == name }),
                  Self.isolates(section, in: wanted), s.maps == Self.mapsRunningIn(section, wanted.maps) else {
                supervisors.removeValue(forKey: name)?.stop()
                report.clientsClosed += 1
                continue
            }
            if s.rack == section { continue }
            // Plugins, settings, gain or mix changed and the ports stay: the process takes the rack as a document,
            // as an in-process rack takes a changed preset (no restart, no gap). Else it starts anew.
            let current = RackConfig(section: s.rack, session: wanted.session)
            let want = RackConfig(section: section, session: wanted.session)
            var document = Preset()
            document.session = wanted.session
            document.racks = [section]
            if current.sameClient(as: want), s.update(section, document: document.toml(),
                                                      arguments: childArguments(section, wanted.session, maps: wanted.maps)) {
                s.ports = (want.inputs.count, want.outputs.count)
                report.reconfigured.append("rack \(name) (in its process)")
            } else {
                supervisors.removeValue(forKey: name)?.stop()
                report.clientsClosed += 1
            }
        }
        if patchOnlyClient == nil && recorder == nil && player == nil && racks.isEmpty && !wanted.racks.isEmpty
            && wanted.racks.allSatisfy({ Self.isolates($0, in: wanted) }) {
            // Isolated racks only: the session still needs a client of its own to watch and patch the graph (and
            // to see a rack's client name taken before its process tries it).
            do {
                patchOnlyClient = try JackClient(name: "\(wanted.session.name)-patch", server: server, logger: logger)
                // Active, so graph notifications arrive; without a process callback, so it is never woken per cycle.
                try patchOnlyClient?.activateForNotifications()
            } catch {
                throw EngineError(.jack, "cannot open the session's patch client: \(error)")
            }
        }
        for section in wanted.racks {
            if Self.isolates(section, in: wanted) {
                guard supervisors[section.name] == nil else { continue }
                if let c = patchClient, c.clientExists(section.client) {
                    throw EngineError(.badConfig, "rack '\(section.name)': the JACK client name '\(section.client)' is"
                                      + " taken (another client of the server has it)")
                }
                let supervisor = RackSupervisor(rack: section, arguments: childArguments(section, wanted.session,
                                                                                         maps: wanted.maps),
                                                logPath: rackLogPath(section, wanted.session), logger: rackLogger)
                supervisor.maps = Self.mapsRunningIn(section, wanted.maps)
                let config = RackConfig(section: section, session: wanted.session)
                supervisor.ports = (config.inputs.count, config.outputs.count)
                try supervisor.start()
                supervisors[section.name] = supervisor
                report.clientsOpened += 1
                continue
            }
            let want = RackConfig(section: section, session: wanted.session)
            if let rack = racks[section.name], let current = rackConfigs[section.name] {
                if current.sameClient(as: want) {
                    var samePorts = true
                    if current != want {
                        if applyPlugins(.rack(section.name), current: current.plugins, want: want.plugins, chain: rack.plugins.chain,
                                             replace: { samePorts = rack.replacePlugins($0, savedState: nil) }),
                           samePorts {
                            report.reconfigured.append("rack \(section.name) plugins")
                        }
                        if current.mix != want.mix { rack.plugins.chain?.mix = want.mix }
                        if current.gainDB != want.gainDB { rack.plugins.chain?.gainDB = want.gainDB }
                    }
                    if samePorts {
                        rackConfigs[section.name] = want
                        continue
                    }
                    // The new chain's side inputs differ from the ports: the rack is re-created with the new ones
                    // (the connection rules connect them as they appear); no stale port stays behind.
                    report.reconfigured.append("rack \(section.name) side inputs")
                }
                rack.close()
                racks[section.name] = nil
                report.clientsClosed += 1
            }
            racks[section.name] = try Rack(config: want, server: server, logger: rackLogger, strictPlugins: strict)
            rackConfigs[section.name] = want
            report.clientsOpened += 1
            report.portsRegistered += want.inputs.count + want.outputs.count
        }
    }

    var rackLogger: Logger { Logger(label: "tandem.rack") }

    /// Closes every rack and stops every supervisor (their children end cleanly).
    func closeRacks(_ report: inout ApplyReport) {
        for name in racks.keys.sorted() {
            racks.removeValue(forKey: name)?.close()
            report.clientsClosed += 1
        }
        rackConfigs.removeAll()
        for name in supervisors.keys.sorted() {
            supervisors.removeValue(forKey: name)?.stop()
            report.clientsClosed += 1
        }
        patchOnlyClient?.close()
        patchOnlyClient = nil
    }

    /// The child's command line: `tandem rack` with the rack's settings, its plugin state kept in the session folder
    /// (restored at each start, saved on changes), and the heartbeat on fd 3.
    func childArguments(_ rack: RackSection, _ session: SessionSection, maps: [ControlMap] = []) -> [String] {
        var args = [Self.tandemExecutable, "rack", "--child", "--heartbeat-fd", "3", "--name", rack.name,
                    "--client", rack.client, "--dir", session.directory, "--session", session.name, "--no-view"]
        if let s = session.server { args += ["--server", s] }
        for p in rack.inputs ?? [] { args += ["--input", p] }
        for p in rack.outputs ?? [] { args += ["--output", p] }
        if rack.inputs?.isEmpty == true { args += ["--inputs", "0"] }
        args += Self.midiArguments(rack, session)
        if rack.gainDB != 0 { args += ["--gain=\(rack.gainDB)"] }
        if rack.mix != 1 { args += ["--mix", "\(rack.mix)"] }
        for spec in rack.plugins { args += ["--plugin", spec.commandLine] }
        for map in Self.mapsRunningIn(rack, maps) { args += ["--map", map.description] }
        args += ["--on-plugin-error", "bypass"]
        return args
    }

    /// The maps an isolated rack's own process runs: those that hear its MIDI and drive its plugins, and marker
    /// maps (it relays their markers to the session). The session hears the MIDI of its in-process racks only.
    static func mapsRunningIn(_ rack: RackSection, _ maps: [ControlMap]) -> [ControlMap] {
        maps.filter { map in
            var marks = false
            if case .marker = map.target { marks = true }
            return (map.rack == nil || map.rack == rack.name) && (map.plugin?.engine == rack.name || marks)
        }
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
                        events.append(.relayed(kind: e.kind, text: e.text))
                    }
                }
            }
            if let incident = s.poll(serverMoving: moving) {
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
    }
}
