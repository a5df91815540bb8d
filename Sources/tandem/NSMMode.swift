import Control
import Coordinator
import Engine
import Foundation
import Logging
import Presets
#if canImport(Glibc)
import Glibc
#endif

/// `tandem run` under a session manager (`NSM_URL` set; docs/DEPLOYMENT.md "NSM"): announce, wait for `open`, keep
/// the whole project (its preset `tandem.toml`, the takes, the plugins' state) in the folder the server names, run
/// the JACK clients as `CLIENT_ID/NAME`, answer `save` with the running setup written back and the plugin state
/// saved, say when the setup is dirty, and switch to another project on a later `open` by applying its preset by
/// difference (the clients are re-created under the new client id; what stays the same is not touched).
///
/// A new project is made from the preset given on the command line (the template), or a stereo recorder, armed.
///
/// Threads: control thread only (called from the run loop).
final class NSMMode {
    /// The project's preset file, inside the project folder.
    static let presetFile = "tandem.toml"
    static let applicationName = "Tandem"
    /// The setup of a new project when no template is given: a stereo recorder, armed (nothing written until a
    /// take is started over OSC, by SIGUSR1 or by `tandem ctl record start`).
    static let defaultTemplate = """
        # A new Tandem project (made by the session manager's `open`). Edit and save it in the session.
        [session]
        name = "tandem"
        [recorder]
        channels = 2
        start = "armed"

        """

    let client: NSMClient
    private let logger: Logger
    private let template: Preset?
    private let overrides: [String]
    /// The project folder and client id of the open project.
    private(set) var project = ""
    private(set) var clientID = ""
    /// The project's file as last opened or saved (the running setup differs from it: dirty).
    private var savedText = ""
    private var nextDirtyCheck = Date.distantPast
    private var announcedAt = Date()
    private var saidNoAnswer = false

    var presetPath: String { (project as NSString).appendingPathComponent(Self.presetFile) }

    private init(client: NSMClient, template: Preset?, overrides: [String], logger: Logger) {
        self.client = client
        self.template = template
        self.overrides = overrides
        self.logger = logger
    }

    /// With `NSM_URL` set: announces, waits for the server's first `open` and prepares that project (its folder
    /// and preset file), so the run goes on by loading `presetPath`. Without it (or with one that is unusable or
    /// refused, when a preset was given) nil: the run goes on without session management. SIGINT/SIGTERM while
    /// waiting exit 0.
    static func start(template: String?, overrides: [String], signals: SignalWatcher, logger: Logger) -> NSMMode? {
        guard let url = ProcessInfo.processInfo.environment["NSM_URL"], !url.isEmpty else { return nil }
        let nsmLogger = Logger(label: "tandem.nsm")
        func withoutNSM(_ why: String) -> NSMMode? {
            guard template != nil else { fail(.badInput, "\(why); and no preset was given to run without it") }
            nsmLogger.error("\(why); running without session management")
            return nil
        }
        let client: NSMClient
        do {
            client = try NSMClient(url: url, logger: nsmLogger)
        } catch {
            return withoutNSM(error.description)
        }
        var templatePreset: Preset?
        if let template {
            let path = resolvePreset(template)
            let (loaded, problems) = PresetLoader.load(path: path, overrides: overrides)
            guard let loaded else {
                for p in problems { Console.err("\(p)\n") }
                fail(.badInput, "\(problems.count) problem(s) in the template \(path); nothing started")
            }
            templatePreset = loaded
        }
        let mode = NSMMode(client: client, template: templatePreset, overrides: overrides, logger: nsmLogger)
        let executable = CommandLine.arguments.first ?? "tandem"
        client.announce(applicationName: applicationName, executable: executable)
        nsmLogger.info("announced to the session manager; waiting for it to open a project",
                       metadata: ["server": "\(url)", "from": "\(client.ownURL)"])
        while true {
            _ = client.socket.wait(seconds: 0.02)
            if signals.take(SIGINT) > 0 || signals.take(SIGTERM) > 0 { Foundation.exit(ExitStatus.ok.rawValue) }
            for request in client.poll() {
                guard case .open(let path, _, let id) = request else {
                    nsmLogger.warning("NSM: \(request) before any open; ignored")
                    continue
                }
                if mode.prepare(path: path, clientID: id) { return mode }
            }
            if let why = client.refused { return withoutNSM("the session manager refused Tandem: \(why)") }
            if client.gone { return withoutNSM("the session manager at \(url) is not there") }
            if !mode.saidNoAnswer && Date().timeIntervalSince(mode.announcedAt) > 5 {
                mode.saidNoAnswer = true
                nsmLogger.warning("no open from the session manager after 5 s; still waiting", metadata: ["server": "\(url)"])
            }
        }
    }

    /// Makes the project folder and, for a new project, its preset file from the template. Answers the server with
    /// an error when that fails (and returns false).
    private func prepare(path: String, clientID id: String) -> Bool {
        let fm = FileManager.default
        let file = (path as NSString).appendingPathComponent(Self.presetFile)
        do {
            if let why = Limits.nameProblem(id, what: "the client id", bytes: 1...40) { throw NSMClient.Failure(description: why) }
            try fm.createDirectory(atPath: path, withIntermediateDirectories: true)
            if !fm.fileExists(atPath: file) {
                var text = Self.defaultTemplate
                if var t = template {
                    t.session.directory = path
                    text = "# A new Tandem project, made from the template \(t.path ?? "?").\n" + t.outsideSessionManager(clientID: "").toml()
                }
                try Session.writeAtomically(text, to: file)
                logger.info("new project", metadata: ["folder": "\(path)"])
            }
        } catch {
            client.error("/nsm/client/open", .createFailed, "cannot make the project '\(path)': \(error)")
            logger.error("cannot make the project: \(error)", metadata: ["folder": "\(path)"])
            return false
        }
        project = path
        clientID = id
        return true
    }

