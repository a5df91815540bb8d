import ArgumentParser
import Control
import Coordinator
import Engine
import Foundation
import Jack
import Logging
import Presets
import Realtime
import WebAPI

/// The one control loop every command runs its session in (`run` from a preset file, `record` and `play` from a
/// preset built from their options): signals, the session's poll, the live view or JSON status, the OSC control
/// protocol, systemd notifications, and one typed outcome that only `ExitStatus` turns into an exit code.
///
/// Threads: the main thread only (the session it owns is single-threaded).
final class SessionRunner {
    let signals: SignalWatcher
    let view: LiveView
    let printer: EventPrinter
    let logger: Logger
    let systemd: ServiceNotifications
    private(set) var session = Session()
    private var control: ControlProtocol?
    private var socketWaker: SocketWaker?
    /// The HTTP and WebSocket API, when one was asked for (`--http`, `[session] http`, `metrics_port`).
    private(set) var http: [HTTPServer] = []
    /// The Prometheus metrics `/metrics` serves, counted from the loop's events while an HTTP server runs.
    private var metrics: SessionMetricsBox?
    /// How long a loop turn waits when something needs it soon (see `Session.wantsFrequentPolls`; else
    /// `Session.idleTurn`).
    static let busyTurn = 0.02
    /// The turn of a session with engines to watch that nobody is watching live (no live view, no subscriber, nothing
    /// happened in the last second): the meters' own sampling interval. A quiet 128-channel take at period 256 spent
    /// 0.005-0.007 CPU s/s on 20 ms turns, more than jack_capture's whole control thread.
    static let steadyTurn = 0.05
    /// Called once per loop turn with the turn's events, after the session's poll (a session manager, the metrics
    /// endpoint, an isolated rack's heartbeat).
    var tick: ((Session, [SessionEvent]) -> Void)?
    /// The longest turn what `tick` polls allows (a session manager's requests and a metrics scrape are read only
    /// when the loop turns: 0.5 s), nil: the session's own `idleTurn`.
    var tickTurn: Double?

    /// Installs the signal handlers and logging. `liveViewOnPipes`: the plain status line once a second when stdout
    /// is not a terminal (`run`); the one-shot commands print only their events there, as documented.
    init(server: ServerOptions, json: Bool, noView: Bool, liveViewOnPipes: Bool = true, printer: EventPrinter = EventPrinter()) {
        signals = SignalWatcher.install()
        let tty = isatty(STDOUT_FILENO) == 1
        view = LiveView(json: json, enabled: !noView && (liveViewOnPipes || json || tty))
        server.bootstrapLogging(quieter: view.mode == .terminal || view.mode == .json)
        // Reads and clears $NOTIFY_SOCKET while the signal thread (which never reads the environment) is the only other.
        systemd = ServiceNotifications()
        logger = Logger(label: "tandem.session")
        self.printer = printer
        session = Session(environment: .fromProcess(loopWakeup: signals.wakeup, logger: logger))
        // Isolated racks' chains are reached through their processes' control ports (maps, plugin save, restores).
        session.rackRelay = { ControlProtocol.sessionRelay($0, rack: $1, port: $2, source: $3) }
    }

    /// Applies the first preset; a failure closes what started and exits (3 without a server, else 2).
    func start(_ preset: Preset) {
        do {
            try session.apply(preset)
        } catch {
            session.close()
            fail(error.code == .jack ? .jackUnavailable : .badInput, error.message)
        }
    }

    /// Applies a changed preset (extra connection rules after the first start); a failure closes and exits 2.
    func reapply(_ preset: Preset) {
        do {
            try session.apply(preset)
        } catch {
            session.close()
            fail(.badInput, error.message)
        }
    }

    /// Opens the OSC control port, before anything starts: `explicit` (from the command line or the preset), else
    /// `fallback` (the default port). A taken one is exit 2 in words, for the default too: a session that ran without
    /// its port left `tandem ctl` reaching the other session there. With `anyFree` a taken port gives way to one
    /// the kernel picks, said on stderr.
    func openControl(explicit: Int?, fallback: Int?, anyFree: Bool = false) {
        guard let port = explicit ?? fallback, port > 0 else { return }
        do {
            try listen(port)
        } catch {
            guard anyFree else {
                session.close()
                let which = explicit != nil ? "control port \(port)" : "the default control port \(port)"
                fail(.badInput, "\(which) is taken (\(error)): another Tandem there would get this session's "
                     + "`tandem ctl` commands; choose another (control_port, --control-port N), 0 for none, or "
                     + "control_port = \"auto\" for a free one; nothing started")
            }
            do {
                try listen(0)
            } catch {
                session.close()
                fail(.badInput, "no control port could be had: \(error); nothing started")
            }
            Console.err("tandem: control port \(port) is taken: this session listens on \(control?.port ?? 0) "
                        + "(`tandem ctl --port \(control?.port ?? 0)`)\n")
        }
    }

