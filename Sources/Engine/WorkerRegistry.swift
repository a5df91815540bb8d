import Foundation

/// The session's long-running jobs by name (takes, playback, reconnect attempts), for the status: one of a name at
/// a time, each with an optional deadline after which it is dropped from the list. What a deadline ends is the
/// session's business (`Session.tickSchedule`).
///
/// Threads: the session's control thread, like the session that owns it (not `Sendable`).
public final class WorkerRegistry {
    public struct Worker: Sendable {
        public var name: String
        public var started: Date
        public var deadline: Date?
        public var detail: String
    }

    private var workers: [String: Worker] = [:]

    public init() {}

    /// Registers a job. Returns false (and changes nothing) when one of that name is already running.
    @discardableResult
    public func start(_ name: String, detail: String = "", deadline: Date? = nil) -> Bool {
        if workers[name] != nil { return false }
        workers[name] = Worker(name: name, started: Date(), deadline: deadline, detail: detail)
        return true
    }

    /// Removes a finished job.
    public func finish(_ name: String) { workers[name] = nil }

    public func isRunning(_ name: String) -> Bool { workers[name] != nil }

    /// Drops the jobs whose deadline has passed.
    public func tick(now: Date = Date()) {
        // Every loop turn: nothing is built unless a job is due.
        guard workers.values.contains(where: { ($0.deadline ?? .distantFuture) <= now }) else { return }
        workers = workers.filter { ($0.value.deadline ?? .distantFuture) > now }
    }

    /// Whether no job is running.
    public var isEmpty: Bool { workers.isEmpty }

    /// The running jobs, oldest first.
    public var list: [Worker] { workers.values.sorted { $0.started < $1.started } }
}