    /// The project's preset as it runs under the session manager (clients `CLIENT_ID/NAME`, takes in the folder).
    /// A project that cannot be read is answered with ERR_BAD_PROJECT (when `answering` an open).
    func load(answering: Bool = true) -> (Preset?, [PresetProblem]) {
        let (loaded, problems) = PresetLoader.load(path: presetPath, overrides: overrides)
        guard let loaded else {
            guard answering else { return (nil, problems) }
            client.error("/nsm/client/open", .badProject, "\(problems.count) problem(s) in \(presetPath): "
                         + problems.map(\.description).joined(separator: "; "))
            return (nil, problems)
        }
        return (loaded.underSessionManager(clientID: clientID, directory: project), [])
    }

    /// Answers `open` after the first apply: ok (or the error that stops the run).
    func opened(_ session: Session, error: String? = nil) {
        if let error {
            client.error("/nsm/client/open", .general, error)
            return
        }
        savedText = running(session) ?? ""
        client.progress(1)
        client.setDirty(false, force: true)
        client.reply("/nsm/client/open", "Tandem opened \(project) as \(clientID)")
        logger.info("project open", metadata: ["folder": "\(project)", "client_id": "\(clientID)"])
    }

    /// The running setup as the project's file would hold it.
    private func running(_ session: Session) -> String? {
        session.runningPreset().map { $0.outsideSessionManager(clientID: clientID).toml() }
    }

    /// Handles the server's requests, tells it about takes and problems, and says when the setup became dirty or
    /// clean again (looked at twice a second).
    func tick(_ session: Session, events: [SessionEvent]) {
        for request in client.poll() {
            switch request {
            case .open(let path, _, let id): switchTo(path: path, clientID: id, session: session)
            case .save: save(session)
            case .sessionIsLoaded: logger.info("the session manager says the session is loaded")
            }
        }
        for e in events { if let (priority, text) = Self.message(e) { client.message(priority: priority, text) } }
        if Date() >= nextDirtyCheck {
            nextDirtyCheck = Date().addingTimeInterval(0.5)
            if let now = running(session) { client.setDirty(now != savedText) }
        }
    }

    /// `save`: the running setup over the project's preset file, and every chain's plugin state into the folder.
    private func save(_ session: Session) {
        guard let text = running(session) else {
            client.error("/nsm/client/save", .notNow, "no setup is running")
            return
        }
        do {
            try Session.writeAtomically("# Tandem project, saved by the session manager.\n" + text, to: presetPath)
            // Isolated racks' chains are saved by their processes.
            let isolated = session.saveIsolatedPlugins(source: "osc")
            for p in isolated.problems { logger.warning("plugin state not saved: \(p)") }
            let plugins = try session.savePlugins() + isolated.folders
            savedText = text
            client.setDirty(false)
            client.reply("/nsm/client/save", "Tandem saved \(presetPath)" + (plugins.isEmpty ? "" : " and the state of \(plugins.count) plugin chain(s)"))
            logger.info("saved", metadata: ["preset": "\(presetPath)", "plugin state": "\(plugins.joined(separator: " "))"])
        } catch {
            client.error("/nsm/client/save", .general, "\(error)")
            logger.error("save failed: \(error)")
        }
    }

    /// `open` while running (`:switch:`): the other project's preset is applied by difference. The clients carry
    /// the new client id, so they are re-created (a running take ends in the old folder); plugin state comes from
    /// the new folder.
    private func switchTo(path: String, clientID id: String, session: Session) {
        let (oldProject, oldID) = (project, clientID)
        client.progress(0)
        guard prepare(path: path, clientID: id) else { return }
        let (wanted, problems) = load()
        guard var preset = wanted else {
            logger.error("cannot switch to \(path): \(problems.count) problem(s); the old project keeps running")
            (project, clientID) = (oldProject, oldID)
            return
        }
        preset.session.server = session.server
        do {
            let report = try session.apply(preset)
            logger.info("switched to \(path): \(report)")
            opened(session)
        } catch {
            client.error("/nsm/client/open", .general, "cannot switch to \(path): \(error.message)")
            logger.error("switch failed: \(error.message)")
        }
    }

    /// What a person at the session manager should see: takes, disk and server trouble, plugins left out.
    static func message(_ e: SessionEvent) -> (Int32, String)? {
        switch e {
        case .recorder(.takeStarted(let take, _)): return (1, "recording take \(take)")
        case .recorder(.takeFinished(let r, _)): return (1, "take \(r.take) \(r.ended.words): \(r.frames) frames")
        case .recorder(.diskError(let take, let message)): return (3, "take \(take) ended by a disk error: \(message)")
        case .serverLost(let why): return (3, "JACK server lost: \(why)")
        case .serverBack: return (2, "JACK server back: session restored")
        case .cyclesStopped(let seconds):
            return (3, "the JACK server runs no cycles (\(String(format: "%.1f", seconds)) s); the take was finalized")
        case .cyclesBack(let seconds): return (2, "JACK cycles back after \(String(format: "%.1f", seconds)) s")
        case .pluginProblem(let engine, let plugin, let bypassed, let message):
            return (2, "\(engine) plugin \(plugin) \(bypassed ? "bypassed" : "setting ignored"): \(message)")
        default: return nil
        }
    }
}
