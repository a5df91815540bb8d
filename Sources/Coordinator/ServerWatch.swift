import Engine
import Foundation
import Presets

/// Server loss and return as the session decides them: whether a loss ends the session or waits, when to look for
/// the lost server again (50 ms after the loss, then backing off to every 400 ms), and when to try again after a
/// return the session could not be restored on. Facts and the time in, decisions out: the session probes the server
/// and re-applies the preset (Session+Server).
struct ServerWatch {
    /// Whether the session waits for its lost server.
    private(set) var waiting = false
    /// When the server was last lost.
    private(set) var lostAt: Date?
    private var retryAt = Date.distantPast
    private var backoff = Self.firstBackoff

    static let firstBackoff = 0.05
    static let longestBackoff = 0.4
    /// The wait after a server that came back but on which the session could not be restored.
    static let afterFailedRestore = 0.5

    /// The server went away at `now`: true when the session waits for it, false when `on_server_loss` ends it.
    mutating func lost(at now: Date, policy: ServerLossPolicy) -> Bool {
        lostAt = now
        guard policy != .stop else { return false }
        waiting = true
        backoff = Self.firstBackoff
        retryAt = now
        return true
    }

    /// Whether to look for the server at `now`.
    func probeDue(at now: Date) -> Bool { waiting && now >= retryAt }

    /// The server was not there at `now`: look again after twice the last wait, up to `longestBackoff`.
    mutating func notThere(at now: Date) {
        backoff = min(backoff * 2, Self.longestBackoff)
        retryAt = now.addingTimeInterval(backoff)
    }

    /// The server is there: the session restores itself on it.
    mutating func back() { waiting = false }

    /// The server was there but the session could not be restored: wait again and retry after `afterFailedRestore`.
    mutating func restoreFailed(at now: Date) {
        waiting = true
        retryAt = now.addingTimeInterval(Self.afterFailedRestore)
    }
}