    private func listen(_ port: Int) throws(UDPSocket.Error) {
        let c = try ControlProtocol(session: session, port: port)
        control = c
        socketWaker = SocketWaker(fds: [c.socket.fd], wakeup: signals.wakeup)
    }

    /// Refuses HTTP addresses that cannot be listened on (a port another program holds, an address not this
    /// machine's) with exit 2, before any JACK client is made, as a taken control port is: `openHTTP`, which comes
    /// after the session starts, takes the same arguments.
    func checkHTTP(_ address: HTTPAddress?, metricsPort: Int? = nil) {
        for address in Self.httpAddresses(address, metricsPort: metricsPort) {
            if let problem = HTTPServer.bindProblem(address) {
                session.close()
                fail(.badInput, problem + "; nothing started")
            }
        }
    }

    /// The addresses `openHTTP` listens on: `address`, and 127.0.0.1:`metricsPort` when that is set and differs.
    static func httpAddresses(_ address: HTTPAddress?, metricsPort: Int?) -> [HTTPAddress] {
        var addresses = address.map { [$0] } ?? []
        if let metricsPort, metricsPort > 0, address?.port != metricsPort || address?.isLoopback != true {
            addresses.append(HTTPAddress(host: "127.0.0.1", port: metricsPort))
        }
        return addresses
    }

    /// Starts the HTTP and WebSocket API on `address` (nil: none), and on 127.0.0.1:`metricsPort` when that is set
    /// and differs (the old metrics endpoint's place: the same server, there). Any address but loopback needs the
    /// token (made on first start). An address that cannot be had, or a token that cannot be read, stops the run
    /// (exit 2): it was asked for explicitly, and an operator's alerts would otherwise watch nothing.
    func openHTTP(_ address: HTTPAddress?, origins: [String] = [], metricsPort: Int? = nil) {
        let addresses = Self.httpAddresses(address, metricsPort: metricsPort)
        guard !addresses.isEmpty else { return }
        let metrics = SessionMetricsBox(SessionMetrics(session: session))
        self.metrics = metrics
        let source = MetricsSource { _ in metrics.metrics.render() }
        for address in addresses {
            var token: String?
            if !address.isLoopback {
                do { token = try HTTPAccess.loadOrCreateToken() } catch {
                    session.close()
                    fail(.badInput, "the HTTP API on \(address) needs a token: \(error)")
                }
            }
            let server = HTTPServer(configuration: .init(address: address, access: HTTPAccess(token: token, origins: origins)),
                                    wake: signals.wakeup, journal: session.journal, metrics: source)
            do {
                let bound = try server.start()
                if token != nil {
                    Console.err("tandem: the HTTP API on \(HTTPAddress(host: address.host, port: bound)) needs its token"
                                + " (`tandem http-token` prints it)\n")
                }
            } catch {
                http.forEach { $0.stop() }
                session.close()
                fail(.badInput, "\(error)")
            }
            http.append(server)
        }
    }

