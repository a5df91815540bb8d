import Engine
import Foundation
import Synchronization

/// A session event with its place in the session's one stream: a sequence number that grows by one per event, so a
/// subscriber that saw N and next sees N + 3 knows it missed two, and the time it was drained.
public struct SequencedEvent: Sendable {
    public let sequence: UInt64
    public let time: Date
    public let event: SessionEvent
}

/// The session's events in one numbered stream (see `SequencedEvent`), the last `capacity` of them kept so a
/// subscriber that reconnects catches up from the number it last saw (or learns that it fell too far behind).
///
/// Threads: `record` from the control thread; `since` and `last` from any thread (a network server's).
public final class EventJournal: Sendable {
    public static let capacity = 4096
    private let state = Mutex(State())

    private struct State {
        var events: [SequencedEvent] = []
        var next: UInt64 = 1
    }

    public init() {}

    /// Numbers and keeps `events` (in order); returns them numbered. Control thread.
    @discardableResult
    public func record(_ events: [SessionEvent], at time: Date = Date()) -> [SequencedEvent] {
        guard !events.isEmpty else { return [] }
        return state.withLock { s in
            let numbered = events.enumerated().map { SequencedEvent(sequence: s.next + UInt64($0.offset), time: time, event: $0.element) }
            s.next += UInt64(events.count)
            s.events += numbered
            if s.events.count > Self.capacity { s.events.removeFirst(s.events.count - Self.capacity) }
            return numbered
        }
    }

    /// The events after `sequence` still kept, and whether some after it are gone already (the subscriber missed
    /// them and should read the state again).
    public func since(_ sequence: UInt64) -> (events: [SequencedEvent], missed: Bool) {
        state.withLock { s in
            let kept = s.events.filter { $0.sequence > sequence }
            let first = s.events.first?.sequence ?? s.next
            return (kept, sequence + 1 < first && sequence + 1 < s.next)
        }
    }

    /// The number of the last event (0: none yet).
    public var last: UInt64 { state.withLock { $0.next - 1 } }
}
