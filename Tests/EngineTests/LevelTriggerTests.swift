@testable import Takes
import Testing
import Foundation
@testable import Engine
import Presets

/// The level trigger decided from samples alone (no server): exact frames, thresholds, attack, hold, hysteresis,
/// minimum and maximum length, channel rules.
@Suite struct LevelTriggerTests {
    static let rate = 48_000

    /// A cosine burst (its first and last samples are at full amplitude) of `amplitude` over `range`, silence
    /// elsewhere, `channels` channels (burst on `on` only).
    static func burst(total: Int, range: Range<Int>, amplitude: Float, channels: Int = 1, on: [Int] = [0],
                      square: Bool = false) -> [Float] {
        var s = [Float](repeating: 0, count: total * channels)
        for n in range {
            let k = n - range.lowerBound
            let v: Float = square ? (k % 2 == 0 ? amplitude : -amplitude)
                : amplitude * Float(cos(2 * Double.pi * Double(k) / 48))
            for c in on { s[n * channels + c] = v }
        }
        return s
    }

    /// Feeds `samples` in blocks of uneven sizes (as a writer draining a ring would).
    static func run(_ trigger: inout LevelTrigger, _ samples: [Float], blocks: [Int] = [1000, 37, 4096, 1, 333]) -> [LevelTrigger.Event] {
        var events: [LevelTrigger.Event] = []
        let ch = trigger.channelCount
        var at = 0
        var i = 0
        let frames = samples.count / ch
        samples.withUnsafeBufferPointer { buf in
            while at < frames {
                let n = min(blocks[i % blocks.count], frames - at)
                events += trigger.feed(UnsafeBufferPointer(rebasing: buf[(at * ch)..<((at + n) * ch)]), frames: n)
                at += n
                i += 1
            }
        }
        return events
    }

    static func starts(_ e: [LevelTrigger.Event]) -> [LevelTrigger.Start] {
        e.compactMap { if case .start(let s) = $0 { s } else { nil } }
    }
    static func ends(_ e: [LevelTrigger.Event]) -> [LevelTrigger.End] {
        e.compactMap { if case .end(let s) = $0 { s } else { nil } }
    }

    @Test func aBurstAfterSilenceGivesExactStartAndEnd() {
        let b = 48_000 + 123, e = b + 24_000
        let samples = Self.burst(total: e + 96_000, range: b..<e, amplitude: 0.5)
        let rule = LevelTrigger.Rule(measure: .peak, windowFrames: 480, startDB: -20, stopDB: -30, attackFrames: 480,
                                     holdFrames: 9_600, pretriggerFrames: 4_800, postrollFrames: 2_400)
        var t = LevelTrigger(rule: rule, channels: 1)
        let events = Self.run(&t, samples)
        #expect(events.count == 2)
        let s = Self.starts(events), en = Self.ends(events)
        #expect(s.count == 1 && en.count == 1)
        #expect(s.first?.triggerFrame == b)
        #expect(s.first?.startFrame == b - 4_800)
        #expect(abs((s.first?.levelDB ?? 0) - (-6.0206)) < 0.001)
        #expect(en.first?.lastLoudFrame == e - 1)
        // The take's last frame is the burst's last plus hold plus post-roll.
        #expect(en.first?.endFrame == e + 9_600 + 2_400)
        #expect(en.first?.reason == .quiet)

        // The same stream in one block decides the same frames.
        var whole = LevelTrigger(rule: rule, channels: 1)
        #expect(whole.feed(samples) == events)
    }

    @Test func rmsCrossesWhereTheWindowReachesTheThreshold() {
        // A square wave of 0.5: every square is 0.25, so the window's mean reaches -20 dBFS (0.01) after 20 frames
        // of 480, and falls under -30 dBFS (0.001) when fewer than 2 of the window's frames are the burst's.
        let b = 10_000, e = b + 9_600
        let samples = Self.burst(total: e + 40_000, range: b..<e, amplitude: 0.5, square: true)
        let rule = LevelTrigger.Rule(measure: .rms, windowFrames: 480, startDB: -20, stopDB: -30, attackFrames: 100,
                                     holdFrames: 1_000, pretriggerFrames: 500, postrollFrames: 250)
        var t = LevelTrigger(rule: rule, channels: 1)
        let events = Self.run(&t, samples)
        let s = Self.starts(events), en = Self.ends(events)
        #expect(s.map(\.triggerFrame) == [b + 19])
        #expect(s.map(\.startFrame) == [b + 19 - 500])
        #expect(en.map(\.lastLoudFrame) == [e + 477])
        #expect(en.map(\.endFrame) == [e + 477 + 1 + 1_000 + 250])
    }

