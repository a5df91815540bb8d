import Engine
import Foundation

/// The session's long-running jobs by name (takes, playback, reconnect attempts), for the status: one of a name at
/// a time, each with an optional deadline after which it is dropped from the list. What a deadline ends is the
/// session's business (`Session.tickSchedule`).
///
/// Threads: the session's control thread, like the session that owns it (not `Sendable`).
public final class WorkerRegistry {
    /// The jobs a session runs.
    public enum Job: String, Sendable, CaseIterable {
        /// A take, until it ends or the stop time drops it.
        case take
        /// The item the player plays.
        case playback
        /// The wait for a lost server.
        case reconnect
    }

    public struct Worker: Sendable {
        public var name: String
        public var started: Date
        public var deadline: Date?
        public var detail: String
    }

    private var workers: [String: Worker] = [:]

    public init() {}

    /// Registers a job, started at `now` (the session's clock). Returns false (and changes nothing) when one of that
    /// name is already running.
    @discardableResult
    public func start(_ job: Job, detail: String = "", deadline: Date? = nil, now: Date) -> Bool {
        if workers[job.rawValue] != nil { return false }
        workers[job.rawValue] = Worker(name: job.rawValue, started: now, deadline: deadline, detail: detail)
        return true
    }

    /// Removes a finished job.
    public func finish(_ job: Job) { workers[job.rawValue] = nil }

    public func isRunning(_ job: Job) -> Bool { workers[job.rawValue] != nil }

    /// Drops the jobs whose deadline has passed.
    public func tick(now: Date) {
        // Every loop turn: nothing is built unless a job is due.
        guard workers.values.contains(where: { ($0.deadline ?? .distantFuture) <= now }) else { return }
        workers = workers.filter { ($0.value.deadline ?? .distantFuture) > now }
    }

    /// Whether no job is running.
    public var isEmpty: Bool { workers.isEmpty }

    /// The running jobs, oldest first.
    public var list: [Worker] { workers.values.sorted { $0.started < $1.started } }
}