    /// Runs until a signal or the session ends it. `reload` re-reads the preset on SIGHUP (nil: SIGHUP is ignored
    /// like the other one-shot signals). Returns how the session ended (nil: stopped by a signal).
    func loop(reload: (() -> (Preset?, [PresetProblem], String))? = nil) -> SessionEnd? {
        var lastMeters = Date.distantPast
        var lastActivity = Date()
        systemd.ready(session)
        defer { socketWaker?.stop() }
        while true {
            // Often while someone watches, or the session had an event or an OSC message in the last second; less
            // often while engines run unwatched; else every 0.5-2 s (`Session.idleTurn`; signals, JACK graph
            // notifications, OSC datagrams and an isolated rack's pipe wake the loop at once either way).
            let watched = control?.hasSubscribers == true || view.mode == .terminal || view.mode == .json
                || http.contains(where: \.wantsFrequentTurns) || Date().timeIntervalSince(lastActivity) < 1
            let turn = watched ? Self.busyTurn : session.wantsFrequentPolls ? Self.steadyTurn
                : min(session.idleTurn, tickTurn ?? .infinity, systemd.longestTurn ?? .infinity)
            signals.wakeup.wait(seconds: turn)
            if signals.take(SIGINT) > 0 || signals.take(SIGTERM) > 0 { return nil }
            if signals.take(SIGHUP) > 0, let reload { self.reload(reload) }
            if signals.take(SIGUSR1) > 0 { session.startOnSignal() }
            if signals.take(SIGUSR2) > 0 { session.stopOnSignal() }
            let outcome = session.poll()
            for server in http { server.tick(session) }
            if Date().timeIntervalSince(lastMeters) >= 0.05 {
                session.sampleMeters()
                lastMeters = Date()
            }
            let numbered = session.drainNumberedEvents()
            let events = numbered.map(\.event)
            let messages = control?.poll(events: numbered) ?? false
            if !events.isEmpty || messages { lastActivity = Date() }
            if view.mode == .off {
                printer.print(events, session: session)
            } else {
                view.update(session.status(), events: printer.lines(events, session: session))
            }
            metrics?.metrics.observe(events)
            tick?(session, events)
            if case .finished(let end) = outcome { return end }
            systemd.tick(session)
        }
    }

    private func reload(_ read: () -> (Preset?, [PresetProblem], String)) {
        systemd.reloading()
        let (next, problems, path) = read()
        guard let next else {
            for p in problems { logger.error("reload refused: \(p)") }
            systemd.reloaded(session, report: nil, problem: "\(problems.count) problem(s) in \(path)")
            return
        }
        if let old = session.preset?.session {
            let keys = old.startOnlyKeysChanged(in: next.session)
            if !keys.isEmpty {
                let names = keys.map { "session.\($0)" }.joined(separator: ", ")
                logger.warning("reload: \(names) changed; the running server keeps the old value until the next start")
            }
        }
        do {
            let report = try session.apply(next)
            logger.info("reloaded \(path): \(report.graphChanges) graph changes (\(report))")
            systemd.reloaded(session, report: report)
        } catch {
            logger.error("reload failed", metadata: ["error": "\(error)"])
            systemd.reloaded(session, report: nil, problem: "\(error)")
        }
    }

    /// Exact connection rules for a one-shot command's `--connect` patterns (see `Session.orderedRules`); a pattern
    /// that names nothing, or too many ports, closes the session and exits 2 in words.
    /// `widen`: the option that gives the engine more ports (`--inputs`, `-c`), named when the patterns match more
    /// ports than it has.
    func rules(_ patterns: [String], ports: [JackPort], towardUs: Bool, option: String, owner: String,
               widen: String? = nil) -> [ConnectionRule] {
        rules(patterns, names: ports.map(\.name), towardUs: towardUs, type: .audio, option: option, owner: owner,
              widen: widen)
    }

    /// `names`: full names of the engine's ports of kind `type`. A problem names the option, its patterns and the
    /// engine (`owner`, e.g. "rack fx"), and is exit 2.
    func rules(_ patterns: [String], names: [String], towardUs: Bool, type: PortType, option: String,
               owner: String, widen: String? = nil) -> [ConnectionRule] {
        guard !patterns.isEmpty else { return [] }
        do {
            return try session.orderedRules(patterns, ports: names, towardUs: towardUs, type: type)
        } catch {
            session.close()
            let more = error.matched.flatMap { n in widen.map { "; \($0) \(n) gives it \(n)" } } ?? ""
            fail(.badInput, "\(option) " + patterns.map { "'\($0)'" }.joined(separator: " ") + ": \(error) of \(owner)"
                 + more)
        }
    }

    /// The `[session]` of a one-shot command (`record`, `play`, `rack`): its policies from the options, no waiting
    /// for a server, plugin state neither restored nor saved unless `keepsPluginState`.
    static func oneShotSession(name: String, server: String?, directory: String = ".", onServerLoss: String,
                               strictPlugins: Bool, controlPort: Int?, keepsPluginState: Bool = false) -> SessionSection {
        var s = SessionSection()
        s.name = name
        s.server = server
        s.directory = directory
        s.onServerLoss = ServerLossPolicy(rawValue: onServerLoss) ?? .stop
        s.onPluginError = strictPlugins ? .fail : .bypass
        s.controlPort = controlPort
        s.restorePlugins = keepsPluginState
        s.savePlugins = keepsPluginState
        s.serverWaitSeconds = 0
        return s
    }

