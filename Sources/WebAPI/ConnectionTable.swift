import HummingbirdCore
import NIOCore
import Synchronization

/// The server's connections, open at once at most `maxConnections` (`HTTPServer.Configuration`), and which of them
/// are idle: opened or kept alive without a whole request head in yet. An idle connection costs nothing to close
/// (no request of it is under way), so it holds a slot only until the slot is wanted: when the table is full, a new
/// connection is accepted all the same and the connection idle the longest is closed for it. So a client that opens
/// hundreds of connections and sends nothing (on a non-loopback bind, anyone on the network, without the token) can
/// never keep a request out; before, each such connection held its slot for the whole first-head deadline and the
/// rest waited in the kernel's backlog behind them. Connections with a request under way, and event streams, are
/// never closed for another; when all `maxConnections` are such, new ones wait in the backlog as before, and the
/// table takes up accepting again when one closes or goes idle.
///
/// Hummingbird's `MaximumAvailableConnections` counts connections but cannot tell an idle one from a working one,
/// nor close one; this is its replacement, fed by the connection's guard (`ConnectionGuard`: opened, first head in,
/// closed) and `NextRequestDeadline` (a kept-alive connection's next head in, its answer out).
///
/// Threads: any (a Mutex); `connectionOpened`, `connectionClosed` and `isAcceptingNewConnections` from the server
/// channel's event loop, the rest from each connection's.
final class ConnectionTable: AvailableConnectionsDelegate, Sendable {
    let maxConnections: Int

    private struct Entry {
        let channel: any Channel
        /// Since when it is idle; nil while a request is under way (or it is an event stream).
        var idleSince: NIODeadline?
    }

    private struct State {
        var open = 0
        var entries: [ObjectIdentifier: Entry] = [:]
        /// Idle connections closed for a newer one.
        var evicted = 0
        /// The server stopped accepting (every slot working); a connection going idle asks it to accept again.
        var waiting = false
    }

    private let state = Mutex(State())

    init(maxConnections: Int) { self.maxConnections = maxConnections }

    // MARK: AvailableConnectionsDelegate (the server channel's event loop)

    func connectionOpened() { state.withLock { $0.open += 1 } }

    func connectionClosed() { state.withLock { $0.open -= 1 } }

    func isAcceptingNewConnections() -> Bool {
        state.withLock { s in
            let accepting = s.open < maxConnections || s.entries.values.contains { $0.idleSince != nil }
            s.waiting = !accepting
            return accepting
        }
    }

    // MARK: From the connections (each its own event loop)

    /// A connection opened (idle until its first head is in); when the table is over full, the connection idle the
    /// longest (another than this one) is closed.
    func opened(_ channel: any Channel) {
        let victim = state.withLock { s -> (any Channel)? in
            s.entries[ObjectIdentifier(channel)] = Entry(channel: channel, idleSince: .now())
            guard s.entries.count > maxConnections else { return nil }
            let oldest = s.entries.filter { $0.key != ObjectIdentifier(channel) && $0.value.idleSince != nil }
                .min { $0.value.idleSince! < $1.value.idleSince! }
            guard let oldest else { return nil }
            s.entries[oldest.key]?.idleSince = nil   // closing: never chosen twice
            s.evicted += 1
            return oldest.value.channel
        }
        victim?.close(promise: nil)
    }

    /// A request head came in whole: the connection works until its answer is out.
    func busy(_ channel: any Channel) {
        state.withLock { $0.entries[ObjectIdentifier(channel)]?.idleSince = nil }
    }

    /// An answer went out: the connection is idle until its next head. A server waiting for a free slot accepts again.
    func idle(_ channel: any Channel) {
        let wake = state.withLock { s -> Bool in
            guard s.entries[ObjectIdentifier(channel)] != nil else { return false }
            s.entries[ObjectIdentifier(channel)]?.idleSince = .now()
            defer { s.waiting = false }
            return s.waiting
        }
        if wake { channel.parent?.read() }
    }

    func closed(_ channel: any Channel) {
        state.withLock { _ = $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Idle connections closed for newer ones so far.
    var evictedCount: Int { state.withLock { $0.evicted } }
    /// Connections in the table now.
    var count: Int { state.withLock { $0.entries.count } }
}
