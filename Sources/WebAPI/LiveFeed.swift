import Engine
import Foundation
import Synchronization

/// What the event streams read between turns of the control loop: the session's numbered events (its journal,
/// thread-safe) and the meters, published by the control loop each turn while anyone listens. A stream never asks
/// the session anything itself.
///
/// Threads: `publish` from the control thread; the rest from any task.
final class LiveFeed: Sendable {
    let journal: EventJournal
    let maxListeners: Int
    private let state = Mutex(State())

    struct State {
        var meters: [SessionStatus.Meter] = []
        var metersAt = Date.distantPast
        var listeners = 0
        var closed = false
        /// Streams cut off because they could not keep up.
        var slow = 0
    }

    init(journal: EventJournal, maxListeners: Int) {
        self.journal = journal
        self.maxListeners = maxListeners
    }

    var hasListeners: Bool { state.withLock { $0.listeners > 0 } }

    /// The meters now. Control thread.
    func publish(_ session: Session) {
        let meters = session.meters
        state.withLock {
            $0.meters = meters
            $0.metersAt = Date()
        }
    }

    var meters: [SessionStatus.Meter] { state.withLock { $0.meters } }

    /// A stream starts (false: too many, or the server stops).
    func join() -> Bool {
        state.withLock { s in
            guard !s.closed, s.listeners < maxListeners else { return false }
            s.listeners += 1
            return true
        }
    }

    func leave(slow: Bool = false) {
        state.withLock {
            $0.listeners -= 1
            if slow { $0.slow += 1 }
        }
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var slowCount: Int { state.withLock { $0.slow } }

    func close() { state.withLock { $0.closed = true } }
}
