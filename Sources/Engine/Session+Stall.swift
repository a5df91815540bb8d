import Foundation
import Presets

/// What the stall check remembers between polls.
struct StallWatch {
    /// The recorder's cycles at the last poll, and when they last moved (and the server's cycle frame time then).
    var cycles = -1
    var movedAt = Date()
    var frameAtMove: UInt32 = 0
    /// The recorder's cycles stopped while the server's went on: a client before it in the graph holds it up.
    var heldUp = false
    /// Since when no cycle has run (nil: cycles run).
    var stalledSince: Date?
    /// Whether a take was running when the cycles stopped (it was finalized; a new one starts when they run again).
    var takeWasRunning = false
    /// Cycles are back and the new take starts as soon as the writer has finished the old one; with the note.
    var resumeNote: String?
    /// When cycles last came back after a stall.
    var backAt: Date?

    /// Whether the server is stalled or came back within the last `seconds`: a NetJACK2 slave's driver drops its
    /// connections while it re-joins its master (see `Patchbay.noticeRemovals`).
    func aroundAStall(_ now: Date, seconds: Double = 2) -> Bool {
        stalledSince != nil || backAt.map { now.timeIntervalSince($0) < seconds } ?? false
    }
}

// A server that stays up but runs no cycles: a NetJACK2 slave whose network link or master went away waits for it
// with its clients open, so no shutdown callback comes and the take would simply stop growing, with the seconds
// of the outage nowhere in its report. The session watches its recorder's cycle counter instead.
extension Session {
    /// Seconds without a cycle, while the server is up, that count as a stall. Far above any period (8192 frames at
    /// 22.05 kHz is 0.37 s) and above the longest scheduling hiccup seen on a loaded 2-core machine.
    static let stallSeconds = 0.75

    func tickStall() {
        // The recorder's cycles only: what a stall ends is a take. (A rack's child process has no recorder: a plugin
        // hung in its callback stops its cycles while the server runs, which is its supervisor's hang to detect.)
        guard let sum = recorder?.cycles else { return }
        let now = Date()
        if let note = stallWatch.resumeNote, let r = recorder, !r.isRecording {
            stallWatch.resumeNote = nil
            r.startTake(atFrameTime: r.client.frameTime, notes: [note])
        }
        let frame = recorder?.client.cycleFrameTime ?? 0
        if sum != stallWatch.cycles {
            if let since = stallWatch.stalledSince { cyclesBack(after: now.timeIntervalSince(since), since: since) }
            if stallWatch.heldUp {
                stallWatch.heldUp = false
                logger.info("the recorder runs again", metadata: [
                    "after": "\(String(format: "%.2f", now.timeIntervalSince(stallWatch.movedAt))) s"])
            }
            stallWatch.cycles = sum
            stallWatch.movedAt = now
            stallWatch.frameAtMove = frame
            stallWatch.stalledSince = nil
            return
        }
        guard stallWatch.stalledSince == nil, !stallWatch.heldUp,
              now.timeIntervalSince(stallWatch.movedAt) > Self.stallSeconds else { return }
        let period = UInt32(max(1, recorder?.client.bufferSize ?? 1))
        if frame &- stallWatch.frameAtMove > 2 * period && frame &- stallWatch.frameAtMove < UInt32(Int32.max) {
            // The server runs its cycles but not the recorder's: a client before it in the graph is frozen (an
            // isolated rack's process stopped, a plugin hung). The take goes on; what the recorder misses meanwhile
            // is counted as skipped cycles when it runs again, and a frozen rack is killed by its supervisor.
            stallWatch.heldUp = true
            logger.warning("the recorder is held up by a client before it in the graph (the server runs its cycles)",
                           metadata: ["seconds": "\(String(format: "%.2f", now.timeIntervalSince(stallWatch.movedAt)))"])
            return
        }
        cyclesStopped(since: stallWatch.movedAt)
    }

    private func cyclesStopped(since: Date) {
        let seconds = Date().timeIntervalSince(since)
        stallWatch.stalledSince = since
        logger.warning("the JACK server runs no cycles, though it is up (a NetJACK2 slave waiting for its master?)",
                       metadata: ["seconds": "\(String(format: "%.2f", seconds))"])
        events.append(.cyclesStopped(seconds: seconds))
        stallWatch.takeWasRunning = recorder?.isRecording ?? false
        let detail = "no JACK cycle since \(ISO8601DateFormatter().string(from: since)) while the server stayed up; "
            + "the take ends at the last frame captured"
        if preset?.session.onServerLoss == .stop {
            var report = ApplyReport()
            closeEngines(&report, end: .serverStalled, detail: detail)
            outcome = .finished(.serverLost)
            return
        }
        if stallWatch.takeWasRunning { recorder?.stopTake(.serverStalled, detail: detail) }
    }

    private func cyclesBack(after seconds: Double, since: Date) {
        logger.info("the JACK server runs cycles again", metadata: ["after": "\(String(format: "%.2f", seconds)) s"])
        events.append(.cyclesBack(seconds: seconds))
        stallWatch.backAt = Date()
        // A take a person, a signal or the control protocol started goes on as a new take; a level trigger, a
        // schedule or the transport start their own takes again when their rule says so.
        let rule = preset?.recorder
        let startsItself = rule?.start == .level || rule?.start == .transport || !(rule?.schedule ?? []).isEmpty
        let resume = stallWatch.takeWasRunning && recorder != nil && !startsItself
        stallWatch.takeWasRunning = false
        guard resume else { return }
        stallWatch.resumeNote = "started when the JACK server ran cycles again after \(String(format: "%.2f", seconds)) s "
            + "without any (from \(ISO8601DateFormatter().string(from: since))); those seconds were not recorded"
    }
}
