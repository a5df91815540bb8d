import Foundation
import Jack
import Logging
import Presets
import Realtime
import SoundFile

/// What a session reports to its owner (the command line prints these).
public enum SessionEvent: Sendable {
    case recorder(RecorderEvent)
    case player(PlayerEvent)
    case connected(String, String)
    case disconnected(String, String)
    /// Someone removed a connection a rule made: kept removed (respect) or made again (repair).
    case manualDisconnect(String, String, repaired: Bool)
    case serverLost(String)
    case serverBack
    case refused(String)
    /// A plugin of an engine's chain could not run as asked: left out (`bypassed`: the chain runs without it) or
    /// one of its settings ignored. Sent whenever a chain is built with problems (at start with
    /// `on_plugin_error = "bypass"`, after a server restart, when a re-applied preset rebuilds it).
    case pluginProblem(engine: String, plugin: String, bypassed: Bool, message: String)
}

/// What one `apply` changed in the JACK graph and in the engines.
public struct ApplyReport: Sendable, Equatable, CustomStringConvertible {
    public var clientsOpened = 0
    public var clientsClosed = 0
    public var portsRegistered = 0
    public var connected = 0
    public var disconnected = 0
    /// Engines whose settings changed without touching the graph ("recorder", "player").
    public var reconfigured: [String] = []

    public var graphChanges: Int { clientsOpened + clientsClosed + portsRegistered + connected + disconnected }

    public var description: String {
        "clients +\(clientsOpened)/-\(clientsClosed), ports +\(portsRegistered), connections +\(connected)/-\(disconnected)"
            + (reconfigured.isEmpty ? "" : ", reconfigured: " + reconfigured.joined(separator: ", "))
    }
}

/// What the owner should do after `poll`.
public enum SessionOutcome: Equatable, Sendable {
    case running
    /// The session is done, for this reason (the command line maps it to an exit code).
    case finished(SessionEnd)
}

/// Why a session ended by itself.
public enum SessionEnd: Equatable, Sendable {
    /// A take with a duration or stop time ended (start mode immediately).
    case takeComplete
    /// The server went away and the preset says `on_server_loss = "stop"`.
    case serverLost
    /// A disk error ended a take and the preset says `on_disk_error = "stop"`.
    case diskError
}

/// One connection, output to input.
struct Connection: Hashable, Comparable {
    var source: String
    var destination: String
    static func < (a: Connection, b: Connection) -> Bool {
        (a.source, a.destination) < (b.source, b.destination)
    }
}

/// The session coordinator: the one owner of the server choice, both engines, the desired connections, the takes
/// and the workers. It applies a preset by comparing what is wanted with what is there and touches the graph only
/// where they differ, so applying the same setup twice changes nothing.
///
/// Threads: control side only. `apply` takes a lock, so a second apply waits for the first.
public final class Session: @unchecked Sendable {
    public private(set) var preset: Preset?
    public private(set) var recorder: Recorder?
    public private(set) var player: Player?
    public let workers = WorkerRegistry()
    private(set) var recorderConfig: RecorderConfig?
    private var playerConfig: PlayerConfig?
    private let applyLock = NSLock()
    private let logger: Logger
    private let patchLogger: Logger
    private var made = Set<Connection>()
    private var suppressed = Set<Connection>()
    private var graphGeneration = -1
    var events: [SessionEvent] = []
    let meterTap = MeterTap()
    private var lost = false
    private var lostAt: Date?
    private var retryAt = Date()
    private var backoff = 0.1
    private var rolling = false
    /// The highest take number this session has started (takes keep counting when the recorder is re-created).
    private var lastTake = 0
    private var outcome: SessionOutcome = .running
    /// Where the player was when the server was lost (see Session+PlayerResume.swift).
    var playerResume: PlayerResumePoint?
    var lastPluginSave = Date.distantPast
    /// The chain whose problems were last announced, per engine (weak: a freed chain never matches a new one).
    var announcedChains: [ChainEngine: WeakChain] = [:]
    /// Whether the first apply succeeded: from then on a plugin that cannot run is bypassed, whatever
    /// `on_plugin_error` says (a running session never stops for it).
    private var started = false
    let pluginLogger = Logger(label: "tandem.plugins")

