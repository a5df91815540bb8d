import Foundation
import Realtime
import Synchronization

/// Commands from the control side to one disk thread (the recorder's writer, the player's reader), and a count of
/// those carried out, so the control side can wait for a command to be taken (a seek before a play).
///
/// Threads: `send` and `waitUntilHandled` from the control side; `take` and `handled` on the disk thread only.
/// Sending posts the disk thread's wake-up; nothing here is touched by the RT side.
public final class Mailbox<Command: Sendable>: Sendable {
    private let box = Mutex<(pending: [Command], sent: Int, handled: Int)>(([], 0, 0))
    private let wakeup: Wakeup

    public init(wakeup: Wakeup) { self.wakeup = wakeup }

    /// Queues a command and wakes the disk thread. Control side.
    public func send(_ command: Command) {
        box.withLock {
            $0.pending.append(command)
            $0.sent += 1
        }
        wakeup.post()
    }

    /// Every command queued since the last call, oldest first. Disk thread.
    public func take() -> [Command] {
        box.withLock { b in
            defer { b.pending.removeAll() }
            return b.pending
        }
    }

    /// Marks `count` taken commands as carried out. Disk thread.
    public func handled(_ count: Int) {
        guard count > 0 else { return }
        box.withLock { $0.handled += count }
    }

    /// Waits until every command sent so far has been carried out (up to `seconds`). Returns false on timeout.
    /// Control side.
    public func waitUntilHandled(seconds: Double) -> Bool {
        let target = box.withLock { $0.sent }
        let deadline = Date().addingTimeInterval(seconds)
        while box.withLock({ $0.handled }) < target {
            if Date() >= deadline { return false }
            usleep(1_000)
        }
        return true
    }
}

/// Events from a disk thread to the control side, drained by the control loop.
///
/// Threads: `post` on the disk thread, `drain` on the control side.
public final class Outbox<Event: Sendable>: Sendable {
    private let events = Mutex<[Event]>([])

    public init() {}

    public func post(_ event: Event) { events.withLock { $0.append(event) } }

    /// Events since the last call, oldest first.
    public func drain() -> [Event] {
        events.withLock { e in
            defer { e.removeAll() }
            return e
        }
    }
}
