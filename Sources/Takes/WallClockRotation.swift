import Foundation

/// Chunk boundaries aligned to the local wall clock ("a new chunk on the hour"), placed exactly in frames.
///
/// The stream position is the truth: a boundary is the frame that the anchor (a stream position and the wall-clock
/// time of that frame) maps the boundary's wall-clock instant to, so consecutive chunks always share their edge
/// frame: nothing is lost or written twice, whatever the clock does. Names follow the wall clock: on the day clocks go
/// forward the chunk that starts at 01:00 is followed by the one at 03:00 (one real hour later); on the day they go
/// back, 02:00 begins twice (use `label`, which carries the UTC offset, or `{chunk}` in the template, to tell them
/// apart). When the system clock is stepped (NTP, a person), `reanchor` makes later boundaries follow the new
/// clock; the chunk running then simply ends at the first boundary of the new clock that lies ahead in frames.
///
/// Threads: a value; one owner (the disk writer).
public struct WallClockRotation: Sendable {
    /// The chunk length in seconds of local time; divides a day (60, 300, 900, 1800, 3600, 7200, 86400 …), so the
    /// boundaries fall on the same local times every day.
    public let intervalSeconds: Int
    public let zone: TimeZone
    public let sampleRate: Int
    /// Stream position `anchorFrame` was captured at wall-clock time `anchorTime` (seconds since 1970, UTC).
    public private(set) var anchorFrame: Int
    public private(set) var anchorTime: Double
    /// Wall-clock seconds per second of audio: 1, or the speed of a test's virtual clock.
    public var clockScale: Double = 1

    /// Nil when the interval does not divide a day or the rate is not positive.
    public init?(intervalSeconds: Int, zone: TimeZone = .current, sampleRate: Int, anchorFrame: Int, anchorTime: Date) {
        guard intervalSeconds > 0, 86_400 % intervalSeconds == 0, sampleRate > 0 else { return nil }
        self.intervalSeconds = intervalSeconds
        self.zone = zone
        self.sampleRate = sampleRate
        self.anchorFrame = anchorFrame
        self.anchorTime = anchorTime.timeIntervalSince1970
    }

    /// The wall clock has been found to say `time` at stream position `frame` (a step, or drift past a tolerance):
    /// boundaries from here on follow it.
    public mutating func reanchor(frame: Int, time: Date) {
        anchorFrame = frame
        anchorTime = time.timeIntervalSince1970
    }

    /// Wall-clock time of stream position `frame`, by the anchor.
    public func time(ofFrame frame: Int) -> Date {
        Date(timeIntervalSince1970: anchorTime + Double(frame - anchorFrame) / Double(sampleRate) * clockScale)
    }

    /// Stream position of wall-clock second `t` (seconds since 1970), by the anchor, rounded to the nearest frame.
    func frame(ofSecond t: Int) -> Int {
        anchorFrame + Int(((Double(t) - anchorTime) / clockScale * Double(sampleRate)).rounded())
    }

    /// The first boundary after stream position `frame`: its frame (> `frame`) and wall-clock time.
    public func nextBoundary(after frame: Int) -> (frame: Int, time: Date) {
        var t = time(ofFrame: frame).timeIntervalSince1970
        for _ in 0..<4 {
            let x = nextAlignedSecond(after: t)
            let f = self.frame(ofSecond: x)
            if f > frame { return (f, Date(timeIntervalSince1970: Double(x))) }
            t = Double(x)
        }
        // Unreachable for a sane anchor; never return a boundary that is not ahead.
        return (frame + intervalSeconds * sampleRate, time(ofFrame: frame + intervalSeconds * sampleRate))
    }

    /// The smallest whole second after `t` at which the local clock shows a multiple of the interval since local
    /// midnight, walking across the zone's offset changes.
    func nextAlignedSecond(after t: Double) -> Int {
        let i = intervalSeconds
        var lower = Int(t.rounded(.down)) + 1
        for _ in 0..<8 {
            let here = Date(timeIntervalSince1970: Double(lower))
            let offset = zone.secondsFromGMT(for: here)
            let transition = zone.nextDaylightSavingTimeTransition(after: here)
                .map { Int($0.timeIntervalSince1970.rounded(.down)) }
            let x = lower + ((-(lower + offset)) % i + i) % i
            if transition.map({ x < $0 }) ?? true { return x }
            lower = transition ?? lower + i
        }
        return lower
    }

    /// Splits the stream positions [from, to) into chunks at the boundaries: each chunk's frames and the wall-clock
    /// time its name carries (the first chunk: the time of `from`).
    public func chunks(from: Int, to: Int) -> [(frames: Range<Int>, startsAt: Date)] {
        var out: [(frames: Range<Int>, startsAt: Date)] = []
        var start = from
        var startsAt = time(ofFrame: from)
        while start < to {
            let b = nextBoundary(after: start)
            let end = min(b.frame, to)
            out.append((start..<end, startsAt))
            start = end
            startsAt = b.time
        }
        return out
    }

    /// "2026-10-25T02:00:00+0100": the local time of `date` with its UTC offset (unique even in the repeated hour).
    public func label(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = zone
        f.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        return f.string(from: date)
    }
}
