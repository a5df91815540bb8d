import ArgumentParser
import Coordinator
import Engine
import Foundation
import Jack
import Logging
import Presets
import Render
import Control
import Takes

/// Finds a preset: a path, or a name in ./Presets, in the folders of `$TANDEM_PRESETS` (colon-separated; the systemd
/// unit sets it), or in the presets installed beside the binary (PREFIX/share/tandem/presets), with or without .toml.
func resolvePreset(_ name: String) -> String {
    presetPlaces(name).first { FileManager.default.fileExists(atPath: $0) } ?? name
}

/// Where a preset called `name` is looked for, in order.
func presetPlaces(_ name: String) -> [String] {
    var places = [name, "Presets/\(name)", "Presets/\(name).toml"]
    if !name.contains("/") {
        for folder in presetFolders() { places += ["\(folder)/\(name)", "\(folder)/\(name).toml"] }
    }
    return places
}

/// What to say when no preset called `name` is found: every place it was looked for (nil: it was found).
func presetNotFound(_ name: String) -> String? {
    let places = presetPlaces(name)
    guard !places.contains(where: { FileManager.default.fileExists(atPath: $0) }) else { return nil }
    let cwd = FileManager.default.currentDirectoryPath
    var seen = Set<String>()
    let shown = places.map { $0.hasPrefix("/") ? $0 : (cwd as NSString).appendingPathComponent($0) }.filter { seen.insert($0).inserted }
    return "no preset '\(name)': looked for " + shown.joined(separator: ", ")
        + " (a path, a name in ./Presets, or in $TANDEM_PRESETS)"
}

/// `$TANDEM_PRESETS`, then PREFIX/share/tandem/presets for a binary installed as PREFIX/bin/tandem.
func presetFolders() -> [String] {
    var folders = (ProcessInfo.processInfo.environment["TANDEM_PRESETS"] ?? "").split(separator: ":").map(String.init)
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    folders.append(exe.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("share/tandem/presets").path)
    return folders
}

