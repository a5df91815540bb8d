import Control
import Coordinator
import Engine
import Foundation
import Logging
import Presets
import Realtime
#if canImport(Glibc)
import Glibc
#endif

/// What `tandem run` tells systemd (docs/DEPLOYMENT.md): `READY=1` once the clients are active and the preset's
/// connections made, `STATUS=` every few seconds, `WATCHDOG=1` while the real-time side and the control loop run,
/// `RELOADING=1` … `READY=1` around a SIGHUP reload, `STOPPING=1` on the way out. Does nothing without
/// `$NOTIFY_SOCKET`.
///
/// Threads: the control loop only.
final class ServiceNotifications {
    private let notifier: SystemdNotifier?
    private var gate: WatchdogGate?
    private var lastStatus = -Double.infinity
    private var lastStatusText = ""
    private let logger: Logger
    /// Seconds between two STATUS updates (sooner when the text's first part changes).
    static let statusEvery = 2.0

    /// Reads the environment, then removes `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from it, so a process
    /// Tandem starts (a JACK server, a rack) never speaks to systemd in Tandem's name. Call before threads that read the
    /// environment start.
    init(logger: Logger = Logger(label: "tandem.systemd")) {
        self.logger = logger
        notifier = SystemdNotifier.fromEnvironment(logger: logger)
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(key) }
        if let n = notifier {
            logger.debug("systemd notifications to \(n.socketName)",
                         metadata: ["watchdog": "\(n.watchdogInterval.map { "every \($0) s" } ?? "off")"])
        }
    }

    var isActive: Bool { notifier != nil }

    /// The longest a control-loop turn may wait so the watchdog pings on time (a quarter of its interval), if any.
    var longestTurn: Double? { notifier?.watchdogInterval.map { $0 / 4 } }

    private static func now() -> Double { Double(monotonicNanoseconds()) / 1e9 }

    /// The session is up: clients active, connections made.
    func ready(_ session: Session) {
        guard let n = notifier else { return }
        if let interval = n.watchdogInterval, gate == nil {
            let period = session.recorder.map { Double($0.client.bufferSize) / Double(max(1, $0.sampleRate)) }
                ?? session.player.map { Double($0.client.bufferSize) / Double(max(1, $0.sampleRate)) } ?? 0
            gate = WatchdogGate(interval: interval, periodSeconds: period)
        }
        lastStatusText = Self.statusText(session.status())
        lastStatus = Self.now()
        n.send(["READY=1", "STATUS=" + lastStatusText])
    }

    /// Each control-loop turn: a watchdog ping when due and the engines are alive, the status when due.
    func tick(_ session: Session) {
        guard let n = notifier else { return }
        let now = Self.now()
        if gate != nil {
            let cycles = [session.recorder?.cycles, session.player?.cycles].compactMap { $0 }
            let wasHolding = gate?.isHolding ?? false
            if gate?.check(cycles: cycles, now: now) == true {
                n.send("WATCHDOG=1")
                if wasHolding { logger.notice("JACK cycles run again; watchdog pings resumed") }
            } else if !wasHolding && gate?.isHolding == true {
                let stale = Limits.number(gate?.staleAfter ?? 0)
                logger.warning("no JACK cycle for \(stale) s (the server stalled?); watchdog pings held back")
            }
        }
        if now - lastStatus >= Self.statusEvery {
            lastStatus = now
            let text = Self.statusText(session.status())
            if text != lastStatusText {
                lastStatusText = text
                n.send("STATUS=" + text)
            }
        }
    }

    /// Before the first apply, while `tandem run` may wait for its server (`session.server_wait`): says so, and
    /// stretches systemd's start timeout to cover the wait (`EXTEND_TIMEOUT_USEC`), so a long wait is not a failure.
    func waitingForServer(_ name: String, seconds: Double) {
        guard let n = notifier, seconds.isFinite, seconds > 0, seconds < 1e9 else { return }
        n.send(["STATUS=waiting for JACK server '\(name)' (up to \(Limits.number(seconds)) s)",
                "EXTEND_TIMEOUT_USEC=\(UInt64((seconds + 30) * 1_000_000))"])
    }

    /// Before a SIGHUP re-apply.
    func reloading() { notifier?.reloading() }

    /// After a SIGHUP re-apply: what changed (nil report: the reload was refused and the running setup kept).
    func reloaded(_ session: Session, report: ApplyReport?, problem: String? = nil) {
        guard let n = notifier else { return }
        let what = report.map { "reloaded: \($0.graphChanges) graph changes (\($0))" }
            ?? "reload refused, running setup kept: \(problem ?? "see the log")"
        lastStatusText = what
        lastStatus = Self.now()
        n.send(["READY=1", "STATUS=" + what])
    }

    /// On the way out, before the takes are finalized.
    func stopping() {
        notifier?.send(["STOPPING=1", "STATUS=stopping: finalizing takes"])
    }

    /// One line for `systemctl status`: the take and its time, the player's item, xruns and drops.
    static func statusText(_ s: SessionStatus) -> String {
        if s.serverLost { return "waiting for JACK server '\(s.server)' to come back" }
        var parts: [String] = []
        if let r = s.recorder {
            if r.recording, let take = r.take {
                parts.append("recording take \(take) (\(clock(r.seconds)))")
            } else {
                parts.append("recorder idle")
            }
            parts.append("xruns \(r.xruns), dropped \(r.droppedFrames) frames")
        }
        if let p = s.player {
            if p.playing, let item = p.item {
                parts.append("playing item \(item + 1)/\(p.items) (\(clock(p.seconds)) of \(clock(p.duration)))")
            } else {
                parts.append(p.paused ? "player paused" : "player stopped")
            }
            if s.recorder == nil { parts.append("xruns \(p.xruns)") }
            parts.append("underruns \(p.underrunFrames) frames")
        }
        return parts.isEmpty ? "running" : parts.joined(separator: ", ")
    }

    private static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else { return "-" }
        let s = Int(seconds)
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}