    public init(logger: Logger = Logger(label: "tandem.session")) {
        self.logger = logger
        patchLogger = Logger(label: "tandem.patch")
    }

    /// Whether the session is waiting for its lost server to come back.
    public var isWaitingForServer: Bool { lost }

    /// The server the session uses (nil: `$JACK_DEFAULT_SERVER` or "default").
    public var server: String? { preset?.session.server }

    /// The client used for graph queries and connections.
    var patchClient: JackClient? { recorder?.client ?? player?.client }

    // MARK: Apply

    /// Brings the session to `wanted`, changing only what differs. Waits if another apply is running.
    @discardableResult
    public func apply(_ wanted: Preset) throws(EngineError) -> ApplyReport {
        applyLock.lock()
        defer { applyLock.unlock() }
        let report = try applyLocked(wanted, notes: [])
        started = true
        return report
    }

    /// Whether an engine created now must refuse to start when a plugin cannot run.
    private var strictPlugins: Bool { !started && preset?.session.onPluginError != .bypass }

    private func applyLocked(_ wanted: Preset, notes: [String]) throws(EngineError) -> ApplyReport {
        var report = ApplyReport()
        if let old = preset, old.session.server != wanted.session.server {
            logger.info("server changed: closing both clients", metadata: ["server": "\(JackServer.effectiveName(wanted.session.server))"])
            closeEngines(&report, end: .stopped)
        }
        preset = wanted

        // Recorder.
        let wantRecorder = wanted.recorder.map { RecorderConfig(section: $0, session: wanted.session) }
        if let r = recorder, let current = recorderConfig {
            if let want = wantRecorder, current.sameClient(as: want) {
                if current != want {
                    if Self.applyPlugins(current: current.plugins, want: want.plugins, chain: r.plugins.chain,
                                         replace: { r.replacePlugins($0, savedState: nil) }) {
                        report.reconfigured.append("recorder plugins")
                    }
                    if !current.differsOnlyInPlugins(from: want) {
                        r.reconfigure(want)
                        report.reconfigured.append("recorder")
                        logger.info("recorder settings changed; they apply from the next take")
                    }
                    recorderConfig = want
                }
            } else {
                r.close(end: .stopped, detail: "the preset changed the recorder's client or ports")
                recorder = nil
                recorderConfig = nil
                report.clientsClosed += 1
                workers.finish("take")
            }
        }
        var newRecorder = false
        if recorder == nil, var want = wantRecorder {
            want.firstTake = lastTake + 1
            if wanted.session.createDirectory && !FileManager.default.fileExists(atPath: want.directory) {
                do {
                    try FileManager.default.createDirectory(atPath: want.directory, withIntermediateDirectories: true)
                } catch {
                    throw EngineError(.badDirectory, "cannot create output directory '\(want.directory)': \(error.localizedDescription)")
                }
            }
            recorder = try Recorder(config: want, server: server, logger: Logger(label: "tandem.rec"),
                                    strictPlugins: strictPlugins)
            want.firstTake = 1
            recorderConfig = want
            report.clientsOpened += 1
            report.portsRegistered += want.ports.count
            newRecorder = true
        }

        // Player.
        let wantPlayer = wanted.player.map { PlayerConfig(section: $0, session: wanted.session) }
        if let pl = player, let current = playerConfig {
            if let want = wantPlayer, current.sameClient(as: want) {
                if current != want {
                    if Self.applyPlugins(current: current.plugins, want: want.plugins, chain: pl.plugins.chain,
                                         replace: { pl.replacePlugins($0, savedState: nil) }) {
                        report.reconfigured.append("player plugins")
                    }
                    if current.gainDB != want.gainDB { pl.setGain(dB: want.gainDB) }
                    if current.loop != want.loop || current.channelMap != want.channelMap
                        || current.resampleQuality != want.resampleQuality {
                        pl.reconfigure(loop: want.loop, map: want.channelMap, quality: want.resampleQuality)
                    }
                    if current.queue != want.queue { pl.load(want.queue) }
                    if !current.differsOnlyInPlugins(from: want) { report.reconfigured.append("player") }
                    playerConfig = want
                }
            } else {
                pl.close()
                player = nil
                playerConfig = nil
                report.clientsClosed += 1
                workers.finish("playback")
            }
        }
        var newPlayer = false
        if player == nil, var want = wantPlayer {
            want.startImmediately = false
            do {
                player = try Player(config: want, server: server, logger: Logger(label: "tandem.play"),
                                    strictPlugins: strictPlugins)
            } catch {
                // Nothing started: the recorder this apply opened goes too.
                if newRecorder, let r = recorder {
                    r.close(end: .stopped, detail: "the player could not start")
                    recorder = nil
                    recorderConfig = nil
                }
                throw error
            }
            playerConfig = want
            report.clientsOpened += 1
            report.portsRegistered += want.ports.count
            newPlayer = true
            if let seek = wanted.player?.seekSeconds, seek > 0, let first = want.queue.first,
               let rate = try? SoundFileReader(path: first).sampleRate {
                // Cued (the reader has taken the jump) before anything plays: no stale frame from the top goes out.
                _ = player?.cue(item: 0, frame: Limits.frames(seconds: seek, rate: Double(rate)) ?? 0)
            }
            cueResumedPlayer()
        }

        applyRules(&report)
        start(newRecorder: newRecorder, newPlayer: newPlayer, notes: notes)
        if report.graphChanges > 0 || !report.reconfigured.isEmpty {
            logger.info("preset applied", metadata: ["changes": "\(report)"])
        } else {
            logger.info("preset applied: nothing changed")
        }
        return report
    }

