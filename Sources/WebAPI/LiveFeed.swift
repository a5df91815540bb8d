import Coordinator
import Engine
import Foundation
import Loudness
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
        /// The meters message every stream sends, made once per publish (not once per client).
        var meters = ""
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

    /// The meters now, as the message the streams send. Control thread.
    func publish(_ session: Session) {
        let message = Self.metersMessage(session.meters, loudness: session.loudness)
        state.withLock { $0.meters = message }
    }

    /// The latest meters message.
    var meters: String { state.withLock { $0.meters } }

    /// `{"type":"meters","meters":[{"port":…,"peakDB":…,"rmsDB":…,"holdDB":…,"clip":…}]}`, silence as "-inf" as in the
    /// status; with `"loudness":[…]` (the status's `loudness` entries) when programmes are measured.
    static func metersMessage(_ meters: [SessionStatus.Meter], loudness: [ProgrammeLoudness] = []) -> String {
        var text = #"{"meters":["#
        for (i, m) in meters.enumerated() {
            if i > 0 { text += "," }
            text += #"{"clip":\#(m.clip),"holdDB":\#(number(m.holdDB)),"peakDB":\#(number(m.peakDB)),"port":\#(quoted(m.port)),"rmsDB":\#(number(m.rmsDB))}"#
        }
        text += "]"
        if !loudness.isEmpty, let data = try? JSONEncoder().encode(loudness) {
            text += #","loudness":"# + String(decoding: data, as: UTF8.self)
        }
        return text + #","type":"meters"}"#
    }

    static func number(_ d: Double) -> String {
        d.isFinite ? String(format: "%.2f", d) : d.isNaN ? #""nan""# : d < 0 ? #""-inf""# : #""inf""#
    }

    static func quoted(_ s: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [s], options: [])) ?? Data("[\"\"]".utf8)
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }

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