    /// Ends a one-shot command: finishes the session, prints the cycle cost line (`engineNames`: one per engine,
    /// named) and exits with the outcome's code (2 when `failedItems` files could not be played).
    func exit(_ end: SessionEnd?, engineNames: Bool = false, failedItems: Int = 0) -> Never {
        for c in finish() { say((engineNames ? "\(c.engine) " : "") + cycleCostLine(c.cost, period: c.period, rate: c.rate)) }
        if let end, ExitStatus(end) != .ok { Foundation.exit(ExitStatus(end).rawValue) }
        Foundation.exit(failedItems > 0 ? ExitStatus.badInput.rawValue : ExitStatus.ok.rawValue)
    }

    /// How long a closing JACK call may wait for its server while the process ends (`JackClient.boundClosingCalls`).
    static let closingCallSeconds = 1.0

    /// Ends the session: takes finalized, clients closed, the last events printed; returns the cycle costs measured.
    func finish() -> [(engine: String, cost: CycleHistogram.Summary, period: Int, rate: Int)] {
        systemd.stopping()
        for server in http { server.stop() }
        view.finish()
        let costs = session.cycleCosts()
        // The process ends: the takes are finished first (the recorder's close), then a JACK call that waits on a
        // server that does not answer (stopped, hung) is given up after a second, so the exit never waits on it.
        JackClient.boundClosingCalls(seconds: Self.closingCallSeconds)
        session.close()
        printer.print(session.drainEvents(), session: session)
        return costs
    }
}

/// The status and control options `record` and `play` share with `run`.
struct ControlOptions: ParsableArguments {
    @Option(name: .long, help: "OSC control port on 127.0.0.1, so `tandem status` and `tandem ctl` reach this process (default: none).")
    var controlPort: Int?

    @Flag(name: .long, help: "Status as JSON lines (every 0.5 s) on stdout, beside the event lines.")
    var json = false

    @Flag(name: .long, help: "No live view on a terminal, only events.")
    var noView = false

    @Option(name: .long, help: ArgumentHelp(
        "The HTTP and WebSocket API (and the page) on HOST:PORT, e.g. 127.0.0.1:8080; any address but loopback needs the token (`tandem http-token`).",
        valueName: "HOST:PORT"))
    var http: String?

    /// `--http` read (validated already).
    var httpAddress: HTTPAddress? { http.flatMap(HTTPAddress.init) }

    func validate() throws {
        if let controlPort, !Limits.controlPort.contains(controlPort) {
            throw ValidationError("--control-port must be \(Limits.controlPort.lowerBound) to \(Limits.controlPort.upperBound)")
        }
        if let http, HTTPAddress(http) == nil {
            throw ValidationError("--http '\(http)' is not \(HTTPAddress.form)")
        }
    }
}

/// Wakes the control loop when one of its sockets (the OSC port) has a datagram waiting, so a loop that sleeps long
/// when idle still answers at once. Its thread sleeps in poll(2) on those sockets and on a pipe of its own (written
/// to stop it), so an idle session wakes it never; after a wake it gives the loop 20 ms to read before looking again
/// (a datagram left unread costs at most the old 50 turns a second).
///
/// Threads: created and stopped by the control thread; its own thread only polls and posts.
final class SocketWaker {
    private let poller: PollingThread?

    init(fds: [Int32], wakeup: Wakeup) {
        // No pipe for it: no waker; the loop still turns on its own.
        poller = PollingThread(name: "tandem-sockets", fds: fds) {
            wakeup.post()
            usleep(20_000)
            return true
        }
    }

    /// Ends the thread at once. Control thread; idempotent.
    func stop() { poller?.stop() }
}

/// `SessionMetrics` for `/metrics`: made, fed and read on the control thread only (the HTTP handler hands its
/// rendering to the session's loop through the gateway), hence unchecked.
final class SessionMetricsBox: @unchecked Sendable {
    let metrics: SessionMetrics
    init(_ metrics: SessionMetrics) { self.metrics = metrics }
}
