import Foundation
import Jack
import Logging
import Loudness
import Presets
import Realtime
#if canImport(Glibc)
import Glibc
#endif

/// What happened to an isolated rack's process.
public enum RackIncident: Sendable, Equatable {
    /// The process ended by itself (a plugin crashed it: a signal, or an exit code).
    case crashed(String)
    /// Its cycle counter stopped while the server ran: the process was killed.
    case hung(Double)
    /// It did not say `ready` within `RackSupervisor.startSeconds` while the server ran (a plugin hung while being
    /// loaded, restored or warmed up on the process's main thread): the process was killed.
    case hungStarting(Double)
    /// Its whole process was stopped (SIGSTOP, a debugger's stop) for `RackSupervisor.frozenSeconds`: it was killed
    /// at once, so the clients after it in the graph (a take recording its output) run again.
    case frozen(Double)
    /// It ended with exit code 2 (bad input: its client name taken, a setting it refuses) before it was ready: no
    /// plugin's fault, so no crash; it is tried again only after `RackSupervisor.refusedRetrySeconds`.
    case refused(String)
    /// It ended with exit code 3 (its JACK server went away or could not be reached): no plugin's fault, so no crash;
    /// it is started again as after a crash, and comes back with the server.
    case serverLost
}

/// Runs one rack in a child process (`tandem rack --child …`: Tandem itself, handed the rack's config) and keeps it
/// running: a plugin that crashes (segfault, abort) or hangs takes down only that process, which comes back with its
/// last saved plugin state; the session's connection rules connect its ports again as they appear.
///
/// Heartbeat (`RackHeartbeat`, on a pipe at the child's fd 3): the child writes `ready` once its client is active,
/// then `cycles N` every 2 s. A thread of the supervisor sleeps on the pipe and wakes the session's loop when the
/// pipe ends (the process ended: a crash, seen at once) or the child says something (`ready`, an event, `hung`).
/// The child watches its own cycle counter: one that stands still for 1.5 s while the server runs is a hung plugin,
/// and the child says `hung S` and ends itself. The supervisor's own check is the backstop for a process whose main
/// thread is stuck too: a count that stops moving for `hangSeconds` while the server's frame time moves (the
/// process is killed with SIGKILL). Either way the rack is restarted like after a crash. Before `ready` nothing
/// counts cycles: a process that is not ready `startSeconds` after it started, while the server ran, is stuck in
/// its start (a plugin's instantiate, restore or warm-up run on its main thread) and is killed the same way.
///
/// Threads: the session's control thread (not `Sendable`).
public final class RackSupervisor {
    public private(set) var rack: RackSection
    /// Events its process told of on the heartbeat pipe (a control value, bypass or preset changed there): kind and
    /// text, for the session's subscribers. Taken by `takeRelayedEvents`.
    private var relayed: [(kind: String, text: String)] = []
    /// The control values, bypasses, mix and gain the process changed or acknowledged since its last document (see
    /// `ChainShadow`). Control thread; the session records what the process acknowledged to a relayed command.
    public var shadow = ChainShadow()
    /// Values the process must be given again once it is ready: set when it starts after a server loss (its saved
    /// state may predate what the session acknowledged); the session sends them and clears this.
    public var replay: ChainShadow?

    /// The events relayed since the last call. Control thread.
    public func takeRelayedEvents() -> [(kind: String, text: String)] {
        defer { relayed.removeAll() }
        return relayed
    }

