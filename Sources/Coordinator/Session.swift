import Commands
import Engine
import Foundation
import Jack
import Logging
import Presets
import Realtime
import SoundFile
import Takes

/// The session coordinator: the one owner of the server choice, the engines, the desired connections, the takes
/// and the workers. It applies a preset by comparing what is wanted with what is there and touches the graph only
/// where they differ, so applying the same setup twice changes nothing. Every command (`run`, `record`, `play`)
/// runs through it, so one policy decides stop times, server loss, disk errors and patching.
///
/// The parts, each in its own file: applying by diff (Session+Apply), the connection rules on JACK (Session+Patch,
/// deciding through the `Patchbay` value), server loss and transport (Session+Server), cycles that stop while the
/// server stays up (Session+Stall), engine events and when the
/// session ends (Session+Events), the preset's tables as engine configurations (SessionConfigs), status,
/// introspection, plugins and player resume.
///
/// Threads: one owner thread, the control loop's. `apply`, `poll`, the commands and `close` are all called from it
/// (the control protocol and the systemd notifier are polled from that loop too), so nothing here is locked and the
/// type is not `Sendable`: the compiler keeps it on its thread. The engines' real-time callbacks never touch it;
/// they talk to the engines through their rings and counters.
public final class Session {
    public internal(set) var preset: Preset?
    public internal(set) var recorder: Recorder?
    public internal(set) var player: Player?
    /// In-process racks and the supervisors of isolated ones, by rack name (see Session+Racks).
    public internal(set) var racks: [String: Rack] = [:]
    var rackConfigs: [String: RackConfig] = [:]
    public internal(set) var supervisors: [String: RackSupervisor] = [:]
    /// The frame time the last rack check saw (a server that stops is no rack hang).
    var rackCheckFrameTime: UInt32 = 0
    /// A client of the session's own, for graph queries and connections when no engine runs in this process.
    var patchOnlyClient: JackClient?
    public let workers = WorkerRegistry()
    var recorderConfig: RecorderConfig?
    var playerConfig: PlayerConfig?
    let logger: Logger
    let patchLogger: Logger
    var patchbay = Patchbay()
    var graphGeneration = -1
    var events: [SessionEvent] = []
    /// Every event the session drained, numbered (subscribers catch up from it).
    public let journal = EventJournal()
    let meterTap = MeterTap()
    /// Server loss and return (see `ServerWatch`).
    var serverWatch = ServerWatch()
    var rolling = false
    /// The highest take number this session has started (takes keep counting when the recorder is re-created).
    var lastTake = 0
    var outcome: SessionOutcome = .running
    /// A cued player's start, the recorder's stop time and the end of a played-out queue (see `Timetable`).
    var timetable = Timetable()
    /// Files of the queue that could not be played.
    public internal(set) var failedItems = 0
    /// Where the player was when the server was lost (see Session+PlayerResume.swift).
    var playerResume: PlayerResumePoint?
    /// The player (`start = "with-recorder"` beside a recorder started by command or transport) waits, cued, to
    /// start on the first frame of the next take.
    var playerFollowsTake = false
    /// Whether JACK still runs cycles while the server is up (see Session+Stall).
    var stallWatch = StallWatch()
    /// Which chains' changed state is saved when (see `PluginKeeping`).
    var pluginKeeping = PluginKeeping()
    /// The chain whose problems were last announced, per engine (weak: a freed chain never matches a new one).
    var announcedChains: [ChainEngine: WeakChain] = [:]
    /// Whether the first apply succeeded: from then on a plugin that cannot run is bypassed, whatever
    /// `on_plugin_error` says (a running session never stops for it).
    var started = false
    let pluginLogger = Logger(label: "tandem.plugins")
    /// The recorder's schedule and level trigger as the control loop drives them (see Session+Unattended).
    var unattended = UnattendedState()
    /// The control maps in force: the preset's, then those learned or added over OSC (see Session+Maps).
    public internal(set) var maps: [ControlMap] = []
    /// What the maps remember between messages (a learn waiting, the last CC level of each map).
    var mapState = MapState()
    /// The scenes, the one recalled last, the morph in force (see Session+Scenes.swift).
    var sceneState = SceneState()
    /// Scenes' times due and cues told (see Session+SceneTriggers.swift).
    var sceneTriggers = SceneTriggerState()
    /// In an isolated rack's process (no recorder): where a marker map's marker goes (label, JACK frame time), to be
    /// relayed to the session that records.
    public var markRelay: ((String, UInt32) -> Void)?
    /// In an isolated rack's process: where its chain's control changes go (an entry, the JACK frame time of the cycle
    /// that applied it), to be relayed to the session that records (see Session+ControlLog).
    public var controlRelay: ((TimedCommand, UInt32) -> Void)?
    /// Carries a command to an isolated rack's process (its control port; nil while it is down) with the source the
    /// change is told with, and returns the process's reply: the OSC relay (`ControlProtocol.relay`), installed by
    /// the program. Blocks the control thread for at most a second. nil: isolated racks' chains are out of reach.
    public var rackRelay: ((_ command: Command, _ rack: String, _ port: Int?, _ source: String) -> CommandReply)?
    /// What each rack ran with when its engine went (the values an isolated rack's process acknowledged, an
    /// in-process rack's chain's current values), kept while the session waits for its lost server: the rack started
    /// when it is back is given them again, over whatever older state it restored (see Session+RackRelay).
    var keptRackValues: [String: (rack: RackSection, values: ChainShadow)] = [:]
    /// What the control log needs between turns (see Session+ControlLog).
    var controlLog = ControlLogState()

