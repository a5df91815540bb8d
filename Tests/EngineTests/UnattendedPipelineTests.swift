@testable import Takes
import Testing
import Foundation
@testable import Engine
import Presets
import SoundFile
import TestSupport

/// The pieces put together offline the way the disk writer will use them: frames come out of a "ring" in blocks,
/// the trigger decides, files are written for the frames it names, rotated on the clock, with markers. Checked
/// against the source sample for sample.
@Suite struct UnattendedPipelineTests {
    /// A stream where frame k holds a value that identifies k (exact in float32), with a loud burst in it.
    static func stream(frames: Int, burst: Range<Int>) -> [Float] {
        (0..<frames).map { k in
            let id = Float(k % 65_536) / 1_048_576          // under -24 dBFS: silence for the trigger at -20 dBFS
            return burst.contains(k) ? 0.5 + id : id * 0.001
        }
    }

    @Test func aTriggeredTakeEqualsTheSourceSampleForSample() throws {
        let rate = 48_000
        let burst = 100_000..<130_000
        let source = Self.stream(frames: 300_000, burst: burst)
        var g = TriggerSection()
        g.thresholdDB = -20
        g.stopThresholdDB = -30
        g.attackSeconds = 0.05
        g.holdSeconds = 0.5
        g.postrollSeconds = 0.25
        let rule = LevelTrigger.Rule(g, sampleRate: rate, prerollSeconds: 1)
        var trigger = LevelTrigger(rule: rule, channels: 1)
        var start: LevelTrigger.Start?
        var end: LevelTrigger.End?
        var at = 0
        while at < source.count {
            let n = min(1_024, source.count - at)
            for e in source[at..<(at + n)].withUnsafeBufferPointer({ trigger.feed($0, frames: n) }) {
                switch e {
                case .start(let s): start = s
                case .end(let x): end = x
                }
            }
            at += n
        }
        let s = try #require(start), e = try #require(end)
        #expect(s.triggerFrame == burst.lowerBound)
        #expect(s.startFrame == burst.lowerBound - rate)            // 1 s pre-roll
        #expect(e.endFrame == burst.upperBound + rate / 2 + rate / 4) // hold + post-roll after the burst
        // What the writer writes: the stream from start to end.
        let path = TestEnvironment.temporaryDirectory("pipeline").appendingPathComponent("take.wav").path
        try TestEnvironment.writeWAV(Array(source[s.startFrame..<e.endFrame]), channels: 1, path: path, sample: .float32)
        let back = try TestEnvironment.readAudio(path).samples
        #expect(back.count == e.endFrame - s.startFrame)
        #expect(back == Array(source[s.startFrame..<e.endFrame]))
        #expect(back.first == source[burst.lowerBound - rate])
    }

    @Test func clockRotatedChunksWithMarkersConcatenateToTheContinuousRecording() throws {
        // Two hour boundaries crossed, at a 100 Hz "rate" so three hours are small files; 5 markers, one on a boundary.
        let rate = 100
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        let anchor = ISO8601DateFormatter().date(from: "2026-10-25T00:40:00Z")!   // 02:40 CEST, before the change
        let rotation = try #require(WallClockRotation(intervalSeconds: 3600, zone: berlin, sampleRate: rate,
                                                      anchorFrame: 0, anchorTime: anchor))
        let total = 3 * 3600 * rate
        let source = (0..<total).map { Float($0) / 1_048_576 }
        let dir = TestEnvironment.temporaryDirectory("pipeline-rot")
        var chunks: [TakeReport.Chunk] = []
        var names: [String] = []
        for (i, c) in rotation.chunks(from: 0, to: total).enumerated() {
            let path = dir.appendingPathComponent("take-\(i + 1).wav").path
            try TestEnvironment.writeWAV(Array(source[c.frames]), channels: 1, sampleRate: rate, path: path, sample: .float32)
            chunks.append(TakeReport.Chunk(files: [path], startFrame: c.frames.lowerBound, frames: c.frames.count))
            names.append(rotation.label(c.startsAt))
        }
        #expect(names == ["2026-10-25T02:40:00+0200", "2026-10-25T02:00:00+0100", "2026-10-25T03:00:00+0100",
                          "2026-10-25T04:00:00+0100"])
        #expect(chunks.map(\.frames) == [20 * 60 * rate, 3600 * rate, 3600 * rate, 40 * 60 * rate])
        let markers = [TakeMarker(frame: 7, label: "a"), TakeMarker(frame: 50_000, label: "b"),
                       TakeMarker(frame: 20 * 60 * rate, label: "on the boundary"), TakeMarker(frame: 800_000, label: "d"),
                       TakeMarker(frame: total, label: "end")]
        #expect(TakeMarkers.write(markers, chunks: chunks).isEmpty)
        var joined: [Float] = []
        var found: [TakeMarker] = []
        for c in chunks {
            let r = try SoundFileReader(path: c.files[0])
            joined += try r.readAll()
            found += (r.cues ?? []).map { TakeMarker(frame: c.startFrame + $0.frame, label: $0.label) }
        }
        #expect(joined == source)
        #expect(found == markers)
    }
}
