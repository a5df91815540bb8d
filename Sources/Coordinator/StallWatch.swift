import Engine
import Foundation

/// Whether JACK still runs the recorder's cycles while the server is up, as a value: the recorder's cycle count and
/// the server's frame time in, at a time; stalls, their end and a recorder held up by a client before it out. What a
/// stall does to the take is the session's (Session+Stall).
struct StallWatch {
    /// Seconds without a cycle, while the server is up, that count as a stall. Far above any period (8192 frames at
    /// 22.05 kHz is 0.37 s) and above the longest scheduling hiccup seen on a loaded 2-core machine.
    static let stallSeconds = 0.75

    /// The recorder's cycles at the last poll, and when they last moved (and the server's cycle frame time then).
    private(set) var cycles = -1
    private(set) var movedAt = Date.distantPast
    private(set) var frameAtMove: UInt32 = 0
    /// The recorder's cycles stopped while the server's went on: a client before it in the graph holds it up.
    var heldUp = false
    /// Since when no cycle has run (nil: cycles run).
    private(set) var stalledSince: Date?
    /// Whether a take was running when the cycles stopped (it was finalized; a new one starts when they run again).
    var takeWasRunning = false
    /// Cycles are back and the new take starts as soon as the writer has finished the old one; with the note.
    var resumeNote: String?
    /// When cycles last came back after a stall.
    private(set) var backAt: Date?

    enum Change: Equatable {
        /// Cycles run again after a stall that began at `since`, `seconds` ago.
        case back(since: Date, seconds: Double)
        /// The recorder held up by a client before it runs again after `seconds`.
        case runsAgain(seconds: Double)
        /// The server runs its cycles but not the recorder's, for `seconds`: a client before it in the graph is frozen.
        case heldUp(seconds: Double)
        /// No cycle has run since `since`, `seconds` ago, while the server is up.
        case stopped(since: Date, seconds: Double)
    }

    /// Looks at the recorder's `cycles` and the server's cycle `frame` time (period `period` frames) at real time `now`.
    mutating func look(cycles sum: Int, frame: UInt32, period: UInt32, at now: Date) -> [Change] {
        if sum != cycles {
            var out: [Change] = []
            if let since = stalledSince {
                out.append(.back(since: since, seconds: now.timeIntervalSince(since)))
                backAt = now
            }
            if heldUp {
                heldUp = false
                out.append(.runsAgain(seconds: now.timeIntervalSince(movedAt)))
            }
            cycles = sum
            movedAt = now
            frameAtMove = frame
            stalledSince = nil
            return out
        }
        guard stalledSince == nil, !heldUp, now.timeIntervalSince(movedAt) > Self.stallSeconds else { return [] }
        let period = max(1, period)
        if frame &- frameAtMove > 2 * period && frame &- frameAtMove < UInt32(Int32.max) {
            heldUp = true
            return [.heldUp(seconds: now.timeIntervalSince(movedAt))]
        }
        stalledSince = movedAt
        return [.stopped(since: movedAt, seconds: now.timeIntervalSince(movedAt))]
    }

    /// Whether the server is stalled or came back within the last `seconds`: a NetJACK2 slave's driver drops its
    /// connections while it re-joins its master (see `Patchbay.noticeRemovals`).
    func aroundAStall(_ now: Date, seconds: Double = 2) -> Bool {
        stalledSince != nil || backAt.map { now.timeIntervalSince($0) < seconds } ?? false
    }
}