struct RunCommand: ParsableCommand {
    /// The OSC control port of a session that names none (`tandem ctl`'s default).
    static let defaultControlPort = 9951

    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a whole setup from a preset, in the foreground until stopped.",
        discussion: """
            SIGINT/SIGTERM stop cleanly (takes finalized, exit 0). SIGHUP re-reads the preset and applies only what \
            changed (a bad preset is reported and the running setup kept). SIGUSR1 starts a take, SIGUSR2 ends it.
            """)

    @OptionGroup var server: ServerOptions

    @Argument(help: "A preset file, or the name of one in ./Presets (under a session manager: the template of a new project; optional).")
    var preset: String?

    @Option(name: .long, help: "Override a preset key, e.g. --set recorder.format=flac (repeatable).")
    var set: [String] = []

    @Option(name: .long, help: "OSC control port on 127.0.0.1 (default: the preset's control_port, else 9951; 0 = off).")
    var controlPort: Int?

    @Option(name: .long, help: "Prometheus metrics on http://127.0.0.1:N/metrics, with the HTTP API there (default: the preset's metrics_port, else none; 0 = off).")
    var metricsPort: Int?

    @Option(name: .long, help: ArgumentHelp(
        "The HTTP and WebSocket API (and the page) on HOST:PORT (default: the preset's http, else none); any address but loopback needs the token (`tandem http-token`).",
        valueName: "HOST:PORT"))
    var http: String?

    @Flag(name: .long, help: "Status as JSON lines (every 0.5 s) instead of the live view.")
    var json = false

    @Flag(name: .long, help: "No live view or status lines, only events.")
    var noView = false

    func validate() throws {
        if preset == nil && ProcessInfo.processInfo.environment["NSM_URL"] == nil {
            throw ValidationError("a preset is needed (a file or a name in ./Presets), unless NSM_URL is set")
        }
        for (name, port) in [("--control-port", controlPort), ("--metrics-port", metricsPort)] {
            if let port, port != 0, !Limits.controlPort.contains(port) {
                throw ValidationError("\(name) must be 0 (off) or \(Limits.controlPort.lowerBound)…\(Limits.controlPort.upperBound)")
            }
        }
        if let http, HTTPAddress(http) == nil {
            throw ValidationError("--http '\(http)' is not \(HTTPAddress.form)")
        }
    }

    func run() throws {
        let runner = SessionRunner(server: server, json: json, noView: noView)
        var overrides = set
        if let s = server.server { overrides.append("session.server=\"\(s)\"") }
        // Under a session manager the project's own preset runs (NSMMode.swift); `preset` only makes new projects.
        let nsm = NSMMode.start(template: preset, overrides: overrides, signals: runner.signals, logger: runner.logger)
        if nsm == nil, let why = presetNotFound(preset ?? "") { fail(.badInput, why) }
        let path = nsm?.presetPath ?? resolvePreset(preset ?? "")
        let (loaded, problems) = nsm?.load() ?? PresetLoader.load(path: path, overrides: overrides)
        guard let initial = loaded, loaded?.pendingProblems.isEmpty == true else {
            let all = problems + (loaded?.pendingProblems ?? [])
            for p in all { Console.err("\(p)\n") }
            nsm?.opened(runner.session, error: "\(all.count) problem(s) in \(path): \(all.first.map { "\($0)" } ?? "")")
            fail(.badInput, "\(all.count) problem(s) in \(path); nothing started")
        }
        // Plugins are looked up before anything starts, as `preset check` does.
        if case .checked(let problems) = PresetPluginCheck.check(initial), !problems.isEmpty {
            for p in problems { Console.err("\(p)\n") }
            if initial.session.onPluginError != .bypass {
                // A session manager waiting for the open hears why (its /error), then the process ends.
                nsm?.opened(runner.session, error: "\(problems.count) plugin problem(s): \(problems.first.map { "\($0)" } ?? "")")
                fail(.badInput, "\(problems.count) plugin problem(s) in \(path); nothing started"
                     + " (on_plugin_error = \"bypass\" runs without what failed)")
            }
            Console.err("tandem: on_plugin_error = \"bypass\": running without what failed\n")
        }
        // The control port before any JACK client: a taken one is exit 2 with nothing started. Under a session
        // manager, several Tandems share the default: each takes a free port when 9951 is taken.
        let explicitPort = controlPort ?? initial.session.controlPort
        runner.openControl(explicit: explicitPort, fallback: Self.defaultControlPort,
                           anyFree: explicitPort == nil && (initial.session.controlPortAuto || nsm != nil))
        let httpAddress = http.flatMap(HTTPAddress.init) ?? initial.session.http
        runner.checkHTTP(httpAddress, metricsPort: metricsPort ?? initial.session.metricsPort)
        if initial.session.onServerLoss == .resume && initial.session.serverWaitSeconds > 0 {
            waitForServer(initial.session, signals: runner.signals, logger: runner.logger, systemd: runner.systemd)
        }
        do {
            try runner.session.apply(initial)
        } catch {
            nsm?.opened(runner.session, error: error.message)
            runner.session.close()
            fail(error.code == .jack ? .jackUnavailable : .badInput, error.message)
        }
        nsm?.opened(runner.session)
        runner.openHTTP(httpAddress, origins: initial.session.httpOrigins,
                        metricsPort: metricsPort ?? initial.session.metricsPort)
        if let nsm {
            runner.tick = { session, events in nsm.tick(session, events: events) }
            runner.tickTurn = 0.5
        }
        let end = runner.loop(reload: {
            let (next, problems) = nsm?.load(answering: false) ?? PresetLoader.load(path: path, overrides: overrides)
            if let pending = next?.pendingProblems, !pending.isEmpty { return (nil, problems + pending, path) }
            return (next, problems, path)
        })
        runner.exit(end, engineNames: true)
    }
}

extension RunCommand {
    /// Waits up to the preset's `server_wait` for its JACK server to come up, as a session waits for one that went
    /// away; SIGINT/SIGTERM end the wait (exit 0, nothing started), the limit ends it with exit 3.
    func waitForServer(_ session: SessionSection, signals: SignalWatcher, logger: Logger,
                       systemd: ServiceNotifications? = nil) {
        let name = JackServer.effectiveName(session.server)
        if JackServer.probe(name) { return }
        logger.warning("JACK server '\(name)' is not running yet; waiting for it",
                       metadata: ["limit": "\(Limits.number(session.serverWaitSeconds)) s"])
        systemd?.waitingForServer(name, seconds: session.serverWaitSeconds)
        let deadline = Date().addingTimeInterval(session.serverWaitSeconds)
        var pause = 0.05
        while Date() < deadline {
            signals.wakeup.wait(seconds: pause)
            if signals.take(SIGINT) > 0 || signals.take(SIGTERM) > 0 { Foundation.exit(ExitStatus.ok.rawValue) }
            if JackServer.probe(name) {
                logger.info("JACK server '\(name)' is up")
                return
            }
            pause = min(pause * 2, 0.5)
        }
        fail(.jackUnavailable, "JACK server '\(name)' did not come up within \(Limits.number(session.serverWaitSeconds)) s "
             + "(session.server_wait)")
    }
}