    private func closeEngines(_ report: inout ApplyReport, end: TakeEnd, detail: String? = nil) {
        if let r = recorder {
            r.close(end: end, detail: detail)
            forward(r.drainEvents())
            report.clientsClosed += 1
        }
        if let p = player {
            p.close()
            report.clientsClosed += 1
        }
        recorder = nil
        player = nil
        recorderConfig = nil
        playerConfig = nil
        made.removeAll()
        workers.finish("take")
        workers.finish("playback")
    }

    /// Starts what the start modes ask for, on engines created by this apply.
    private func start(newRecorder: Bool, newPlayer: Bool, notes: [String]) {
        let recStart = preset?.recorder?.start
        let playStart = preset?.player?.start
        if let r = recorder, let p = player, newRecorder || newPlayer, playStart == .withRecorder {
            // Record-while-playing: both start on the same frame, a few periods ahead.
            p.waitForFill(seconds: 5)
            let at = p.client.frameTime &+ UInt32(4 * max(64, p.client.bufferSize))
            r.startTake(atFrameTime: at, notes: notes,
                        playback: PlaybackAlignment(files: p.queue, startFrameTime: at, from: p.position))
            p.play(atFrameTime: at)
            return
        }
        if newRecorder, recStart == .immediately, let r = recorder { r.startTake(at: r.streamPosition, notes: notes) }
        if newPlayer, playsOnStart(playStart), let p = player {
            p.waitForFill(seconds: 5)
            p.play()
        }
    }

    // MARK: Connection rules

