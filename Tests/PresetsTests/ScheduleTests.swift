import Testing
import Foundation
@testable import Presets

/// Schedules parsed, checked for overlap, and read against a faked clock in a zone with daylight-saving time.
@Suite struct ScheduleTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    static func utc(_ text: String) -> Date {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text)!
    }

    static func parse(_ entries: [String]) -> Schedule {
        let (s, problems) = Schedule.parse(entries)
        #expect(problems.isEmpty, "\(problems)")
        return s ?? Schedule(entries: [])
    }

    @Test func entriesParse() {
        let s = Self.parse(["Mon-Fri 09:00-10:00", "Sat,Sun 22:00-02:00", "Wed 12:00:30-13:00", "Fri-Mon 03:00-03:30"])
        #expect(s.entries.map(\.days) == [[0, 1, 2, 3, 4], [5, 6], [2], [4, 5, 6, 0]])
        #expect(s.entries.map(\.start) == [32_400, 79_200, 43_230, 10_800])
        #expect(s.entries.map(\.end) == [36_000, 7_200, 46_800, 12_600])
        #expect(Self.parse(["daily 00:00-24:00"]).entries.first?.length == 86_400)
        #expect(Self.parse(["weekdays 22:00-00:00"]).entries.first?.end == 86_400)
    }

    @Test func unparseableEntriesAreEachNamed() {
        let (s, problems) = Schedule.parse(["Mon-Fri 9-10", "Funday 09:00-10:00", "Mon 25:00-26:00", "Mon 10:00-10:00",
                                            "09:00-10:00", "Mon 24:00-01:00", "Mon 09:00-10:00"])
        #expect(s == nil)
        #expect(problems.map(\.index) == [0, 1, 2, 3, 4, 5])
        #expect(problems[1].message.contains("'funday' is not a day"))
        #expect(problems[3].message.contains("same time"))
    }

    @Test func overlappingEntriesAreRefused() {
        let (s, problems) = Schedule.parse(["Mon-Fri 09:00-10:00", "daily 00:00-24:00"])
        #expect(s == nil)
        #expect(problems.map(\.index) == [1])
        #expect(problems.first?.message.contains("overlaps 'Mon-Fri 09:00-10:00' (entry 1) on Mon 09:00") == true)
        // Across the week's end: Sunday night runs into Monday morning.
        #expect(Schedule.parse(["Sun 23:00-01:00", "Mon 00:30-02:00"]).problems.count == 1)
        // Touching is not overlapping.
        #expect(Schedule.parse(["Mon 09:00-10:00", "Mon 10:00-11:00", "Sun 23:00-00:00", "Mon 00:00-01:00"]).problems.isEmpty)
    }

    @Test func activeFollowsTheLocalClock() {
        let s = Self.parse(["Mon-Fri 09:00-10:00", "Sat 22:00-02:00"])
        // 2026-11-23 is a Monday; Berlin is UTC+1 in November.
        #expect(!s.isActive(at: Self.utc("2026-11-23T07:59:59Z"), in: Self.berlin))
        #expect(s.isActive(at: Self.utc("2026-11-23T08:00:00Z"), in: Self.berlin))
        #expect(s.isActive(at: Self.utc("2026-11-23T08:59:59Z"), in: Self.berlin))
        #expect(!s.isActive(at: Self.utc("2026-11-23T09:00:00Z"), in: Self.berlin))
        #expect(!s.isActive(at: Self.utc("2026-11-28T08:30:00Z"), in: Self.berlin))   // Saturday morning
        #expect(s.isActive(at: Self.utc("2026-11-28T21:00:00Z"), in: Self.berlin))    // Saturday 22:00
        #expect(s.isActive(at: Self.utc("2026-11-29T00:59:59Z"), in: Self.berlin))    // Sunday 01:59:59
        #expect(!s.isActive(at: Self.utc("2026-11-29T01:00:00Z"), in: Self.berlin))
    }

    @Test func theNextChangeWithAFakedClock() {
        let s = Self.parse(["Mon-Fri 09:00-10:00"])
        final class Clock: @unchecked Sendable { var now = Date() }
        let clock = Clock()
        let c = ScheduleClock(schedule: s, zone: Self.berlin, now: { clock.now })
        clock.now = Self.utc("2026-11-23T07:00:00Z")
        #expect(!c.shouldRecord)
        #expect(c.nextChange == Self.utc("2026-11-23T08:00:00Z"))
        clock.now = Self.utc("2026-11-23T08:30:00Z")
        #expect(c.shouldRecord)
        #expect(c.nextChange == Self.utc("2026-11-23T09:00:00Z"))
        clock.now = Self.utc("2026-11-27T09:30:00Z")   // Friday after the window: next Monday
        #expect(c.nextChange == Self.utc("2026-11-30T08:00:00Z"))
        #expect(ScheduleClock(schedule: Self.parse(["daily 00:00-24:00"]), zone: Self.berlin, now: { clock.now }).nextChange == nil)
    }

    /// Every change of `s` from `from` on, up to `count`.
    static func changes(_ s: Schedule, from: Date, count: Int) -> [String] {
        var out: [String] = []
        var t = from
        let f = ISO8601DateFormatter()
        while out.count < count, let next = s.nextChange(after: t, in: berlin) {
            out.append(f.string(from: next) + (s.isActive(at: next, in: berlin) ? " on" : " off"))
            t = next
        }
        return out
    }

    @Test func daylightSavingDays() {
        let s = Self.parse(["daily 02:30-03:30"])
        // 2026-03-29: at 01:00 UTC Berlin goes from 02:00 CET to 03:00 CEST, inside the window: it starts there and
        // runs to 03:30 CEST (half an hour).
        #expect(Self.changes(s, from: Self.utc("2026-03-28T23:00:00Z"), count: 2)
                == ["2026-03-29T01:00:00Z on", "2026-03-29T01:30:00Z off"])
        // 2026-10-25: 02:30 CEST to 03:00 CEST, then the clock goes back to 02:00 CET (outside), and 02:30 to 03:30
        // CET again: the local window happens twice.
        #expect(Self.changes(s, from: Self.utc("2026-10-24T22:00:00Z"), count: 4)
                == ["2026-10-25T00:30:00Z on", "2026-10-25T01:00:00Z off", "2026-10-25T01:30:00Z on",
                    "2026-10-25T02:30:00Z off"])
        // An ordinary day: one hour.
        #expect(Self.changes(s, from: Self.utc("2026-11-22T00:00:00Z"), count: 2)
                == ["2026-11-22T01:30:00Z on", "2026-11-22T02:30:00Z off"])
    }
}
