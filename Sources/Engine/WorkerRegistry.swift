import Foundation
import Synchronization

/// The session's long-running jobs by name (takes, playback, reconnect attempts): one of a name at a time, each
/// with an optional deadline whose handler ends it cleanly.
///
/// Threads: any (a mutex guards it); handlers run on the thread that calls `tick`, outside the lock.
public final class WorkerRegistry: @unchecked Sendable {
    public struct Worker: Sendable {
        public var name: String
        public var started: Date
        public var deadline: Date?
        public var detail: String
    }

    private let workers = Mutex<[String: (Worker, (@Sendable () -> Void)?)]>([:])

    public init() {}

    /// Registers a job. Returns false (and changes nothing) when one of that name is already running.
    @discardableResult
    public func start(_ name: String, detail: String = "", deadline: Date? = nil,
                      onDeadline: (@Sendable () -> Void)? = nil) -> Bool {
        workers.withLock { w in
            if w[name] != nil { return false }
            w[name] = (Worker(name: name, started: Date(), deadline: deadline, detail: detail), onDeadline)
            return true
        }
    }

    /// Removes a finished job.
    public func finish(_ name: String) {
        _ = workers.withLock { $0.removeValue(forKey: name) }
    }

    public func isRunning(_ name: String) -> Bool { workers.withLock { $0[name] != nil } }

    /// Runs the handlers of jobs whose deadline has passed (each once) and removes those jobs.
    public func tick(now: Date = Date()) {
        let due: [(@Sendable () -> Void)?] = workers.withLock { w in
            let names = w.filter { ($0.value.0.deadline ?? .distantFuture) <= now }.map(\.key)
            return names.map { w.removeValue(forKey: $0)?.1 }
        }
        for handler in due { handler?() }
    }

    /// The running jobs, oldest first.
    public var list: [Worker] { workers.withLock { $0.values.map(\.0).sorted { $0.started < $1.started } } }
}