    /// Makes the connections the rules want and that are missing; removes only connections this session made
    /// whose rule is gone. Connections made by others are never touched.
    private func applyRules(_ report: inout ApplyReport) {
        guard let c = patchClient, let p = preset else { return }
        // Read before the ports: a change while this pass runs (a net driver re-creating its ports) makes another.
        let generationAtStart = generation(c)
        let desired = desiredConnections(p.connections, client: c)
        var connected: [String: Set<String>] = [:]
        func isConnected(_ x: Connection) -> Bool {
            let set = connected[x.source] ?? Set(c.connections(of: x.source))
            connected[x.source] = set
            return set.contains(x.destination)
        }
        for x in made.sorted() where !desired.contains(x) {
            made.remove(x)
            if isConnected(x) {
                do {
                    try c.disconnect(x.source, x.destination)
                    report.disconnected += 1
                    events.append(.disconnected(x.source, x.destination))
                    patchLogger.info("disconnected (rule removed)", metadata: ["from": "\(x.source)", "to": "\(x.destination)"])
                } catch {
                    patchLogger.warning("cannot disconnect", metadata: ["error": "\(error)"])
                }
            }
        }
        suppressed.formIntersection(desired)
        for x in desired.sorted() where !suppressed.contains(x) {
            if isConnected(x) {
                made.insert(x)
                continue
            }
            do {
                try c.connect(x.source, x.destination)
                made.insert(x)
                report.connected += 1
                events.append(.connected(x.source, x.destination))
                patchLogger.info("connected", metadata: ["from": "\(x.source)", "to": "\(x.destination)"])
            } catch {
                patchLogger.warning("cannot connect", metadata: ["error": "\(error)"])
            }
        }
        graphGeneration = generationAtStart
    }

    /// Every connection the rules ask for among the ports that exist now.
    func desiredConnections(_ rules: [ConnectionRule], client c: JackClient) -> Set<Connection> {
        let outputs = c.ports(direction: .output)
        let inputs = c.ports(direction: .input)
        var out = Set<Connection>()
        for rule in rules {
            let sources = outputs.filter(rule.from.matches).sorted(by: Patching.portOrder)
            let destinations = inputs.filter(rule.to.matches).sorted(by: Patching.portOrder)
            switch rule.mode {
            case .pairs:
                for (s, d) in zip(sources, destinations) { out.insert(Connection(source: s, destination: d)) }
            case .all:
                for s in sources { for d in destinations { out.insert(Connection(source: s, destination: d)) } }
            }
        }
        return out
    }

    private func generation(_ c: JackClient) -> Int {
        let n = c.notifications
        return n.count(.portRegistered) + n.count(.portUnregistered) + n.count(.portConnected)
            + n.count(.portDisconnected) + n.count(.portRenamed)
    }

    /// After a graph change: a rule connection that disappeared while both ports still exist was removed by
    /// someone: respected or repaired per the preset; one whose port went away is forgotten (made again when the
    /// port returns). Then the rules are applied to whatever ports exist now.
    private func graphChanged() {
        guard let c = patchClient, let p = preset else { return }
        let existing = Set(c.ports())
        var connectedCache: [String: Set<String>] = [:]
        for x in made.sorted() {
            let set = connectedCache[x.source] ?? Set(c.connections(of: x.source))
            connectedCache[x.source] = set
            if set.contains(x.destination) { continue }
            made.remove(x)
            guard existing.contains(x.source) && existing.contains(x.destination) else { continue }
            if p.session.onManualDisconnect == .respect {
                suppressed.insert(x)
                events.append(.manualDisconnect(x.source, x.destination, repaired: false))
                patchLogger.info("connection removed by someone else; respecting it",
                                 metadata: ["from": "\(x.source)", "to": "\(x.destination)"])
            } else {
                events.append(.manualDisconnect(x.source, x.destination, repaired: true))
                patchLogger.info("connection removed by someone else; repairing it",
                                 metadata: ["from": "\(x.source)", "to": "\(x.destination)"])
            }
        }
        var report = ApplyReport()
        applyRules(&report)
    }

    // MARK: Running

