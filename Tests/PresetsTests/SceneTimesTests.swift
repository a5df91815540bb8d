import Foundation
@testable import Presets
import Testing
import TestSupport

/// A scene's `at` times (issue 48, "recalled by a schedule"): parsed with the day syntax of a recorder's schedule,
/// read against days of the week and both daylight-saving days of a zone, refused in a preset with file, line and
/// key, written back; and the player's `scene_markers`. No JACK server.
struct SceneTimesTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!
    static let utcZone = TimeZone(identifier: "UTC")!

    static func utc(_ text: String) -> Date { ScheduleTests.utc(text) }

    static func times(_ entries: [String]) throws -> SceneTimes { try SceneTimes.parse(entries).get() }

    @Test func entriesParseWithTheScheduleDays() throws {
        let t = try Self.times(["Mon-Fri 18:30", "daily 07:00:15", "Sat,Sun 22:00", "Fri-Mon 00:00", "weekends 23:59:59"])
        #expect(t.entries.map(\.days) == [[0, 1, 2, 3, 4], Set(0..<7), [5, 6], [4, 5, 6, 0], [5, 6]])
        #expect(t.entries.map(\.second) == [66_600, 25_215, 79_200, 0, 86_399])
        let bad: [(String, String)] = [
            ("Mon 24:00", "entry 1: 'Mon 24:00': '24:00' is not a time of day (HH:MM or HH:MM:SS, 00:00 to 23:59:59)"),
            ("Mon 18:30-19:00", "'18:30-19:00' is not a time of day"),
            ("18:30", "expected DAYS TIME, e.g. \"Mon-Fri 18:30\""),
            ("Mon Tue 18:30", "expected DAYS TIME"),
            ("Moon 18:30", "'moon' is not a day (Mon Tue Wed Thu Fri Sat Sun, daily, weekdays, weekends)"),
            ("Mon 18:61", "'18:61' is not a time of day"),
        ]
        for (text, expected) in bad {
            guard case .failure(let why) = SceneTimes.parse([text]) else {
                Issue.record("'\(text)' parsed")
                continue
            }
            #expect(why.description.contains(expected), "\(text) → \(why)")
        }
        #expect(SceneTimes.parse(Array(repeating: "daily 12:00", count: 257)).map { _ in 0 }
            == .failure(SceneError(.badValue, "257 times; a scene's at holds at most 256")))
    }

    /// 2026-11-23 is a Monday.
    @Test func nextFollowsTheDaysOfTheWeek() throws {
        let t = try Self.times(["Mon-Fri 18:30", "Sat,Sun 22:00"])
        let z = Self.utcZone
        #expect(t.next(after: Self.utc("2026-11-23T12:00:00Z"), in: z) == Self.utc("2026-11-23T18:30:00Z"))
        // Strictly after: at the moment itself, the next one.
        #expect(t.next(after: Self.utc("2026-11-23T18:30:00Z"), in: z) == Self.utc("2026-11-24T18:30:00Z"))
        #expect(t.next(after: Self.utc("2026-11-27T18:30:00Z"), in: z) == Self.utc("2026-11-28T22:00:00Z"))
        #expect(t.next(after: Self.utc("2026-11-29T22:00:00Z"), in: z) == Self.utc("2026-11-30T18:30:00Z"))
        let seconds = try Self.times(["daily 07:00:15"])
        #expect(seconds.next(after: Self.utc("2026-11-23T07:00:14Z").addingTimeInterval(0.9), in: z) == Self.utc("2026-11-23T07:00:15Z"))
        // In Berlin (UTC+1 in November) 18:30 is 17:30 UTC.
        #expect(t.next(after: Self.utc("2026-11-23T12:00:00Z"), in: Self.berlin) == Self.utc("2026-11-23T17:30:00Z"))
        #expect(SceneTimes(entries: []).next(after: Date(), in: z) == nil)
    }

    /// Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00 UTC. A time in the skipped hour happens at the
    /// shift; one after it at its own time; the next day as usual.
    @Test func aTimeInTheSkippedHourHappensAtTheShift() throws {
        let z = Self.berlin
        let skipped = try Self.times(["daily 02:30"])
        #expect(skipped.next(after: Self.utc("2026-03-28T23:00:00Z"), in: z) == Self.utc("2026-03-29T01:00:00Z"))
        #expect(skipped.next(after: Self.utc("2026-03-29T01:00:00Z"), in: z) == Self.utc("2026-03-30T00:30:00Z"))
        let edge = try Self.times(["Sun 02:00", "Sun 03:00"])
        // 02:00 is skipped (at the shift), 03:00 is the shift itself: both at 01:00 UTC, once.
        #expect(edge.next(after: Self.utc("2026-03-29T00:00:00Z"), in: z) == Self.utc("2026-03-29T01:00:00Z"))
        #expect(edge.next(after: Self.utc("2026-03-29T01:00:00Z"), in: z) == Self.utc("2026-04-05T00:00:00Z"))
        let after = try Self.times(["daily 03:30"])
        #expect(after.next(after: Self.utc("2026-03-28T23:00:00Z"), in: z) == Self.utc("2026-03-29T01:30:00Z"))
    }

    /// Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00 UTC, so 02:00-02:59 comes twice. A time in it
    /// happens once, the first time.
    @Test func aTimeInTheRepeatedHourHappensOnce() throws {
        let z = Self.berlin
        let t = try Self.times(["daily 02:30"])
        let first = Self.utc("2026-10-25T00:30:00Z")
        #expect(t.next(after: Self.utc("2026-10-24T22:00:00Z"), in: z) == first)
        // Not again at 01:30 UTC, when the clock shows 02:30 a second time: the next is Monday's (CET, UTC+1).
        #expect(t.next(after: first, in: z) == Self.utc("2026-10-26T01:30:00Z"))
        #expect(t.next(after: Self.utc("2026-10-25T01:00:00Z"), in: z) == Self.utc("2026-10-26T01:30:00Z"))
    }

    /// Every moment of a year in Berlin, stepped by about an hour: `next` is strictly later, at most a week
    /// on, shows the entry's time on the wall (or lies on a shift), and nothing of the entry lies between.
    @Test func nextIsNeverEarlyNorSkipsOne() throws {
        let z = Self.berlin
        let t = try Self.times(["Mon-Fri 18:30", "Sun 02:15", "daily 00:00"])
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = z
        var now = Self.utc("2026-01-01T00:00:00Z")
        let end = Self.utc("2027-01-01T00:00:00Z")
        while now < end {
            let next = try #require(t.next(after: now, in: z))
            #expect(next > now && next.timeIntervalSince(now) <= 7 * 86_400, "\(now) → \(next)")
            let c = cal.dateComponents([.hour, .minute, .weekday], from: next)
            let wall = (c.hour!, c.minute!)
            let ok = wall == (0, 0) || (wall == (18, 30) && (2...6).contains(c.weekday!))
                || (wall == (2, 15) && c.weekday == 1) || (wall == (3, 0) && c.weekday == 1)
            #expect(ok, "\(next) shows \(wall) on weekday \(c.weekday!)")
            now = now.addingTimeInterval(3_607)
        }
    }

    // MARK: In a preset

    @Test func atReadsChecksAndWritesBack() throws {
        let (p, problems) = SceneTests.load(SceneTests.rig + """

            [[scene]]
            name = "evening"
            at = ["Mon-Fri 18:30", "daily 07:00:15"]
            values = { "fx/amp/gain" = -6.0 }
            [[scene]]
            name = "plain"
            values = { "fx/amp/gain" = 0.0 }
            """)
        #expect(problems.isEmpty, "\(problems)")
        let preset = try #require(p)
        #expect(preset.scenes.map(\.at) == [["Mon-Fri 18:30", "daily 07:00:15"], nil])
        let text = preset.toml()
        #expect(text.contains("at = [\"Mon-Fri 18:30\", \"daily 07:00:15\"]"), "\(text)")
        let (back, again) = PresetLoader.parse(text, file: "written", baseDirectory: SceneTests.dir.path)
        #expect(again.isEmpty, "\(again)")
        #expect(back?.scenes == preset.scenes)
        // A scene's problem names its times, as a book refuses them at run time.
        var bad = preset.scenes[0]
        bad.at = ["Mon 25:00"]
        #expect(bad.problem == "scene 'evening': at: entry 1: 'Mon 25:00': '25:00' is not a time of day (HH:MM or HH:MM:SS, 00:00 to 23:59:59)")
    }

    @Test func badTimesAreNamedWithFileLineAndKey() {
        let cases: [(String, String)] = [
            ("name = \"v\"\nvalues = {}\nat = \"Mon 18:30\"",
             "scenes.toml:14: scene.at: expected an array of strings like [\"Mon-Fri 18:30\"], found a string"),
            ("name = \"v\"\nvalues = {}\nat = [\"daily 07:00\", 7]",
             "scenes.toml:14: scene.at: expected strings like \"Mon-Fri 18:30\" or \"daily 07:00:15\", found an integer"),
            ("name = \"v\"\nvalues = {}\nat = [\n\"daily 07:00\",\n\"Mon 24:00\"\n]",
             "scenes.toml:16: scene.at: entry 2: 'Mon 24:00': '24:00' is not a time of day"),
            ("name = \"v\"\nvalues = {}\nat = [\"Someday 07:00\"]", "scenes.toml:14: scene.at: entry 1: 'Someday 07:00': 'someday' is not a day"),
            ("name = \"v\"\nvalues = {}\nat = [\"daily\"]", "scenes.toml:14: scene.at: entry 1: 'daily': expected DAYS TIME"),
        ]
        for (table, expected) in cases {
            let (p, text) = SceneTests.load(SceneTests.rig + "\n[[scene]]\n" + table)
            #expect(p == nil && text.contains(expected), "\(table)\n→ \(text)")
        }
    }

    @Test func sceneMarkersIsABoolWrittenBack() throws {
        let base = "[session]\nname = \"m\"\n[player]\n"
        let (p, problems) = SceneTests.load(base + "scene_markers = true\n")
        #expect(problems.isEmpty, "\(problems)")
        #expect(p?.player?.sceneMarkers == true)
        #expect(p?.toml().contains("scene_markers = true") == true)
        let (back, _) = PresetLoader.parse(p?.toml() ?? "", file: "written", baseDirectory: SceneTests.dir.path)
        #expect(back?.player?.sceneMarkers == true)
        #expect(SceneTests.load(base).0?.player?.sceneMarkers == false)
        #expect(SceneTests.load(base).0?.toml().contains("scene_markers") == false)
        let (bad, text) = SceneTests.load(base + "scene_markers = \"yes\"\n")
        #expect(bad == nil && text.contains("scenes.toml:4: player.scene_markers: expected true or false, found a string"), "\(text)")
    }
}
