@testable import Takes
import Testing
import Foundation
@testable import Engine

/// Wall-clock aligned chunk boundaries: exact frames, contiguous chunks, names that follow the clock across
/// daylight-saving changes and clock steps.
@Suite struct WallClockRotationTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    static func utc(_ text: String) -> Date {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text) ?? ISO8601DateFormatter().date(from: text)!
    }

    static func contiguous(_ chunks: [(frames: Range<Int>, startsAt: Date)], from: Int, to: Int) -> Bool {
        guard let first = chunks.first, let last = chunks.last else { return false }
        return first.frames.lowerBound == from && last.frames.upperBound == to
            && zip(chunks, chunks.dropFirst()).allSatisfy { $0.frames.upperBound == $1.frames.lowerBound }
            && chunks.allSatisfy { !$0.frames.isEmpty }
    }

    @Test func hourlyChunksAcrossTheSpringChange() throws {
        // 00:30:00.25 CET on 2026-03-29; at 02:00 CET the clocks go to 03:00 CEST.
        let rate = 48_000
        let r = try #require(WallClockRotation(intervalSeconds: 3600, zone: Self.berlin, sampleRate: rate,
                                               anchorFrame: 1_000, anchorTime: Self.utc("2026-03-28T23:30:00.250Z")))
        let end = 1_000 + 5 * 3600 * rate
        let chunks = r.chunks(from: 1_000, to: end)
        #expect(Self.contiguous(chunks, from: 1_000, to: end))
        #expect(chunks.map { r.label($0.startsAt) } == [
            "2026-03-29T00:30:00+0100", "2026-03-29T01:00:00+0100", "2026-03-29T03:00:00+0200",
            "2026-03-29T04:00:00+0200", "2026-03-29T05:00:00+0200", "2026-03-29T06:00:00+0200"])
        // The first boundary is 1799.75 s of audio after the anchor; the rest are a real hour apart (01:00 CET to
        // 03:00 CEST is one hour).
        #expect(chunks[0].frames.count == 1_799 * rate + rate * 3 / 4)
        #expect(chunks.dropFirst().dropLast().allSatisfy { $0.frames.count == 3600 * rate })
    }

    @Test func hourlyChunksAcrossTheAutumnChange() throws {
        let rate = 44_100
        let r = try #require(WallClockRotation(intervalSeconds: 3600, zone: Self.berlin, sampleRate: rate,
                                               anchorFrame: 0, anchorTime: Self.utc("2026-10-24T23:10:00Z")))
        let chunks = r.chunks(from: 0, to: 4 * 3600 * rate)
        #expect(Self.contiguous(chunks, from: 0, to: 4 * 3600 * rate))
        let labels = chunks.map { r.label($0.startsAt) }
        #expect(labels == ["2026-10-25T01:10:00+0200", "2026-10-25T02:00:00+0200", "2026-10-25T02:00:00+0100",
                           "2026-10-25T03:00:00+0100", "2026-10-25T04:00:00+0100"])
        #expect(Set(labels).count == labels.count)
        #expect(chunks[1].frames.count == 3600 * rate && chunks[2].frames.count == 3600 * rate)
    }

    @Test func twoHourChunksStayOnEvenLocalHoursAcrossTheChanges() throws {
        // Every second local hour: on the spring day 02:00 does not exist, so the chunk from 00:00 runs to 04:00
        // (three real hours); on the autumn day 02:00 comes twice and both begin a chunk.
        let rate = 1_000
        let spring = try #require(WallClockRotation(intervalSeconds: 7200, zone: Self.berlin, sampleRate: rate,
                                                    anchorFrame: 0, anchorTime: Self.utc("2026-03-28T23:00:00Z")))
        let s = spring.chunks(from: 0, to: 7 * 3600 * rate)
        #expect(s.map { spring.label($0.startsAt) } == ["2026-03-29T00:00:00+0100", "2026-03-29T04:00:00+0200",
                                                       "2026-03-29T06:00:00+0200"])
        #expect(s.map(\.frames.count) == [3 * 3600 * rate, 7200 * rate, 7200 * rate])
        let autumn = try #require(WallClockRotation(intervalSeconds: 7200, zone: Self.berlin, sampleRate: rate,
                                                    anchorFrame: 0, anchorTime: Self.utc("2026-10-24T22:00:00Z")))
        let a = autumn.chunks(from: 0, to: 6 * 3600 * rate)
        #expect(a.map { autumn.label($0.startsAt) } == ["2026-10-25T00:00:00+0200", "2026-10-25T02:00:00+0200",
                                                       "2026-10-25T02:00:00+0100", "2026-10-25T04:00:00+0100"])
        #expect(a.map(\.frames.count) == [7200 * rate, 3600 * rate, 7200 * rate, 3600 * rate])
    }

    @Test func boundariesAreTheExactFrameOfTheirInstant() throws {
        // Quarter hours in a zone half an hour off UTC, at 44.1 kHz, from an anchor with a fractional second.
        let kolkata = TimeZone(identifier: "Asia/Kolkata")!
        let anchor = Self.utc("2026-06-01T10:07:13.123456Z")
        let r = try #require(WallClockRotation(intervalSeconds: 900, zone: kolkata, sampleRate: 44_100,
                                               anchorFrame: 777, anchorTime: anchor))
        var at = 777
        var expected = Self.utc("2026-06-01T10:15:00Z")   // 15:45 IST
        for _ in 0..<10 {
            let b = r.nextBoundary(after: at)
            #expect(b.time == expected)
            let seconds = expected.timeIntervalSince1970 - anchor.timeIntervalSince1970
            #expect(b.frame == 777 + Int((seconds * 44_100).rounded()))
            at = b.frame
            expected = expected.addingTimeInterval(900)
        }
        #expect(WallClockRotation(intervalSeconds: 7 * 60, sampleRate: 48_000, anchorFrame: 0, anchorTime: Date()) == nil)
    }

    /// A writer's view: positions advance, the clock is stepped at `step.frame`, chunks end at boundaries.
    static func simulate(_ start: WallClockRotation, to end: Int, step: (frame: Int, time: Date))
        -> [(frames: Range<Int>, startsAt: Date)] {
        var r = start
        var out: [(frames: Range<Int>, startsAt: Date)] = []
        var chunkStart = r.anchorFrame
        var name = r.time(ofFrame: chunkStart)
        var next = r.nextBoundary(after: chunkStart)
        var stepped = false
        while chunkStart < end {
            if !stepped && step.frame < next.frame {
                r.reanchor(frame: step.frame, time: step.time)
                stepped = true
                next = r.nextBoundary(after: step.frame - 1)
                continue
            }
            let stop = min(next.frame, end)
            out.append((chunkStart..<stop, name))
            chunkStart = stop
            name = next.time
            next = r.nextBoundary(after: chunkStart)
        }
        return out
    }

    @Test(arguments: [30 * 60.0, -30 * 60.0, 2.5])
    func aClockStepNeitherLosesNorDuplicatesFrames(stepSeconds: Double) throws {
        let rate = 48_000
        let anchor = Self.utc("2026-11-23T09:20:00Z")   // 10:20 CET
        let r = try #require(WallClockRotation(intervalSeconds: 3600, zone: Self.berlin, sampleRate: rate,
                                               anchorFrame: 0, anchorTime: anchor))
        // At 10:40 (stream truth) the system clock is stepped by `stepSeconds`.
        let stepFrame = 20 * 60 * rate
        let stepTime = anchor.addingTimeInterval(20 * 60 + stepSeconds)
        let end = 3 * 3600 * rate
        let chunks = Self.simulate(r, to: end, step: (stepFrame, stepTime))
        #expect(Self.contiguous(chunks, from: 0, to: end))
        #expect(chunks.reduce(0) { $0 + $1.frames.count } == end)
        // After the step, boundaries sit where the new clock shows the full hour.
        let newClock = try #require(WallClockRotation(intervalSeconds: 3600, zone: Self.berlin, sampleRate: rate,
                                                      anchorFrame: stepFrame, anchorTime: stepTime))
        let expected = newClock.nextBoundary(after: stepFrame - 1)
        #expect(chunks[1].frames.lowerBound == expected.frame)
        #expect(newClock.label(chunks[1].startsAt).hasSuffix(stepSeconds < 0 ? "T11:00:00+0100" : stepSeconds > 60 ? "T12:00:00+0100" : "T11:00:00+0100"))
        #expect(chunks.dropFirst().allSatisfy { newClock.label($0.startsAt).contains(":00:00+0100") })
    }
}