    /// The audio ports its process has (from the rack's plugins when the preset leaves them out), for the status.
    public var ports = (inputs: 0, outputs: 0)
    /// The control maps its process runs (on its command line; see `Session.mapsRunningIn`).
    public var maps: [ControlMap] = []
    public private(set) var restarts = 0
    public private(set) var crashes = 0
    public private(set) var hangs = 0
    /// How long the process may stay stopped (state T) before it is killed; the loop of a session that records
    /// looks every 20 ms. (Measured: each 100 ms more costs the take behind the rack about 100 ms of skipped cycles.)
    public static let frozenSeconds = 0.1
    /// Starts that ended with exit code 2 before the process was ready (see `RackIncident.refused`).
    public private(set) var refusals = 0
    /// How long after a refused start the process is tried again.
    public static let refusedRetrySeconds = 30.0
    /// The child's cycle counter as last heard, and whether it said it is ready.
    public private(set) var cycles = 0
    /// The rack's loudness as its process last told (once a second; empty when not measured or not heard).
    public private(set) var loudness: [ProgrammeLoudness] = []
    public private(set) var ready = false
    /// When the rack went down last, and how long the last restart took (until `ready`).
    public private(set) var downSince: Date?
    public private(set) var lastRecoverySeconds: Double?
    /// The child's OSC control port on 127.0.0.1 (its plugins are set through it), chosen free at each start.
    public private(set) var controlPort: Int?
    private let arguments: [String]
    /// The rack as its process takes it at each start (see `RackDocuments`).
    private var document: String
    /// The control loop's wake-up, posted when the process speaks or ends.
    private let loopWakeup: Wakeup?
    private let logPath: String
    private let logger: Logger
    private var child: ChildProcess?
    private var pipeRead: Int32 = -1
    /// The write end of the configuration channel to the process (`RackDocuments`); -1: none.
    private var documentWrite: Int32 = -1
    private var reader: HeartbeatReader?
    /// Hang, freeze and restart times (see `RackWatch`).
    private var watch: RackWatch
    /// What the process said before it ended itself for a hung plugin (its `hung S` line comes before the pipe's end).
    private var hungFor: Double?

    /// `document`: the rack's configuration (`Session.rackDocument`), handed to the process at each start;
    /// `arguments`: the whole child command line (the `tandem` binary first). Nothing starts until `start`.
    /// `hangSeconds`: the backstop; three of the child's beats, so a beat read late is no hang. `startSeconds`: how
    /// long a start may take (here a rack is ready in 0.1-0.3 s; loading every installed plugin's description on a
    /// small board takes seconds).
    public init(rack: RackSection, document: String, arguments: [String], logPath: String, hangSeconds: Double = 6,
                startSeconds: Double = 10, logger: Logger = Logger(label: "tandem.rack"), loopWakeup: Wakeup? = nil) {
        self.loopWakeup = loopWakeup
        self.document = document
        self.rack = rack
        self.arguments = arguments
        self.logPath = logPath
        watch = RackWatch(hangSeconds: hangSeconds, startSeconds: startSeconds, now: Date())
        self.logger = logger
    }

    deinit { stop() }

    public var pid: pid_t? { child?.pid }
    public var isRunning: Bool { child?.isRunning ?? false }

