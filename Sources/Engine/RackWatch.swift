import Foundation

/// When an isolated rack's process counts as down and when it starts again, as a value; `RackSupervisor` feeds it
/// what it hears and carries its verdicts out. A process is hung when its cycle count has not moved for `hangSeconds`
/// while the server's frame time moved (`startSeconds` before it said `ready`), and frozen once the whole process has
/// been stopped for `RackSupervisor.frozenSeconds`. A process that went down starts again at once, or 5 s later when
/// it went down more than five times in a minute; 30 s after a refused start; 2 s after a start that failed.
struct RackWatch {
    let hangSeconds: Double
    let startSeconds: Double
    /// When the cycle count last moved (or the server stood still, or the process started).
    private(set) var lastMove: Date
    /// Since when the process has been seen stopped.
    private var stoppedSince: Date?
    /// When the process starts again (nil: it runs, or it is not to start).
    private(set) var restartAt: Date?
    /// When it went down in the last minute.
    private var recentDowns: [Date] = []

    /// Restarts in a minute after which a restart waits `crashLoopPause`.
    static let crashLoopDowns = 5
    static let crashLoopPause = 5.0
    static let failedStartPause = 2.0

    enum Verdict: Equatable {
        case frozen(seconds: Double)
        case hung(seconds: Double)
        case hungStarting(seconds: Double)
    }

    init(hangSeconds: Double, startSeconds: Double, now: Date) {
        self.hangSeconds = hangSeconds
        self.startSeconds = startSeconds
        lastMove = now
    }

    /// The process started (or said `ready`, or its count moved, or the server stood still) at `now`.
    mutating func moved(at now: Date) { lastMove = now }

    /// The verdict at `now` on a process that is running: `stopped`, whether it is stopped by a signal; `ready`,
    /// whether it said so.
    mutating func look(stopped: Bool, ready: Bool, at now: Date) -> Verdict? {
        if stopped {
            let since = stoppedSince ?? now
            stoppedSince = since
            let seconds = now.timeIntervalSince(since)
            if seconds >= RackSupervisor.frozenSeconds {
                stoppedSince = nil
                return .frozen(seconds: seconds)
            }
        } else {
            stoppedSince = nil
        }
        let stalled = now.timeIntervalSince(lastMove)
        if stalled > (ready ? hangSeconds : startSeconds) {
            return ready ? .hung(seconds: stalled) : .hungStarting(seconds: stalled)
        }
        return nil
    }

    /// The process went down at `now` (`refused`: it refused its configuration before it was ready).
    mutating func wentDown(refused: Bool, at now: Date) {
        if refused {
            restartAt = now.addingTimeInterval(RackSupervisor.refusedRetrySeconds)
            return
        }
        recentDowns = recentDowns.filter { now.timeIntervalSince($0) < 60 } + [now]
        restartAt = recentDowns.count > Self.crashLoopDowns ? now.addingTimeInterval(Self.crashLoopPause) : now
    }

    /// Whether the process is to start again now (then the restart is taken: ask again only after it went down).
    mutating func restartDue(at now: Date) -> Bool {
        guard let at = restartAt, now >= at else { return false }
        restartAt = nil
        return true
    }

    /// A restart could not start the process: try again a little later.
    mutating func startFailed(at now: Date) { restartAt = now.addingTimeInterval(Self.failedStartPause) }

    /// Supervision ends: nothing starts again.
    mutating func stop() { restartAt = nil }

    /// Whether a restart is waiting.
    var restartPending: Bool { restartAt != nil }
}