    /// What the session takes from the world: its clock, test faults, the loop's wake-up (see `SessionEnvironment`).
    public let environment: SessionEnvironment
    /// The one clock every decision of the session reads.
    var clock: SessionClock { environment.clock }

    public init(environment: SessionEnvironment = SessionEnvironment()) {
        self.environment = environment
        logger = environment.logger
        patchLogger = Logger(label: "tandem.patch")
    }

    public convenience init(logger: Logger) {
        self.init(environment: SessionEnvironment(logger: logger))
    }

    /// Whether the session is waiting for its lost server to come back.
    public var isWaitingForServer: Bool { serverWatch.waiting }

    /// The server the session uses (nil: `$JACK_DEFAULT_SERVER` or "default").
    public var server: String? { preset?.session.server }

    /// The client used for graph queries and connections.
    var patchClient: JackClient? {
        recorder?.client ?? player?.client ?? racks.min(by: { $0.key < $1.key })?.value.client ?? patchOnlyClient
    }

    /// Brings the session to `wanted`, changing only what differs.
    /// `keepingMaps`: a preset without `[[map]]` tables leaves the session's maps as they are (one applied by a
    /// program-change map); otherwise the preset's maps replace them.
    @discardableResult
    public func apply(_ wanted: Preset, keepingMaps: Bool = false) throws(EngineError) -> ApplyReport {
        var wanted = wanted
        if keepingMaps && wanted.maps.isEmpty {
            // The maps in force stay, and with them the MIDI inputs of the racks they listen to.
            wanted.maps = maps
            wanted.giveMappedRacksMIDIInputs()
        }
        if keepingMaps && wanted.scenes.isEmpty { wanted.scenes = sceneState.book.scenes }
        let report = try applyDiff(wanted, notes: [])
        setMaps(wanted.maps)
        setScenes(wanted.scenes)
        started = true
        return report
    }

    /// Events since the last call; each also goes into the numbered stream (`journal`).
    public func drainEvents() -> [SessionEvent] { drainNumberedEvents().map(\.event) }

    /// Announces something that changed outside the session's own state (a surface's: the page's favourites) to
    /// every subscriber, in the same stream. Control thread.
    public func announce(_ event: SessionEvent) { events.append(event) }

    /// The same, with their numbers in the session's stream.
    public func drainNumberedEvents() -> [SequencedEvent] {
        defer { events.removeAll() }
        return journal.record(events)
    }

    // MARK: Commands

    /// Starts a take now. Refused (false) while one is running.
    @discardableResult
    public func startTake() -> Bool {
        guard let r = recorder else {
            events.append(.refused("no recorder in this session"))
            return false
        }
        if workers.isRunning(.take) || r.isRecording {
            events.append(.refused("a take is already running"))
            return false
        }
        if playerFollowsTake, let p = player {
            playerFollowsTake = false
            startAligned(r, p, notes: [])
            return true
        }
        r.startTake()
        return true
    }

    public func stopTake() { recorder?.stopTake() }

    /// SIGUSR1: starts a take, or (a session without a recorder) plays.
    public func startOnSignal() {
        if recorder != nil {
            startTake()
        } else {
            play()
        }
    }

    /// SIGUSR2: ends the take (the recorder stays armed), or (a session without a recorder) pauses. A recorder that
    /// runs by itself (a level trigger or a schedule) gets a marker instead: its takes are not stopped by hand.
    public func stopOnSignal() {
        if recorder != nil {
            if isUnattended {
                mark(label: "", source: "signal")
            } else {
                stopTake()
            }
        } else {
            player?.pause()
        }
    }

    /// Per engine: its name, the cost of its process cycles so far, its period and rate.
    public func cycleCosts() -> [(engine: String, cost: CycleHistogram.Summary, period: Int, rate: Int)] {
        var out: [(String, CycleHistogram.Summary, Int, Int)] = []
        if let r = recorder { out.append(("recorder", r.cycleCost, r.client.bufferSize, r.sampleRate)) }
        if let p = player { out.append(("player", p.cycleCost, p.client.bufferSize, p.sampleRate)) }
        for name in racks.keys.sorted() {
            if let r = racks[name] { out.append(("rack \(name)", r.cycleCost, r.client.bufferSize, r.sampleRate)) }
        }
        return out
    }

    /// Ends everything cleanly: takes finalized, clients closed.
    public func close() {
        do {
            let saved = preset?.session.savePlugins == true ? try savePlugins() : []
            for dir in saved { logger.info("plugin state saved", metadata: ["folder": "\(dir)"]) }
        } catch {
            pluginLogger.error("\(error.description)")
        }
        var report = ApplyReport()
        closeEngines(&report, end: .stopped)
        workers.finish(.reconnect)
    }
}
