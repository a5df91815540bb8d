import Foundation

/// When a scene recalls itself: local wall-clock times on days of the week, a `[[scene]]`'s `at` key, e.g.
/// `["Mon-Fri 18:30", "daily 07:00:15", "Sat,Sun 22:00"]` (docs/PRESETS.md "Scenes").
///
/// An entry is `DAYS TIME`: DAYS as in a recorder's `schedule` (`daily`, `weekdays`, `weekends`, days and day ranges
/// separated by commas, `Fri-Mon` wrapping over the week's end; see `Schedule`); TIME is `HH:MM` or `HH:MM:SS`,
/// 00:00 to 23:59:59.
///
/// Times are the local wall clock of a time zone. On the day clocks go forward, a time inside the skipped hour happens
/// at the shift (the first instant of the new offset: 02:30 on a day 02:00 becomes 03:00 happens at 03:00), as cron
/// runs a job it would otherwise miss; on the day they go back, a time inside the repeated hour happens once, the
/// first time the clock shows it.
///
/// Threads: a value; pure functions; any thread.
public struct SceneTimes: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// Days it happens on, 0 = Monday … 6 = Sunday.
        public var days: Set<Int>
        /// Seconds after local midnight, 0..<86400.
        public var second: Int
        /// As written.
        public var text: String
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// The most entries one scene's `at` holds.
    public static let maxEntries = 256

    /// The entries of `texts`, or every problem in words that quote the entry ("entry 2: 'Mon 25:00': ...").
    public static func parse(_ texts: [String]) -> Result<SceneTimes, SceneError> {
        if texts.count > maxEntries {
            return .failure(SceneError(.badValue, "\(texts.count) times; a scene's at holds at most \(maxEntries)"))
        }
        var entries: [Entry] = []
        var problems: [String] = []
        for (i, text) in texts.enumerated() {
            switch entry(text) {
            case .success(let e): entries.append(e)
            case .failure(let why): problems.append("entry \(i + 1): '\(text)': \(why.message)")
            }
        }
        if !problems.isEmpty { return .failure(SceneError(.badValue, problems.joined(separator: "; "))) }
        return .success(SceneTimes(entries: entries))
    }

    static func entry(_ text: String) -> Result<Entry, Schedule.Why> {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard parts.count == 2 else {
            return .failure(.init(message: "expected DAYS TIME, e.g. \"Mon-Fri 18:30\" or \"daily 07:00:15\""))
        }
        let days: Set<Int>
        switch Schedule.days(parts[0]) {
        case .success(let d): days = d
        case .failure(let w): return .failure(w)
        }
        guard let second = Schedule.clock(parts[1]), second < 86_400 else {
            return .failure(.init(message: "'\(parts[1])' is not a time of day (HH:MM or HH:MM:SS, 00:00 to 23:59:59)"))
        }
        return .success(Entry(days: days, second: second, text: text))
    }

    /// The first moment after `date` (strictly later, whole seconds) at which an entry happens in `zone`; nil when
    /// there are no entries.
    public func next(after date: Date, in zone: TimeZone = .current) -> Date? {
        guard !entries.isEmpty else { return nil }
        let t = Schedule.whole(date)
        let firstDay = Int((Double(Schedule.local(t, zone)) / 86_400).rounded(.down)) - 1
        var best: Int?
        // Every entry happens at least once a week; nine local days from the day before cover a week past `t`
        // whatever the offsets around it.
        for day in firstDay...(firstDay + 9) {
            let weekday = ((day + 3) % 7 + 7) % 7            // 1970-01-01 was a Thursday
            for e in entries where e.days.contains(weekday) {
                guard let at = Self.instant(local: day * 86_400 + e.second, zone), at > t else { continue }
                best = min(best ?? at, at)
            }
        }
        return best.map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// The instant (seconds since 1970 UTC) the local wall-clock count `l` happens at in `zone`: the first of two
    /// (a repeated hour), the shift itself when the clock skips it.
    static func instant(local l: Int, _ zone: TimeZone) -> Int? {
        func offset(_ u: Int) -> Int { zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(u))) }
        let offsets = Set([offset(l - 86_400), offset(l), offset(l + 86_400), offset(l - 2 * 86_400), offset(l + 2 * 86_400)])
        let fits = offsets.map { l - $0 }.filter { offset($0) + $0 == l }
        if let first = fits.min() { return first }
        // Skipped: the clock jumps over `l`. Before the shift the offset is smaller, so the shift lies between
        // l - (larger offset) and l - (smaller offset).
        guard let low = offsets.max(), let high = offsets.min() else { return nil }
        guard let shift = zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: Double(l - low - 1)))
        else { return nil }
        let s = Schedule.whole(shift)
        return s <= l - high ? s : nil
    }
}