    /// Spawns the child with the heartbeat pipe on its fd 3.
    public func start(now: Date = Date()) throws(EngineError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw EngineError(.jack, "rack '\(rack.name)': no pipe for its heartbeat: \(String(cString: strerror(errno)))")
        }
        // Neither end leaks into other children; the child gets the write end as its fd 3 (dup2 clears the flag).
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        // The configuration channel: the child reads its fd 4, the session writes without blocking.
        var docs: [Int32] = [-1, -1]
        guard pipe(&docs) == 0 else {
            close(fds[0])
            close(fds[1])
            throw EngineError(.jack, "rack '\(rack.name)': no pipe for its documents: \(String(cString: strerror(errno)))")
        }
        _ = fcntl(docs[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(docs[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(docs[1], F_SETFL, O_NONBLOCK)
        // Room for the largest document, so the one that starts the process is written whole without waiting
        // (F_SETPIPE_SZ; 1 MiB is Linux's default ceiling for it).
        _ = fcntl(docs[1], 1031, Int32(RackDocuments.maxBytes + 64))
        controlPort = Self.freeUDPPort()
        do {
            child = try ChildProcess(arguments + (controlPort.map { ["--control-port", "\($0)"] } ?? [])
                                        + ["--document-fd", "\(RackDocuments.childFD)"],
                                     environment: ["SWIFT_BACKTRACE": "enable=no"], outputPath: logPath,
                                     extraFDs: [3: fds[1], RackDocuments.childFD: docs[0]])
        } catch {
            for fd in fds + docs { close(fd) }
            throw EngineError(.badConfig, "rack '\(rack.name)': \(error)")
        }
        close(fds[1])
        close(docs[0])
        closePipe()
        pipeRead = fds[0]
        documentWrite = docs[1]
        guard send(document) else {
            _ = child?.stop(SIGKILL, grace: 1)
            throw EngineError(.badConfig, "rack '\(rack.name)': its configuration could not be handed to its process "
                              + "(\(document.utf8.count) bytes; at most \(RackDocuments.maxBytes))")
        }
        reader = HeartbeatReader(fd: pipeRead, wake: loopWakeup)
        ready = false
        hungFor = nil
        watch.moved(at: now)
        logger.info("rack process started", metadata: ["rack": "\(rack.name)", "pid": "\(child?.pid ?? 0)",
                                                      "log": "\(logPath)"])
    }

    /// Reads the heartbeat and decides. `serverMoving`: whether the server's frame time moved since the last call
    /// (a stopped server stops every client's counter: that is no hang). Returns what happened, if anything; the
    /// restart itself follows at once (or after a pause when the rack keeps crashing).
    public func poll(serverMoving: Bool, now: Date = Date()) -> RackIncident? {
        if watch.restartPending {
            guard watch.restartDue(at: now) else { return nil }
            restarts += 1
            do {
                try start(now: now)
            } catch {
                logger.error("rack could not be restarted", metadata: ["rack": "\(rack.name)", "error": "\(error)"])
                watch.startFailed(at: now)
            }
            return nil
        }
        guard let c = child, let reader else { return nil }
        let heard = reader.take()
        for line in heard.lines {
            if line == "ready" {
                if !ready, let since = downSince {
                    lastRecoverySeconds = now.timeIntervalSince(since)
                    downSince = nil
                }
                ready = true
                watch.moved(at: now)
            } else if line.hasPrefix("hung "), let seconds = Double(line.dropFirst(5)), seconds.isFinite {
                hungFor = seconds
            } else if line.hasPrefix("event ") {
                let parts = line.dropFirst(6).split(separator: " ", maxSplits: 1).map(String.init)
                if let kind = parts.first {
                    let text = parts.count > 1 ? parts[1] : ""
                    shadow.observe(kind: kind, text: text, rack: rack.name)
                    if relayed.count < 4096 { relayed.append((kind, text)) }
                }
            }
        }
        if heard.cycles != cycles || !serverMoving { watch.moved(at: now) }
        cycles = heard.cycles
        if let readings = heard.loudness { loudness = readings }
        if heard.ended || !c.isRunning {
            // The pipe ends as the process exits; it is a zombie a moment later. A process that closed the pipe
            // and lives on cannot be supervised: it goes.
            if c.wait(timeout: 1) == nil {
                kill(c.pid, SIGKILL)
                _ = c.wait(timeout: 2)
            }
            if let seconds = hungFor {
                hungFor = nil
                return down(.hung(seconds), at: now)
            }
            return down(Self.incident(exitCode: c.exitCode ?? -1, ready: ready, refusal: refusal), at: now)
        }
        // A stopped process holds up every client after it in the graph for as long as it stays stopped (JACK2
        // removes a client only once its process is gone): it goes at once. Before `ready`, the hang time counts from
        // the start, or the last look at a stopped server.
        guard let verdict = watch.look(stopped: Self.isStopped(c.pid), ready: ready, at: now) else { return nil }
        kill(c.pid, SIGKILL)
        _ = c.wait(timeout: 2)
        switch verdict {
        case .frozen(let seconds): return down(.frozen(seconds), at: now)
        case .hung(let seconds): return down(.hung(seconds), at: now)
        case .hungStarting(let seconds): return down(.hungStarting(seconds), at: now)
        }
    }

    /// What a process's end was, by its exit code (docs/CLI.md: 2 bad input, 3 JACK server missing or lost; a code
    /// over 128 is the signal that killed it). `refusal`: the words of a refusal (its log's last lines).
    static func incident(exitCode code: Int32, ready: Bool, refusal: () -> String) -> RackIncident {
        if code == 2 && !ready { return .refused(refusal()) }
        if code == 3 { return .serverLost }
        return .crashed(code > 128 ? "killed by signal \(code - 128) (\(ChildProcess.signalName(code - 128)))"
                                    : "exited with code \(code)")
    }

    private func down(_ incident: RackIncident, at now: Date) -> RackIncident {
        downSince = now
        switch incident {
        case .crashed: crashes += 1
        case .hung, .hungStarting, .frozen: hangs += 1
        case .serverLost: break
        case .refused(let why):
            refusals += 1
            logger.error("rack process refused to start; trying again later", metadata: [
                "rack": "\(rack.name)", "why": "\(why)", "retry": "\(Self.refusedRetrySeconds) s"])
            child = nil
            closePipe()
            watch.wentDown(refused: true, at: now)
            return incident
        }
        logger.error("rack process went down; restarting it", metadata: ["rack": "\(rack.name)", "why": "\(incident)"])
        child = nil
        closePipe()
        // At once, unless it keeps going down: then a pause, so a plugin that crashes on load cannot spin.
        watch.wentDown(refused: false, at: now)
        return incident
    }

    private func closePipe() {
        reader?.stop()
        reader = nil
        if pipeRead >= 0 {
            close(pipeRead)
            pipeRead = -1
        }
        if documentWrite >= 0 {
            close(documentWrite)
            documentWrite = -1
        }
    }

    /// Hands the running process the rack as `section` now says (a re-applied preset changed its plugins, their
    /// settings, its gain or mix, not its ports): `document` is the rack's document (`Session.rackDocument`), which a
    /// restart also starts from. False when the process cannot take it now (not running or not ready, or the pipe is
    /// full): the caller restarts it instead. Control thread.
    public func update(_ section: RackSection, document: String) -> Bool {
        guard let c = child, c.isRunning, ready, send(document) else { return false }
        rack = section
        self.document = document
        shadow.reset()   // the document holds the values as they are
        return true
    }

    /// Hands the running process its rack's document with changed maps (added or cleared at run time; the rack and
    /// its values as they are): it replaces its maps, and a restart starts from this document. False when it cannot
    /// take it now (the caller restarts it instead). Control thread.
    public func updateMaps(_ maps: [ControlMap], document: String) -> Bool {
        guard let c = child, c.isRunning, ready, send(document) else { return false }
        self.maps = maps
        self.document = document
        return true
    }

    /// Writes one framed document to the process, whole or not at all.
    private func send(_ document: String) -> Bool {
        guard documentWrite >= 0 else { return false }
        let bytes = RackDocuments.frame(document)
        guard bytes.count <= RackDocuments.maxBytes else { return false }
        let n = bytes.withUnsafeBytes { write(documentWrite, $0.baseAddress, $0.count) }
        guard n == bytes.count else {
            // A part written would leave the channel out of step: the process goes, and starts with the new line.
            logger.warning("rack document could not be written whole", metadata: ["rack": "\(rack.name)",
                                                                                  "written": "\(n)"])
            return false
        }
        return true
    }

    /// Whether the process is stopped by a signal (state `T` in /proc; `t`, stopped by a debugger, is left alone).
    static func isStopped(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first == "T"
    }

    /// The last `tandem:` line of the process's log (what it refused), or a generic reason.
    private func refusal() -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").last { $0.hasPrefix("tandem: ") }.map { String($0.dropFirst(8)) }
        return line ?? "exited with code 2 before it was ready (see \(logPath))"
    }

    /// Ends the child (SIGTERM, then SIGKILL after `grace`) and stops supervising.
    public func stop(grace: Double = 5) {
        watch.stop()
        if let c = child { _ = c.stop(SIGTERM, grace: grace) }
        child = nil
        closePipe()
    }

    /// A UDP port on 127.0.0.1 free now (the kernel's choice for port 0), or nil.
    static func freeUDPPort() -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return nil }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        return port >= 1024 ? port : nil
    }
}
