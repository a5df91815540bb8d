import Coordinator
import Engine
import Foundation
import Realtime
import Synchronization

/// The one door from the network's threads to the session: a request hands in a piece of work, the session's control
/// loop carries it out on its own thread at its next turn (woken at once), and the request gets the result. Nothing
/// on a network thread ever touches `Session`; a control loop that does not get to the work in time (a stuck apply)
/// costs the request a 503, never the loop anything.
///
/// Threads: `run` from any task; `drain` from the control thread only.
public final class SessionGateway: Sendable {
    /// How long a request waits for the control loop.
    public static let timeoutSeconds = 5.0
    /// At most this many pieces of work wait at once; more are refused (503) at once.
    public static let capacity = 512
    /// At most this many are carried out per turn of the loop, so a flood never holds it long.
    public static let perTurn = 64

    private let jobs = Mutex<[Job]>([])
    private let wake: Wakeup?

    struct Job: Sendable {
        let work: @Sendable (Session) -> Void
    }

    public struct Busy: Error, CustomStringConvertible {
        public let description: String
    }

    /// `wake`: the control loop's wake-up (posted when work arrives).
    public init(wake: Wakeup?) {
        self.wake = wake
    }

    /// Carries out `body` on the control thread and returns its result; throws `Busy` when the queue is full or the
    /// loop did not get to it within `timeoutSeconds` (the work is then skipped if it has not started).
    public func run<T: Sendable>(_ body: @escaping @Sendable (Session) -> T) async throws -> T {
        let once = Once<T>()
        let job = Job { session in
            guard once.claim() else { return }
            once.finish(.success(body(session)))
        }
        let accepted = jobs.withLock { q -> Bool in
            guard q.count < Self.capacity else { return false }
            q.append(job)
            return true
        }
        guard accepted else { throw Busy(description: "the session has \(Self.capacity) requests waiting; try again") }
        wake?.post()
        return try await withCheckedThrowingContinuation { continuation in
            once.set(continuation)
            Task {
                try? await Task.sleep(nanoseconds: UInt64(Self.timeoutSeconds * 1e9))
                if once.claim() {
                    once.finish(.failure(Busy(description: "the session did not answer within \(Self.timeoutSeconds) s")))
                }
            }
        }
    }

    /// Carries out the waiting work (at most `perTurn`). Control thread. Returns how many ran.
    @discardableResult
    public func drain(_ session: Session) -> Int {
        let batch = jobs.withLock { q -> [Job] in
            let n = min(q.count, Self.perTurn)
            defer { q.removeFirst(n) }
            return Array(q.prefix(n))
        }
        for job in batch { job.work(session) }
        if jobs.withLock({ !$0.isEmpty }) { wake?.post() }   // more next turn, at once
        return batch.count
    }

    /// Whether work waits.
    public var isEmpty: Bool { jobs.withLock { $0.isEmpty } }
}

/// A result delivered once: the work and the timeout race to `claim`; the winner `finish`es, which resumes the
/// continuation as soon as both it and the result are there.
final class Once<T: Sendable>: Sendable {
    private struct State {
        var claimed = false
        var result: Result<T, any Error>?
        var continuation: CheckedContinuation<T, any Error>?
    }
    private let state = Mutex(State())

    func claim() -> Bool {
        state.withLock { s in
            if s.claimed { return false }
            s.claimed = true
            return true
        }
    }

    func finish(_ result: Result<T, any Error>) {
        let c = state.withLock { s -> CheckedContinuation<T, any Error>? in
            s.result = result
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume(with: result)
    }

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { s -> Result<T, any Error>? in
            if let r = s.result { return r }
            s.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }
}