struct PresetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preset", abstract: "Work with preset files.", subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a preset without touching JACK: every problem at once, with file, line and key.")

        @Argument(help: "Preset files (paths, or names in ./Presets).")
        var files: [String]

        @Option(name: .long, help: "Override a preset key, e.g. --set recorder.format=flac (repeatable).")
        var set: [String] = []

        func run() throws {
            var bad = 0
            for name in files {
                if let why = presetNotFound(name) {
                    Console.err("tandem: \(why)\n")
                    bad += 1
                    continue
                }
                let path = resolvePreset(name)
                var (preset, problems) = PresetLoader.load(path: path, overrides: set)
                if let pending = preset?.pendingProblems, !pending.isEmpty {
                    problems += pending
                    preset = nil
                }
                var pluginNote = ""
                if let p = preset {
                    switch PresetPluginCheck.check(p) {
                    case .none: break
                    case .checked(let found) where found.isEmpty: pluginNote = ", plugins looked up"
                    case .checked(let found):
                        if p.session.onPluginError == .bypass {
                            for f in found { Console.err("\(f) (bypassed: on_plugin_error = \"bypass\")\n") }
                            pluginNote = ", \(found.count) plugin problem(s) bypassed (on_plugin_error = \"bypass\")"
                        } else {
                            problems += found
                            preset = nil
                        }
                    case .skipped(let why): pluginNote = "; \(why)"
                    }
                }
                if let p = preset, p.render != nil {
                    // What `tandem render` would refuse of its [render] table.
                    let found = RenderCheck.preset(p)
                    if !found.isEmpty {
                        problems += found
                        preset = nil
                    }
                }
                if let preset {
                    var parts: [String] = []
                    if let r = preset.recorder { parts.append("recorder \(r.client) (\(r.ports.count) ports)") }
                    if let p = preset.player { parts.append("player \(p.client) (\(p.ports.count) ports, \(p.queue.count) files)") }
                    for rack in preset.racks { parts.append("rack \(rack.name) (\(rack.plugins.count) plugin(s))") }
                    parts.append("\(preset.connections.count) connection rule(s)")
                    say("\(path): ok: " + parts.joined(separator: ", ") + pluginNote)
                } else {
                    bad += 1
                    for p in problems { Console.err("\(p)\n") }
                }
            }
            if bad > 0 { Foundation.exit(ExitStatus.badInput.rawValue) }
        }
    }
}

/// Turns session, recorder and player events into lines a person and a script can read (errors go to stderr).
final class EventPrinter {
    /// `tandem play` names each file as "playing N/TOTAL: PATH (SECONDS s)"; a session as "playing item N: PATH".
    var playStyle = false

    init(playStyle: Bool = false) { self.playStyle = playStyle }

    func print(_ events: [SessionEvent], session: Session? = nil) {
        for line in lines(events, session: session) { say(line) }
    }

