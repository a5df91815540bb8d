import Engine
import Foundation
import Presets

// A server that stays up but runs no cycles: a NetJACK2 slave whose network link or master went away waits for it
// with its clients open, so no shutdown callback comes and the take would simply stop growing, with the seconds
// of the outage nowhere in its report. The session watches its recorder's cycle counter instead.
extension Session {
    func tickStall() {
        // The recorder's cycles only: what a stall ends is a take. (A rack's child process has no recorder: a plugin
        // hung in its callback stops its cycles while the server runs, which is its supervisor's hang to detect.)
        guard let sum = recorder?.cycles else { return }
        if let note = stallWatch.resumeNote, let r = recorder, !r.isRecording {
            stallWatch.resumeNote = nil
            r.startTake(atFrameTime: r.client.frameTime, notes: [note])
        }
        let frame = recorder?.client.cycleFrameTime ?? 0
        let period = UInt32(max(1, recorder?.client.bufferSize ?? 1))
        for change in stallWatch.look(cycles: sum, frame: frame, period: period, at: clock.real()) {
            switch change {
            case .back(let since, let seconds):
                cyclesBack(after: seconds, since: since)
            case .runsAgain(let seconds):
                logger.info("the recorder runs again", metadata: ["after": "\(String(format: "%.2f", seconds)) s"])
            case .heldUp(let seconds):
                // A client before the recorder in the graph is frozen (an isolated rack's process stopped, a plugin
                // hung). The take goes on; what the recorder misses meanwhile is counted as skipped cycles when it
                // runs again, and a frozen rack is killed by its supervisor.
                logger.warning("the recorder is held up by a client before it in the graph (the server runs its cycles)",
                               metadata: ["seconds": "\(String(format: "%.2f", seconds))"])
            case .stopped(let since, let seconds):
                cyclesStopped(since: since, seconds: seconds)
            }
        }
    }

    private func cyclesStopped(since: Date, seconds: Double) {
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
