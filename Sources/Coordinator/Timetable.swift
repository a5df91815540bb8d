import Engine
import Foundation
import Presets

/// What the session does by the clock, as a value: a cued player's start (`start_at`), the recorder's stop time
/// (`stop_at`, which with `exit_after = "take"` ends the session take or no take), and the end of a queue that played
/// out (`exit_after = "playback"`: its last frames, plugin latency and tail rung out). The session sets the times
/// and asks what is due; it carries the answers out on the engines (Session+Events).
struct Timetable {
    /// When the cued player starts.
    private(set) var playerStartAt: Date?
    /// The recorder's next stop time.
    private(set) var stopAt: Date?
    /// After the queue played out: the player cycle and the moment after which the playback counts as ended, and the
    /// frames of plugin latency and tail rung out.
    private(set) var playbackEnd: (cycle: Int, deadline: Date, ringOut: Int)?

    /// How far ahead of its moment a cued player is handed its start frame (it starts on the frame of the moment).
    static let playerLead = 0.1

    enum Due: Equatable {
        /// Start the player on the frame this many seconds ahead.
        case startPlayer(secondsAhead: Double)
        /// The playback has ended.
        case playbackEnded
        /// The stop time has come.
        case stopTime
    }

    /// Nothing waits on the clock.
    var isEmpty: Bool { playerStartAt == nil && stopAt == nil }

    /// The player starts at the next `clock` ("HH:MM[:SS]") after `now` (false: not a time of day, nothing set).
    mutating func startPlayer(at clock: String, after now: Date) -> Bool {
        guard let s = Preset.secondsOfDay(clock) else { return false }
        playerStartAt = Preset.nextOccurrence(ofSecondsOfDay: s, after: now)
        return true
    }

    /// The player was started some other way: its start time no longer applies.
    mutating func cancelPlayerStart() { playerStartAt = nil }

    /// The recorder stops at the next `clock` after `now` (nil or not a time of day: the stop time stays as it was).
    mutating func stop(at clock: String?, after now: Date) {
        guard let clock, let s = Preset.secondsOfDay(clock) else { return }
        stopAt = Preset.nextOccurrence(ofSecondsOfDay: s, after: now)
    }

    /// The queue played out at real time `now`, the player at `cycles` cycles of `period` frames at `rate`: the playback ends
    /// two cycles after the chain's `ringOut` frames went out (the clients after the player read the last frames in
    /// that graph run), or a second (plus the ring-out) later at the latest, should cycles stop.
    mutating func queuePlayedOut(cycles: Int, period: Int, rate: Int, ringOut: Int, at now: Date) {
        let period = max(1, period), rate = max(1, rate), ringOut = max(0, ringOut)
        playbackEnd = (cycle: cycles + 2 + (ringOut + period - 1) / period,
                       deadline: now.addingTimeInterval(1 + Double(ringOut) / Double(rate)), ringOut: ringOut)
    }

    /// What is due at wall-clock time `now` and real time `real` (the played-out queue's deadline is a duration, so
    /// it is real), given the player's cycles (nil: no player; a player's start and end wait for one). A start and a
    /// stop time are given once; an ended playback stays due.
    mutating func due(at now: Date, real: Date, playerCycles: Int?) -> [Due] {
        var out: [Due] = []
        if let at = playerStartAt, playerCycles != nil, now.addingTimeInterval(Self.playerLead) >= at {
            out.append(.startPlayer(secondsAhead: max(0, at.timeIntervalSince(now))))
            playerStartAt = nil
        }
        if let end = playbackEnd, let cycles = playerCycles, cycles >= end.cycle || real >= end.deadline {
            out.append(.playbackEnded)
        }
        if let stop = stopAt, now >= stop {
            stopAt = nil
            out.append(.stopTime)
        }
        return out
    }
}
