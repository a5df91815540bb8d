import Foundation

/// When a recorder records: local times on days of the week, e.g. `["Mon-Fri 09:00-10:00", "Sat,Sun 22:00-02:00"]`.
///
/// An entry is `DAYS START-END`. DAYS is `daily`, `weekdays` (Mon-Fri), `weekends` (Sat,Sun), or a comma-separated
/// list of days (`Mon`, `Tuesday`, …) and day ranges (`Mon-Fri`, `Fri-Mon` wraps over the week's end). START and
/// END are `HH:MM` or `HH:MM:SS` local time; END may be `24:00`; an END before START runs past midnight into the
/// next day (the day named is the day it starts). Entries must not overlap.
///
/// Times are the local wall clock of a time zone: on the day clocks go forward, a window inside the skipped hour
/// is shorter (or empty); on the day they go back, the repeated hour is inside the window twice. The recording
/// itself is always continuous in frames: only whether to record follows the clock.
///
/// Threads: a value; pure functions; any thread.
public struct Schedule: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// Days it starts on, 0 = Monday … 6 = Sunday.
        public var days: Set<Int>
        /// Seconds after local midnight: start in 0..<86400, end in 1...86400 (end ≤ start: into the next day).
        public var start: Int
        public var end: Int
        /// As written.
        public var text: String

        /// Seconds of the window (less than a day when it runs past midnight).
        public var length: Int { end > start ? end - start : end + 86_400 - start }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// A problem with one entry (its index in the list), or between two.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        public var index: Int
        public var message: String
        public var description: String { "entry \(index + 1): \(message)" }
    }

    static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    static let fullDayNames = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// Parses the entries; every problem is listed (unparseable entries, overlapping pairs).
    public static func parse(_ texts: [String]) -> (schedule: Schedule?, problems: [Problem]) {
        var entries: [Entry] = []
        var indices: [Int] = []
        var problems: [Problem] = []
        for (i, text) in texts.enumerated() {
            switch entry(text) {
            case .success(let e): entries.append(e); indices.append(i)
            case .failure(let why): problems.append(Problem(index: i, message: "'\(text)': \(why.message)"))
            }
        }
        for a in entries.indices {
            for b in entries.indices where b > a {
                if let at = overlap(entries[a], entries[b]) {
                    problems.append(Problem(index: indices[b], message: "'\(entries[b].text)' overlaps '\(entries[a].text)'"
                                            + " (entry \(indices[a] + 1)) on \(at)"))
                }
            }
        }
        return (problems.isEmpty ? Schedule(entries: entries) : nil, problems)
    }

    struct Why: Error { var message: String }

    static func entry(_ text: String) -> Result<Entry, Why> {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard parts.count == 2 else {
            return .failure(Why(message: "expected DAYS START-END, e.g. \"Mon-Fri 09:00-17:30\" or \"daily 00:00-24:00\""))
        }
        let days: Set<Int>
        switch self.days(parts[0]) {
        case .success(let d): days = d
        case .failure(let w): return .failure(w)
        }
        let times = parts[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard times.count == 2 else { return .failure(Why(message: "expected a time range START-END like 09:00-10:30")) }
        guard let start = clock(times[0]), start < 86_400 else {
            return .failure(Why(message: "'\(times[0])' is not a time of day (HH:MM or HH:MM:SS, 00:00 to 23:59:59)"))
        }
        guard let end = clock(times[1]) else {
            return .failure(Why(message: "'\(times[1])' is not a time of day (HH:MM or HH:MM:SS, up to 24:00)"))
        }
        let endOfDay = end == 0 ? 86_400 : end
        guard endOfDay != start else {
            return .failure(Why(message: "start and end are the same time (for a whole day write 00:00-24:00)"))
        }
        return .success(Entry(days: days, start: start, end: endOfDay, text: text))
    }

    static func days(_ text: String) -> Result<Set<Int>, Why> {
        switch text.lowercased() {
        case "daily", "everyday": return .success(Set(0..<7))
        case "weekdays": return .success(Set(0..<5))
        case "weekends", "weekend": return .success([5, 6])
        default: break
        }
        var out = Set<Int>()
        for item in text.lowercased().split(separator: ",", omittingEmptySubsequences: false) {
            let ends = item.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard ends.count == 1 || ends.count == 2 else { return .failure(Why(message: "'\(item)' is not a day or a day range")) }
            var numbers: [Int] = []
            for name in ends {
                guard let d = day(name) else {
                    return .failure(Why(message: "'\(name)' is not a day (Mon Tue Wed Thu Fri Sat Sun, daily, weekdays, weekends)"))
                }
                numbers.append(d)
            }
            if numbers.count == 1 {
                out.insert(numbers[0])
            } else {
                var d = numbers[0]
                out.insert(d)
                while d != numbers[1] {
                    d = (d + 1) % 7
                    out.insert(d)
                }
            }
        }
        return .success(out)
    }

    static func day(_ name: String) -> Int? {
        dayNames.firstIndex(of: name) ?? fullDayNames.firstIndex(of: name)
    }

    /// Seconds after midnight of "HH:MM[:SS]" (24:00 gives 86400).
    static func clock(_ s: String) -> Int? {
        let fields = s.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2 || fields.count == 3,
              fields.allSatisfy({ !$0.isEmpty && $0.count <= 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        else { return nil }
        let parts = fields.compactMap { Int($0) }
        guard parts.count == fields.count else { return nil }
        let h = parts[0], m = parts[1], sec = parts.count == 3 ? parts[2] : 0
        if h == 24 && m == 0 && sec == 0 { return 86_400 }
        guard (0..<24).contains(h), (0..<60).contains(m), (0..<60).contains(sec) else { return nil }
        return h * 3600 + m * 60 + sec
    }

    /// The week's seconds (0 = Monday 00:00) an entry covers, as half-open ranges inside one week.
    static func weekRanges(_ e: Entry) -> [Range<Int>] {
        var out: [Range<Int>] = []
        for d in e.days {
            let from = d * 86_400 + e.start
            let to = from + e.length
            if to <= 604_800 { out.append(from..<to) } else {
                out.append(from..<604_800)
                out.append(0..<(to - 604_800))
            }
        }
        return out
    }

    /// Where two entries first overlap in the week ("Tue 09:30"), or nil.
    static func overlap(_ a: Entry, _ b: Entry) -> String? {
        var first: Int?
        for x in weekRanges(a) {
            for y in weekRanges(b) where x.overlaps(y) {
                first = min(first ?? Int.max, max(x.lowerBound, y.lowerBound))
            }
        }
        guard let at = first else { return nil }
        let s = at % 86_400
        return String(format: "%@ %02d:%02d", dayNames[at / 86_400].capitalized, s / 3600, (s % 3600) / 60)
    }

    // MARK: Asking the clock

    /// Local wall-clock seconds since 1970-01-01 00:00 local (what the clock on the wall shows, as a count).
    static func local(_ t: Int, _ zone: TimeZone) -> Int {
        t + zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t)))
    }

    /// Whether the schedule says to record at `date` in `zone`.
    public func isActive(at date: Date, in zone: TimeZone = .current) -> Bool {
        isActive(seconds: Self.whole(date), zone)
    }

    static func whole(_ date: Date) -> Int {
        let t = date.timeIntervalSince1970.rounded(.down)
        return t.isFinite && abs(t) < 1e15 ? Int(t) : 0
    }

    func isActive(seconds t: Int, _ zone: TimeZone) -> Bool {
        let l = Self.local(t, zone)
        let dayNumber = Int((Double(l) / 86_400).rounded(.down))
        let weekday = ((dayNumber + 3) % 7 + 7) % 7          // 1970-01-01 was a Thursday
        let second = l - dayNumber * 86_400
        for e in entries {
            if e.end > e.start {
                if e.days.contains(weekday) && second >= e.start && second < e.end { return true }
            } else {
                if e.days.contains(weekday) && second >= e.start { return true }
                if e.days.contains((weekday + 6) % 7) && second < e.end { return true }
            }
        }
        return false
    }

    /// The first moment after `date` at which `isActive` changes (recording starts or stops), within the next
    /// eight days; nil when it never changes (an empty schedule, or one that covers the whole week).
    public func nextChange(after date: Date, in zone: TimeZone = .current) -> Date? {
        let t = Self.whole(date)
        let now = isActive(seconds: t, zone)
        let horizon = t + 8 * 86_400
        // Every instant the answer can change at: each entry's start and end in local time on each day (mapped to
        // every offset the zone uses in the span, kept where the zone really has that offset), and the zone's
        // transitions (a window that begins in a skipped hour begins at the transition).
        var offsets = Set([zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t)))])
        var candidates: [Int] = []
        var cursor = Date(timeIntervalSince1970: Double(t - 86_400))
        while let next = zone.nextDaylightSavingTimeTransition(after: cursor), Self.whole(next) <= horizon {
            candidates.append(Self.whole(next))
            offsets.insert(zone.secondsFromGMT(for: next))
            offsets.insert(zone.secondsFromGMT(for: next.addingTimeInterval(-1)))
            cursor = next
        }
        let firstDay = Int((Double(Self.local(t, zone)) / 86_400).rounded(.down)) - 1
        for day in firstDay...(firstDay + 9) {
            for e in entries {
                for s in [e.start, e.end % 86_400] {
                    let l = day * 86_400 + s
                    for o in offsets where zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(l - o))) == o {
                        candidates.append(l - o)
                    }
                }
            }
        }
        for c in candidates.sorted() where c > t && c <= horizon {
            if isActive(seconds: c, zone) != now { return Date(timeIntervalSince1970: Double(c)) }
        }
        return nil
    }
}

/// A schedule read against a clock the owner supplies (the system clock in the recorder, a faked one in tests).
///
/// Threads: a value; `now` is called on the caller's thread.
public struct ScheduleClock: Sendable {
    public var schedule: Schedule
    public var zone: TimeZone
    public var now: @Sendable () -> Date

    public init(schedule: Schedule, zone: TimeZone = .current, now: @escaping @Sendable () -> Date = { Date() }) {
        self.schedule = schedule
        self.zone = zone
        self.now = now
    }

    /// Whether to record now.
    public var shouldRecord: Bool { schedule.isActive(at: now(), in: zone) }

    /// When to look again: the next start or stop (nil: never changes).
    public var nextChange: Date? { schedule.nextChange(after: now(), in: zone) }
}