    /// The stdout lines for `events`; error events are written to stderr at once.
    func lines(_ events: [SessionEvent], session: Session? = nil) -> [String] {
        var out: [String] = []
        for e in events {
            switch e {
            case .recorder(let r): if let line = recorderLine(r) { out.append(line) }
            case .player(let p):
                switch p {
                case .itemStarted(let item, let path) where playStyle:
                    let total = session?.player?.queue.count ?? 0
                    let seconds = session?.player?.position.duration ?? 0
                    out.append("playing \(item + 1)/\(total): \(path) (\(String(format: "%.3f", seconds)) s)")
                case .itemStarted(let item, let path): out.append("playing item \(item + 1): \(path)")
                case .itemFailed(_, let path, let message):
                    Console.err("tandem: cannot play '\(path)': \(message)\n")
                case .queueFinished: out.append("playback finished")
                }
            case .connected(let a, let b): out.append("connected \(a) -> \(b)")
            case .disconnected(let a, let b): out.append("disconnected \(a) -> \(b)")
            case .manualDisconnect(let a, let b, let repaired):
                out.append("\(a) -> \(b) was disconnected by someone else: " + (repaired ? "repaired" : "left disconnected"))
            case .serverLost(let reason): out.append("JACK server lost: \(reason)")
            case .rackDown(let rack, let what):
                Console.err("tandem: rack \(rack) \(what); restarting it\n")
            case .rackBack(let rack, let seconds):
                out.append("rack \(rack) back after \(String(format: "%.2f", seconds)) s")
            case .serverBack: out.append("JACK server back: session restored")
            case .cyclesStopped(let seconds):
                Console.err("tandem: the JACK server is up but ran no cycle for \(String(format: "%.2f", seconds)) s\n")
            case .cyclesBack(let seconds):
                out.append("JACK cycles back after \(String(format: "%.2f", seconds)) s without any")
            case .refused(let why): out.append("refused: \(why)")
            case .pluginProblem(let engine, let plugin, let bypassed, let message):
                // Like other errors: to stderr at once (the live view shows it among the chain's problems).
                let line = "\(engine) plugin \(plugin) \(bypassed ? "BYPASSED" : "setting ignored"): \(message)"
                Console.err("tandem: \(line)\n")
            case .controlChanged:
                break   // as often as a controller moves: for subscribers (OSC), not for the log
            case .bypassChanged(let engine, let plugin, let bypassed, let source):
                out.append("\(engine) plugin \(plugin) \(bypassed ? "bypassed" : "running") (\(source))")
            case .presetLoaded(let engine, let plugin, let preset, let source):
                out.append("\(engine) plugin \(plugin): preset \(preset) loaded (\(source))")
            case .chainEdited(let engine, let detail, let source): out.append("\(engine) chain: \(detail) (\(source))")
            case .chainLevelChanged, .favouritesChanged: break   // for subscribers, as control changes are
            case .markerAdded(let take, let seconds, let label, let source):
                out.append("take \(take): marker at \(String(format: "%.3f", seconds)) s" + (label.isEmpty ? "" : " '\(label)'") + " (\(source))")
            case .mapAdded(let index, let map): out.append("map \(index): \(map)")
            case .mapFailed(let why): Console.err("tandem: map: \(why)\n")
            case .relayed: break   // for subscribers; the rack's own log has its lines
            case .sceneRecalled(let name, let ramp, let applied, let missing, _, let source):
                out.append("scene '\(name)' recalled: \(applied) value(s) over \(Limits.number(ramp)) ms (\(source))"
                           + (missing.isEmpty ? "" : "; not applied: " + missing.joined(separator: "; ")))
            case .sceneMorphed: break   // as often as a pedal moves: for subscribers
            case .scenesChanged(let detail, let source): out.append("scenes: \(detail) (\(source))")
            }
        }
        return out
    }

    func printRecorder(_ event: RecorderEvent) {
        if let line = recorderLine(event) { say(line) }
    }

    func recorderLine(_ event: RecorderEvent) -> String? {
        switch event {
        case .takeStarted(let take, let files):
            return "take \(take) recording: \(files.joined(separator: ", "))"
        case .chunkStarted(let take, let chunk, let files):
            return "take \(take) chunk \(chunk): \(files.joined(separator: ", "))"
        case .takeFinished(let r, let sidecar):
            let seconds = Double(r.frames) / Double(max(1, r.sampleRate))
            return "take \(r.take) \(r.ended.words): \(r.frames) frames (\(String(format: "%.3f", seconds)) s), "
                + "\(r.chunks.count) chunk(s), dropped \(r.droppedFrames), missed \(r.missedFrames ?? 0), "
                + (r.repeatedFrames.map { "repeated \($0), " } ?? "") + "xruns \(r.xruns); "
                + (sidecar.isEmpty ? "no report (it could not be written: \(r.endDetail ?? "disk error"))" : "report \(sidecar)")
        case .diskError(let take, let message):
            Console.err("tandem: take \(take) ended by a disk error: \(message)\n")
            return nil
        }
    }
}