    /// Reacts to everything that happened since the last call: server loss and return, graph changes, transport,
    /// worker deadlines, engine events. Call it every few tens of milliseconds from the control loop.
    public func poll() -> SessionOutcome {
        guard outcome == .running else { return outcome }
        if lost {
            retryServer()
            return outcome
        }
        if let reason = lostReason() {
            serverLost(reason)
            return outcome
        }
        if let c = patchClient, generation(c) != graphGeneration { graphChanged() }
        pollTransport()
        workers.tick()
        tickPlugins()
        announcePluginProblems()
        if let r = recorder { handleRecorderEvents(r.drainEvents()) }
        if let p = player { handlePlayerEvents(p.drainEvents()) }
        return outcome
    }

    private func lostReason() -> String? {
        for c in [recorder?.client, player?.client].compactMap({ $0 }) where c.wasShutDown {
            return c.notifications.shutdownReason ?? "the JACK server shut the client down"
        }
        return nil
    }

    private func serverLost(_ reason: String) {
        logger.error("JACK server lost", metadata: ["reason": "\(reason)"])
        events.append(.serverLost(reason))
        rememberPlayer()
        var report = ApplyReport()
        closeEngines(&report, end: .serverLost, detail: reason)
        lostAt = Date()
        if preset?.session.onServerLoss == .stop {
            outcome = .finished(.serverLost)
            return
        }
        lost = true
        backoff = 0.05
        retryAt = Date()
        workers.start("reconnect", detail: "waiting for JACK server '\(JackServer.effectiveName(server))'")
    }

    private func retryServer() {
        guard Date() >= retryAt, let p = preset else { return }
        let name = JackServer.effectiveName(server)
        guard JackServer.probe(name) else {
            backoff = min(backoff * 2, 0.4)
            retryAt = Date().addingTimeInterval(backoff)
            return
        }
        lost = false
        workers.finish("reconnect")
        let lostText = lostAt.map { ISO8601DateFormatter().string(from: $0) } ?? "earlier"
        do {
            applyLock.lock()
            defer { applyLock.unlock() }
            preset = nil
            _ = try applyLocked(p, notes: ["resumed after the JACK server was lost at \(lostText); the gap between "
                                           + "the previous take's end and this take's start was not recorded"])
            playerResume = nil
            events.append(.serverBack)
            logger.info("JACK server is back: clients, ports and connections restored")
        } catch {
            logger.error("JACK server is back but the session could not be restored", metadata: ["error": "\(error)"])
            lost = true
            retryAt = Date().addingTimeInterval(0.5)
        }
    }

    private func pollTransport() {
        let recTransport = preset?.recorder?.start == .transport
        let playTransport = preset?.player?.start == .transport
        guard recTransport || playTransport, let c = patchClient else { return }
        let now = c.transportRolling
        if now == rolling { return }
        rolling = now
        if now {
            if recTransport { _ = startTake() }
            if playTransport { player?.play() }
        } else {
            if recTransport { stopTake() }
            if playTransport { player?.pause() }
        }
    }

    private func handleRecorderEvents(_ list: [RecorderEvent]) {
        for e in list {
            switch e {
            case .takeStarted(let take, _):
                lastTake = max(lastTake, take)
                var deadline: Date?
                if let stop = preset?.recorder?.stopAt, let s = Preset.secondsOfDay(stop) {
                    deadline = Preset.nextOccurrence(ofSecondsOfDay: s)
                }
                workers.finish("take")
                workers.start("take", detail: "take \(take)", deadline: deadline) { [weak self] in
                    self?.recorder?.stopTake(.stopTimeReached)
                }
            case .takeFinished(let report, _):
                workers.finish("take")
                if (report.ended == .durationReached || report.ended == .stopTimeReached)
                    && preset?.recorder?.start == .immediately {
                    outcome = .finished(.takeComplete)
                }
            case .diskError:
                if preset?.session.onDiskError == .stop { outcome = .finished(.diskError) }
            case .chunkStarted:
                break
            }
            events.append(.recorder(e))
        }
    }

