import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// Joins between resampled items on a 48 kHz server: what is played must equal resampling the concatenation in one
/// go (offline, with `Resampler`), not each item on its own.
@Suite(.serialized) struct ResampledJoinTests {
    /// Resamples interleaved `source` in one stream (fed in 1000-frame pieces, then flushed).
    static func resampleOffline(_ source: [Float], channels: Int, from: Int, to: Int,
                                quality: ResampleQuality = .high) throws -> [Float] {
        let r = try Resampler(from: from, to: to, channels: channels, quality: quality)
        let capacity = 16384
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: capacity * channels)
        defer { buffer.deallocate() }
        var out: [Float] = []
        let frames = source.count / channels
        var done = 0
        source.withUnsafeBufferPointer { src in
            while done < frames {
                let n = min(1000, frames - done)
                let step = r.process(src.baseAddress! + done * channels, inputFrames: n, into: buffer,
                                     outputCapacity: capacity)
                out += UnsafeBufferPointer(start: buffer, count: step.produced * channels)
                done += step.consumed
            }
        }
        while true {
            let step = r.process(nil, inputFrames: 0, into: buffer, outputCapacity: capacity)
            if step.produced == 0 { break }
            out += UnsafeBufferPointer(start: buffer, count: step.produced * channels)
        }
        return out
    }

    /// Lines `played` (mono) up with `reference` (the offset that best matches the first 4096 samples after the
    /// first audible one) and returns the largest difference over `frames` reference samples (all: nil), in dB
    /// relative to `peak`.
    static func deviation(played: [Float], reference: [Float], frames: Int? = nil, peak: Double)
        -> (offset: Int, maxDeviation: Double, dB: Double, at: Int)? {
        guard let p0 = played.firstIndex(where: { abs($0) > 1e-3 }),
              let r0 = reference.firstIndex(where: { abs($0) > 1e-3 }) else { return nil }
        var best: (offset: Int, error: Double)?
        for offset in (p0 - r0 - 16)...(p0 - r0 + 16) where offset >= 0 {
            var e = 0.0
            for i in r0..<min(r0 + 4096, reference.count) where i + offset < played.count {
                e = max(e, abs(Double(played[i + offset]) - Double(reference[i])))
            }
            if best == nil || e < best!.error { best = (offset, e) }
        }
        guard let offset = best?.offset else { return nil }
        let n = min(frames ?? reference.count, reference.count)
        guard offset + n <= played.count else { return nil }
        var worst = 0.0, at = 0
        for i in 0..<n {
            let d = abs(Double(played[i + offset]) - Double(reference[i]))
            if d > worst { worst = d; at = i }
        }
        return (offset, worst, 20 * log10(max(worst, 1e-30) / peak), at)
    }

    static func note(_ line: String) {
        let path = "/tmp/tandem-resample-joins.txt"
        if let h = FileHandle(forWritingAtPath: path) {
            h.seekToEndOfFile()
            h.write(Data((line + "\n").utf8))
        } else {
            try? (line + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
    }

    enum Case: String, CaseIterable, Sendable { case halves, loopItem, loopAll }

    /// Two 44.1 kHz halves of one 997 Hz sine queued back to back, one looped 44.1 kHz file, and the two halves
    /// looped as a queue: on a 48 kHz server the output is the resampled concatenation, within -120 dB of the
    /// sine's peak (a fresh converter per item showed a phase jump and a spike of about -25 dB at each join).
    @Test(arguments: Case.allCases)
    func resampledItemsJoinAsTheResampledWhole(_ kind: Case) throws {
        let rig = try PlayerTests.Rig("rjoin-\(kind.rawValue)", channels: 1) {
            $0.loop = kind == .halves ? .none : kind == .loopItem ? .item : .all
        }
        let peak = 0.5
        // 997 Hz: no whole number of cycles in either half, so a join that is not seamless shows.
        let whole = Signals.sine(frames: 66_001, channels: 1, frequency: 997, sampleRate: 44100, peak: peak)
        let cut = 30_001
        let first = Array(whole[..<cut]), second = Array(whole[cut...])
        let pa = try rig.file("a.wav", first, channels: 1, rate: 44100)
        let pb = try rig.file("b.wav", second, channels: 1, rate: 44100)
        let source: [Float]
        switch kind {
        case .halves:
            rig.player.load([pa, pb])
            source = whole
        case .loopItem:
            rig.player.load([pa])
            source = Array(repeating: first, count: 6).flatMap { $0 }
        case .loopAll:
            rig.player.load([pa, pb])
            source = Array(repeating: whole, count: 3).flatMap { $0 }
        }
        let reference = try Self.resampleOffline(source, channels: 1, from: 44100, to: 48000)

        // Play, and read the position now and then: item and frame must follow the output (item 1 of the halves
        // starts exactly where the first half's 30,001 frames end at 48 kHz).
        rig.player.waitForFill(seconds: 5)
        rig.player.play()
        var events: [PlayerEvent] = []
        var positionErrors: [String] = []
        var checked = 0
        let boundary = Int((Double(cut) * 48000 / 44100).rounded())
        let deadline = Date().addingTimeInterval(kind == .halves ? 10 : 2.2)
        while Date() < deadline {
            events += rig.player.drainEvents()
            if kind == .halves && events.contains(.queueFinished) { break }
            let before = rig.player.playedFrames
            let pos = rig.player.position
            if kind == .halves, before == rig.player.playedFrames, before > 0, before < reference.count - 2048,
               let item = pos.item {
                let expectItem = before < boundary ? 0 : 1
                let expectFrame = Int((Double(before - (expectItem == 0 ? 0 : boundary)) * 44100 / 48000).rounded())
                checked += 1
                if item != expectItem || abs(pos.frame - expectFrame) > 1 {
                    positionErrors.append("played \(before): item \(item) frame \(pos.frame), expected item "
                                          + "\(expectItem) frame \(expectFrame)")
                }
            }
            usleep(7_000)
        }
        usleep(100_000)
        rig.player.close()
        rig.capture.close()
        rig.server.stop()
        let played = rig.capture.samples()

        let frames = kind == .halves ? reference.count : 96_000
        let d = try #require(Self.deviation(played: played, reference: reference, frames: frames, peak: peak))
        Self.note(d.maxDeviation == 0 ? "\(kind.rawValue): bit-identical to the resampled whole (\(frames) frames)"
                  : String(format: "%@: largest deviation from the resampled whole %.1f dB at output frame %d of %d",
                           kind.rawValue, d.dB, d.at, frames))
        #expect(d.dB < -120, "\(kind): largest deviation \(d.dB) dB at frame \(d.at)")
        if kind == .halves {
            // Nothing after the whole: the tail is played once, at the end.
            let after = played[(d.offset + reference.count)...].contains { abs($0) > 1e-6 }
            #expect(!after, "audio after the resampled whole")
            #expect(events.contains(.itemStarted(item: 1, path: pb)))
            #expect(checked > 20 && positionErrors.isEmpty, "\(checked) checked: \(positionErrors.prefix(5))")
        }
    }

    /// Where the rate changes (a 44.1 kHz item, then the same sine continued at 48 kHz), the first stream's tail is
    /// flushed and the next item starts at the next whole output frame. Measured against the ideal continuous
    /// sine; the items still follow each other without a gap or overlap.
    @Test func aRateChangeJoinIsFlushedAndMeasured() throws {
        let rig = try PlayerTests.Rig("rjoin-rate", channels: 1) { _ in }
        let peak = 0.5, f = 997.0
        let n1 = 30_001, n2 = 36_000
        let first = Signals.sine(frames: n1, channels: 1, frequency: f, sampleRate: 44100, peak: peak)
        // The second item continues the sine at 48 kHz from the time the first one ends.
        let t0 = Double(n1) / 44100
        let second: [Float] = (0..<n2).map { m in
            Float((peak * sin(2 * .pi * f * (t0 + Double(m) / 48000)) * 8_388_608).rounded() / 8_388_608) + 0
        }
        let pa = try rig.file("a.wav", first, channels: 1, rate: 44100)
        let pb = try rig.file("b.wav", second, channels: 1, rate: 48000)
        rig.player.load([pa, pb])
        let played = rig.playOut().samples
        // The 48 kHz item is played bit for bit, after the whole first stream.
        let m = AudioCompare.alignment(source: second, recorded: played, channels: 1)
        #expect(m.matchedFrames == n2 && m.mismatchedFrames == 0, "\(m)")
        let joinAt = m.recordedOffset
        let start = try #require(played.firstIndex { $0 != 0 })
        let firstLength = joinAt - start
        let ideal = Double(n1) * 48000 / 44100
        #expect(abs(Double(firstLength) - ideal) <= 1, "first item \(firstLength) frames at 48 kHz, ideal \(ideal)")
        // Deviation from the ideal sine around the join (10 ms each side), against the same far from it.
        func worst(_ range: Range<Int>) -> Double {
            var w = 0.0
            for i in range {
                let t = Double(i - start) / 48000
                w = max(w, abs(Double(played[i]) - peak * sin(2 * .pi * f * t)))
            }
            return 20 * log10(max(w, 1e-30) / peak)
        }
        let atJoin = worst((joinAt - 480)..<(joinAt + 480))
        let away = worst((start + 4800)..<(start + 14_400))
        Self.note(String(format: "rate change 44.1 -> 48 kHz: first item %d frames (ideal %.2f), deviation from the "
                         + "ideal sine %.1f dB within 10 ms of the join, %.1f dB away from it",
                         firstLength, ideal, atJoin, away))
        #expect(away < -110, "away from the join \(away) dB")
    }
}
