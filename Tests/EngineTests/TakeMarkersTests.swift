@testable import Takes
import Testing
import Foundation
@testable import Engine
import SoundFile
import TestSupport

/// Markers of a rotated take land in the chunk that holds their frame, at the right frame of it.
@Suite struct TakeMarkersTests {
    static let chunks = [TakeReport.Chunk(files: [], startFrame: 0, frames: 1_000),
                         TakeReport.Chunk(files: [], startFrame: 1_000, frames: 1_500),
                         TakeReport.Chunk(files: [], startFrame: 2_500, frames: 100)]

    @Test func framesMapToChunkAndOffset() {
        let cases: [(Int, Int?, Int?)] = [(0, 0, 0), (999, 0, 999), (1_000, 1, 0), (2_499, 1, 1_499), (2_500, 2, 0),
                                          (2_599, 2, 99), (2_600, 2, 100), (2_601, nil, nil), (-1, nil, nil)]
        for (frame, chunk, offset) in cases {
            let p = TakeMarkers.place(frame, in: Self.chunks)
            #expect(p?.chunk == chunk && p?.offset == offset, "frame \(frame)")
        }
    }

    @Test(arguments: [false, true])
    func aRotatedTakeGetsEachMarkerInItsChunk(stems: Bool) throws {
        // A take of 3 chunks whose samples count frames (frame k holds k / 2^20, exact in float32), written as the
        // writer would: one file per chunk, or one per channel per chunk.
        let dir = TestEnvironment.temporaryDirectory("marks")
        let lengths = [48_000, 48_000, 10_000]
        var chunks: [TakeReport.Chunk] = []
        var start = 0
        for (i, n) in lengths.enumerated() {
            var files: [String] = []
            for ch in 0..<(stems ? 2 : 1) {
                let path = dir.appendingPathComponent("take-\(i)-\(ch).wav").path
                let channels = stems ? 1 : 2
                var samples: [Float] = []
                for k in start..<(start + n) {
                    for _ in 0..<channels { samples.append(Float(k) / 1_048_576) }
                }
                try TestEnvironment.writeWAV(samples, channels: channels, path: path, sample: .float32)
                files.append(path)
            }
            chunks.append(TakeReport.Chunk(files: files, startFrame: start, frames: n))
            start += n
        }
        let markers = [TakeMarker(frame: 5, label: "one"), TakeMarker(frame: 47_999, label: "two"),
                       TakeMarker(frame: 48_000, label: "three"), TakeMarker(frame: 100_000, label: "four"),
                       TakeMarker(frame: 106_000, label: "five")]
        #expect(TakeMarkers.write(markers, chunks: chunks).isEmpty)
        var found: [TakeMarker] = []
        for (i, c) in chunks.enumerated() {
            for file in c.files {
                let r = try SoundFileReader(path: file)
                let samples = try r.readAll()
                for cue in r.cues ?? [] {
                    // The sample at the cue is the take's frame the marker names.
                    if cue.frame < c.frames {
                        #expect(samples[cue.frame * r.channels] == Float(c.startFrame + cue.frame) / 1_048_576)
                    }
                    if file == c.files[0] { found.append(TakeMarker(frame: chunks[i].startFrame + cue.frame, label: cue.label)) }
                }
                #expect(try CueChunks.read(from: file) == (r.cues ?? []))
            }
        }
        #expect(found == markers)
        #expect(TakeMarkers.write([TakeMarker(frame: 106_001, label: "late")], chunks: chunks).count == 1)
    }

    @Test func theReportCarriesTriggerAndMarkersAndOldReportsStillRead() throws {
        var r = RetentionTests.report(session: "s", take: 1, started: Date(timeIntervalSince1970: 0), chunks: Self.chunks,
                                      running: false)
        let plain = r.json()
        #expect(!String(decoding: plain, as: UTF8.self).contains("\"trigger\""))
        let start = LevelTrigger.Start(startFrame: 1_000, triggerFrame: 5_800, levelDB: -6.02061, channel: 1, continued: false)
        let end = LevelTrigger.End(endFrame: 40_000, lastLoudFrame: 30_000, reason: .quiet)
        r.trigger = TakeReport.TriggerInfo(start: start, end: end, takeStreamStart: 1_000)
        r.markers = [TakeMarker(frame: 12, label: "verse", source: "osc")]
        let back = try JSONDecoder().decode(TakeReport.self, from: r.json())
        #expect(back.trigger == TakeReport.TriggerInfo(start: start, end: end, takeStreamStart: 1_000))
        #expect(back.trigger?.triggerFrame == 4_800 && back.trigger?.channel == 2 && back.trigger?.levelDB == -6.02)
        #expect(back.trigger?.lastLoudFrame == 29_000 && back.trigger?.ended == .quiet)
        #expect(back.markers == r.markers)
        #expect(try JSONDecoder().decode(TakeReport.self, from: plain).trigger == nil)
    }
}
