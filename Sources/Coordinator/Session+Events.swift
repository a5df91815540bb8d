import Engine
import Foundation
import Jack
import Logging
import Presets
import Takes

// Engine events, and when the session ends by itself: the one policy every command shares.
extension Session {
    func handleRecorderEvents(_ list: [RecorderEvent]) {
        for e in list {
            switch e {
            case .takeStarted(let take, _):
                lastTake = max(lastTake, take)
                timetable.stop(at: preset?.recorder?.stopAt, after: clock.now())
                workers.finish(.take)
                workers.start(.take, detail: "take \(take)", deadline: timetable.stopAt, now: clock.now())
            case .takeFinished(let report, _):
                workers.finish(.take)
                if (report.ended == .durationReached || report.ended == .stopTimeReached)
                    && (preset?.recorder?.start == .immediately || preset?.session.exitAfter == .take) {
                    outcome = .finished(.takeComplete)
                }
            case .diskError:
                if preset?.session.onDiskError == .stop { outcome = .finished(.diskError) }
            case .chunkStarted:
                break
            }
            events.append(.recorder(e))
        }
    }

    func handlePlayerEvents(_ list: [PlayerEvent]) {
        for e in list {
            switch e {
            case .itemStarted(let item, let path):
                workers.finish(.playback)
                workers.start(.playback, detail: "item \(item + 1): \(path)", now: clock.now())
            case .queueFinished:
                workers.finish(.playback)
                if preset?.session.exitAfter == .playback { ringOutPlayback() }
            case .itemFailed:
                failedItems += 1
            }
            events.append(.player(e))
        }
    }

    func forward(_ list: [RecorderEvent]) {
        for e in list {
            if case .takeStarted(let take, _) = e { lastTake = max(lastTake, take) }
            events.append(.recorder(e))
        }
    }

    /// The queue has played out: the last frames went out in the cycle that consumed them, and the clients after us
    /// read them in that graph run, so two more of our cycles mean the run is over (a fixed pause lost the end when
    /// the machine was late). With plugins the chain keeps running on silence for its latency plus the tail time,
    /// so the output of the last frames (and a reverb's or delay's tail) goes out too.
    func ringOutPlayback() {
        guard let p = player else { return }
        let chain = p.plugins.chain.flatMap { $0.isEmpty ? nil : $0 }
        let rate = max(1, p.sampleRate)
        let tail = Limits.frames(seconds: preset?.player?.tailSeconds ?? 0, rate: Double(rate)) ?? 0
        let ringOut = chain.map { $0.latency + tail } ?? 0
        timetable.queuePlayedOut(cycles: p.cycles, period: p.client.bufferSize, rate: rate, ringOut: ringOut,
                                 at: clock.real())
    }

    /// What runs on the clock: a cued player's start time, the end of a rung-out playback, a stop time that ends
    /// the session with no take running.
    func tickSchedule() {
        for due in timetable.due(at: clock.now(), real: clock.real(), playerCycles: player?.cycles) {
            switch due {
            case .startPlayer(let ahead):
                // Sample-accurate: the JACK frame that corresponds to the requested moment.
                guard let p = player else { continue }
                p.play(atFrameTime: p.client.frameTime
                       &+ UInt32(clamping: Limits.frames(seconds: ahead / clock.scale, rate: Double(p.sampleRate)) ?? 0))
            case .playbackEnded:
                outcome = .finished(.playbackComplete(failedItems: failedItems))
            case .stopTime:
                if recorder?.isRecording == true {
                    recorder?.stopTake(.stopTimeReached)
                } else {
                    outcome = .finished(.takeComplete)
                }
            }
        }
    }

    /// Frames of plugin latency and tail the ended playback rang out (nil: it has not ended).
    public var playbackRingOut: Int? { timetable.playbackEnd?.ringOut }
}