    @Test(arguments: [LevelTrigger.Measure.peak, .rms])
    func quietNoiseUnderTheThresholdStartsNoTake(measure: LevelTrigger.Measure) {
        // 60 s of noise peaking at -70 dBFS against a -40 dBFS threshold.
        var rng = SystemRandomNumberGenerator()
        let amplitude = Float(pow(10, -70.0 / 20))
        let frames = 60 * Self.rate
        let noise = (0..<frames).map { _ in Float.random(in: -amplitude...amplitude, using: &rng) }
        let rule = LevelTrigger.Rule(measure: measure, windowFrames: 480, startDB: -40, stopDB: -46,
                                     attackFrames: 480, holdFrames: 4_800)
        var t = LevelTrigger(rule: rule, channels: 1)
        #expect(Self.run(&t, noise).isEmpty)
        #expect(t.position == frames)
        // The same noise 40 dB louder (peaks at -30 dBFS, RMS about -35 dBFS) does start a take: the detector is alive.
        var loud = LevelTrigger(rule: rule, channels: 1)
        #expect(Self.starts(loud.feed(noise.map { $0 * 100 })).count == 1)
    }

    @Test func aBurstShorterThanTheAttackStartsNothing() {
        let rule = LevelTrigger.Rule(measure: .peak, windowFrames: 480, startDB: -20, stopDB: -30, attackFrames: 4_800,
                                     holdFrames: 4_800)
        for (length, expected) in [(4_000, 0), (4_799, 0), (4_800, 1), (9_000, 1)] {
            let samples = Self.burst(total: 60_000, range: 10_000..<(10_000 + length), amplitude: 0.9)
            var t = LevelTrigger(rule: rule, channels: 1)
            let s = Self.starts(Self.run(&t, samples))
            #expect(s.count == expected, "burst of \(length) frames")
            if expected == 1 { #expect(s.first?.triggerFrame == 10_000) }
        }
    }

    @Test func theMaximumLengthSplitsIntoContiguousTakes() {
        let b = 1_000, e = b + 10 * Self.rate
        let samples = Self.burst(total: e + 20_000, range: b..<e, amplitude: 0.5)
        let rule = LevelTrigger.Rule(startDB: -20, stopDB: -30, attackFrames: 480, holdFrames: 4_800,
                                     pretriggerFrames: 480, postrollFrames: 0, maxFrames: 3 * Self.rate)
        var t = LevelTrigger(rule: rule, channels: 1)
        let events = Self.run(&t, samples)
        let s = Self.starts(events), en = Self.ends(events)
        #expect(s.map(\.startFrame) == [520, 520 + 144_000, 520 + 288_000, 520 + 432_000])
        #expect(s.map(\.continued) == [false, true, true, true])
        #expect(en.map(\.endFrame) == [520 + 144_000, 520 + 288_000, 520 + 432_000, e + 4_800])
        #expect(en.map(\.reason) == [.maxLength, .maxLength, .maxLength, .quiet])
        // Each take starts where the one before ended.
        for i in 1..<s.count { #expect(s[i].startFrame == en[i - 1].endFrame) }
    }

    @Test func theMinimumLengthHoldsAShortTakeOpen() {
        let samples = Self.burst(total: 100_000, range: 5_000..<6_000, amplitude: 0.5)
        let rule = LevelTrigger.Rule(startDB: -20, stopDB: -30, attackFrames: 480, holdFrames: 480,
                                     pretriggerFrames: 100, postrollFrames: 0, minFrames: 48_000)
        var t = LevelTrigger(rule: rule, channels: 1)
        let events = Self.run(&t, samples)
        #expect(Self.starts(events).map(\.startFrame) == [4_900])
        #expect(Self.ends(events).map(\.endFrame) == [4_900 + 48_000])
        #expect(Self.ends(events).map(\.reason) == [.minLength])
        // Without a minimum the same take ends a hold after the burst.
        var free = LevelTrigger(rule: .init(startDB: -20, stopDB: -30, attackFrames: 480, holdFrames: 480,
                                            pretriggerFrames: 100), channels: 1)
        #expect(Self.ends(free.feed(samples)).map(\.endFrame) == [6_000 + 480])
    }

    @Test func hysteresisKeepsATakeBetweenTheThresholds() {
        // Loud (-6 dBFS) for 0.1 s, then -25 dBFS (between stop -30 and start -20) for 1 s, then silence.
        var s = Self.burst(total: 200_000, range: 10_000..<14_800, amplitude: 0.5)
        let middle = Self.burst(total: 200_000, range: 14_800..<62_800, amplitude: Float(pow(10, -25.0 / 20)))
        for i in s.indices { s[i] += middle[i] }
        let rule = LevelTrigger.Rule(startDB: -20, stopDB: -30, attackFrames: 480, holdFrames: 2_400)
        var t = LevelTrigger(rule: rule, channels: 1)
        let ends = Self.ends(t.feed(s))
        #expect(ends.map(\.lastLoudFrame) == [62_799])
        // The middle part alone never starts a take.
        var quiet = LevelTrigger(rule: rule, channels: 1)
        #expect(quiet.feed(middle).isEmpty)
    }

    @Test func channelRulesAnyAllAndListed() {
        // Two channels, a burst on the second only.
        let samples = Self.burst(total: 40_000, range: 10_000..<20_000, amplitude: 0.5, channels: 2, on: [1])
        func starts(_ channels: [Int]?, _ combine: LevelTrigger.Combine) -> [LevelTrigger.Start] {
            var t = LevelTrigger(rule: .init(channels: channels, combine: combine, startDB: -20, stopDB: -30,
                                             attackFrames: 480, holdFrames: 480), channels: 2)
            return Self.starts(t.feed(samples))
        }
        #expect(starts(nil, .any).map(\.channel) == [1])
        #expect(starts(nil, .all).isEmpty)
        #expect(starts([0], .any).isEmpty)
        #expect(starts([1], .all).map(\.triggerFrame) == [10_000])
        // On both channels, `all` starts too.
        let both = Self.burst(total: 40_000, range: 10_000..<20_000, amplitude: 0.5, channels: 2, on: [0, 1])
        var t = LevelTrigger(rule: .init(combine: .all, startDB: -20, stopDB: -30, attackFrames: 480, holdFrames: 480),
                             channels: 2)
        #expect(Self.starts(t.feed(both)).map(\.triggerFrame) == [10_000])
    }

    @Test func aSecondTakeNeverStartsInsideTheFirst() {
        // Two bursts 0.2 s apart; the pre-trigger (0.5 s) would reach back into the first take's post-roll.
        var s = Self.burst(total: 200_000, range: 10_000..<20_000, amplitude: 0.5)
        let second = Self.burst(total: 200_000, range: 40_000..<50_000, amplitude: 0.5)
        for i in s.indices { s[i] += second[i] }
        let rule = LevelTrigger.Rule(startDB: -20, stopDB: -30, attackFrames: 480, holdFrames: 4_800,
                                     pretriggerFrames: 24_000, postrollFrames: 4_800)
        var t = LevelTrigger(rule: rule, channels: 1)
        let events = t.feed(s)
        let st = Self.starts(events), en = Self.ends(events)
        #expect(st.map(\.startFrame) == [0, 29_600])
        #expect(en.map(\.endFrame) == [29_600, 59_600])
    }

    @Test func anOutsideStopEndsTheRunningTake() {
        var t = LevelTrigger(rule: .init(startDB: -20, stopDB: -30, attackFrames: 10, holdFrames: 10), channels: 1)
        _ = t.feed(Self.burst(total: 5_000, range: 100..<5_000, amplitude: 0.5))
        #expect(t.runningSince == 100)
        #expect(t.stop(at: 5_000) == .init(endFrame: 5_000, lastLoudFrame: nil, reason: .stopped))
        #expect(t.runningSince == nil)
    }
}

/// The preset's units become frames and 0-based channels.
@Suite struct UnattendedPresetMappingTests {
    @Test func aTriggerTableBecomesARuleInFrames() throws {
        var g = TriggerSection()
        g.measure = .rms
        g.windowSeconds = 0.05
        g.channels = .listed([1, 3], all: true)
        g.thresholdDB = -40
        g.stopThresholdDB = -50
        g.attackSeconds = 0.2
        g.holdSeconds = 5
        g.postrollSeconds = 1.5
        g.minLengthSeconds = 10
        g.maxLengthSeconds = 3600
        let rule = LevelTrigger.Rule(g, sampleRate: 48_000, prerollSeconds: 2)
        #expect(rule == LevelTrigger.Rule(measure: .rms, windowFrames: 2_400, channels: [0, 2], combine: .all, startDB: -40,
                                          stopDB: -50, attackFrames: 9_600, holdFrames: 240_000, pretriggerFrames: 96_000,
                                          postrollFrames: 72_000, minFrames: 480_000, maxFrames: 172_800_000))
        var k = RetentionSection()
        k.keepDays = 7
        k.minFreeBytes = 1 << 30
        k.runningTake = .closedChunks
        #expect(RetentionPolicy(k) == RetentionPolicy(keepSeconds: 604_800, minFreeBytes: 1 << 30, guardSeconds: 3600,
                                                      closedChunksOfRunningTake: true))
    }
}