    private func handlePlayerEvents(_ list: [PlayerEvent]) {
        for e in list {
            switch e {
            case .itemStarted(let item, let path):
                workers.finish("playback")
                workers.start("playback", detail: "item \(item + 1): \(path)")
            case .queueFinished:
                workers.finish("playback")
            case .itemFailed:
                break
            }
            events.append(.player(e))
        }
    }

    private func forward(_ list: [RecorderEvent]) {
        for e in list {
            if case .takeStarted(let take, _) = e { lastTake = max(lastTake, take) }
            events.append(.recorder(e))
        }
    }

    /// Events since the last call.
    public func drainEvents() -> [SessionEvent] {
        defer { events.removeAll() }
        return events
    }

    // MARK: Commands

    /// Starts a take now. Refused (false) while one is running.
    @discardableResult
    public func startTake() -> Bool {
        guard let r = recorder else {
            events.append(.refused("no recorder in this session"))
            return false
        }
        if workers.isRunning("take") || r.isRecording {
            events.append(.refused("a take is already running"))
            return false
        }
        r.startTake()
        return true
    }

    public func stopTake() { recorder?.stopTake() }

    /// Per engine: its name, the cost of its process cycles so far, its period and rate.
    public func cycleCosts() -> [(engine: String, cost: CycleHistogram.Summary, period: Int, rate: Int)] {
        var out: [(String, CycleHistogram.Summary, Int, Int)] = []
        if let r = recorder { out.append(("recorder", r.cycleCost, r.client.bufferSize, r.sampleRate)) }
        if let p = player { out.append(("player", p.cycleCost, p.client.bufferSize, p.sampleRate)) }
        return out
    }

    /// Ends everything cleanly: takes finalized, clients closed.
    public func close() {
        applyLock.lock()
        defer { applyLock.unlock() }
        do {
            for dir in try savePlugins() { logger.info("plugin state saved", metadata: ["folder": "\(dir)"]) }
        } catch {
            pluginLogger.error("\(error.description)")
        }
        var report = ApplyReport()
        closeEngines(&report, end: .stopped)
        workers.finish("reconnect")
    }
}

extension RecorderConfig {
    /// The recorder a preset asks for.
    public init(section r: RecorderSection, session: SessionSection) {
        self.init()
        clientName = r.client
        ports = r.ports
        directory = session.directory
        self.session = session.name
        template = r.template
        format = r.format
        stems = r.stems
        rotateSeconds = r.rotateSeconds
        rotateBytes = r.rotateBytes
        prerollSeconds = r.prerollSeconds
        maxDurationSeconds = r.maxDurationSeconds
        ringSeconds = r.ringSeconds
        plugins = r.plugins
        recordDry = r.recordDry
        pluginState = session.restorePlugins ? Session.pluginStateDirectory(session, engine: .recorder) : nil
        faults = RecorderFaults.fromEnvironment()   // test-only (TANDEM_FAULT_STALL_WRITER), as `tandem record` has it
    }

    /// Whether `other` can be applied without re-creating the JACK client (same name, ports, ring, pre-roll).
    func sameClient(as other: RecorderConfig) -> Bool {
        clientName == other.clientName && ports == other.ports && ringSeconds == other.ringSeconds
            && prerollSeconds == other.prerollSeconds && recordDry == other.recordDry
    }
}

extension PlayerConfig {
    public init(section p: PlayerSection, session: SessionSection? = nil) {
        self.init()
        plugins = p.plugins
        if let session, session.restorePlugins { pluginState = Session.pluginStateDirectory(session, engine: .player) }
        clientName = p.client
        ports = p.ports
        queue = p.queue
        loop = p.loop
        gainDB = p.gainDB
        channelMap = p.channelMap
        resampleQuality = p.quality
        ringSeconds = p.ringSeconds
        startImmediately = false
    }

    func sameClient(as other: PlayerConfig) -> Bool {
        clientName == other.clientName && ports == other.ports && ringSeconds == other.ringSeconds
    }
}
