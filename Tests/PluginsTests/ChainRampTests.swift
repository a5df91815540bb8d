import Foundation
@testable import Plugins
import Presets
import Testing

/// Glides and switches under a crossfade (what a scene's recall asks of a chain), run cycle by cycle without a
/// server: a 997 Hz sine through swh's amp and Butterworth high-pass while the gain, the cutoff and a bypass change
/// together 100 times at random phases. The largest sample-to-sample step of the output around each change is held
/// against the sine's own largest step; the same changes made at once measure far above it.
@Suite(.serialized) struct ChainRampTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static let highpass = "http://plugin.org.uk/swh-plugins/butthigh_iir"
    static let rate = 48000, period = 256

    /// The scenes the test alternates: gain (dB), cutoff (Hz), the filter bypassed.
    static let scenes: [(gain: Double, cutoff: Double, bypass: Bool)] = [
        (0, 200, false), (-20, 5000, false), (-20, 5000, true), (0, 200, true),
    ]

    struct Run {
        var worstStepAtChange: Float
        var sineStep: Float
        var changes: Int
        var log: [ChainChange]
    }

    /// Runs `changes` scene changes at random cycles (seeded), each with `rampFrames`, and measures the output's
    /// largest step within the ramp (plus two cycles) after each.
    static func measure(rampFrames: Int, changes: Int = 100, seed: UInt64 = 7,
                        parts: Set<String> = ["gain", "cutoff", "bypass"], gaps: (least: Int, spread: Int) = (12, 32)) throws -> Run {
        let chain = PluginChain(specs: [PluginSpec(uri: amp, name: "amp"), PluginSpec(uri: highpass, name: "filter")],
                                channels: 1, sampleRate: rate, period: period, label: "test")
        #expect(chain.specs.count == 2)
        try chain.set("filter", "cutoff", 200)
        let input = UnsafeMutablePointer<Float>.allocate(capacity: period)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: period)
        defer {
            input.deallocate()
            output.deallocate()
        }
        var ins = [input], outs = [output]
        var phase = 0.0, last: Float = 0, lastIn: Float = 0
        var sineStep: Float = 0, worst: Float = 0
        var random = seed
        var next = 40, watchUntil = -1, scene = 0, done = 0, cycle = 0
        var log: [ChainChange] = []
        while done < changes || cycle <= watchUntil {
            if cycle == next && done < changes {
                scene = (scene + 1) % scenes.count
                let s = scenes[scene]
                if parts.contains("gain") { try chain.set("amp", "gain", s.gain, rampFrames: rampFrames) }
                if parts.contains("cutoff") { try chain.set("filter", "cutoff", s.cutoff, rampFrames: rampFrames) }
                if parts.contains("bypass") { try chain.setBypass("filter", s.bypass, rampFrames: rampFrames) }
                done += 1
                watchUntil = cycle + max(1, rampFrames / period) + 2
                random = random &* 6364136223846793005 &+ 1442695040888963407
                // 12 to 43 cycles later by default: the sine's phase differs each time.
                next = cycle + gaps.least + Int((random >> 33) % UInt64(gaps.spread))
            }
            for i in 0..<period {
                input[i] = Float(0.5 * sin(phase))
                phase += 2 * Double.pi * 997 / Double(rate)
                sineStep = max(sineStep, abs(input[i] - lastIn))
                lastIn = input[i]
            }
            ins.withUnsafeBufferPointer { i in
                outs.withUnsafeBufferPointer { o in
                    ChainState.run(chain.state.pointee, inputs: i.baseAddress!, outputs: o.baseAddress!, frames: period,
                                   clock: cycle * period)
                }
            }
            for i in 0..<period {
                let step = abs(output[i] - last)
                last = output[i]
                if cycle <= watchUntil && cycle > 40 { worst = max(worst, step) }
                #expect(output[i].isFinite)
            }
            log += chain.drainChanges()
            cycle += 1
        }
        return Run(worstStepAtChange: worst, sineStep: sineStep, changes: done, log: log)
    }

    @Test func recallsGlideWithoutAClick() throws {
        let ramp = 30 * Self.rate / 1000
        let glided = try Self.measure(rampFrames: ramp)
        let abrupt = try Self.measure(rampFrames: 0)
        print("ChainRampTests: 997 Hz sine's largest step \(glided.sineStep); largest step at 100 changes: "
              + "ramped over \(ramp) frames \(glided.worstStepAtChange) (x\(glided.worstStepAtChange / glided.sineStep)), "
              + "at once \(abrupt.worstStepAtChange) (x\(abrupt.worstStepAtChange / abrupt.sineStep))")
        for part in ["gain", "cutoff", "bypass"] {
            let alone = try Self.measure(rampFrames: ramp, parts: [part])
            print("ChainRampTests: \(part) alone: x\(alone.worstStepAtChange / alone.sineStep)")
        }
        #expect(glided.changes == 100)
        #expect(glided.worstStepAtChange <= glided.sineStep * 1.5)
        #expect(abrupt.worstStepAtChange > glided.sineStep * 3)
        // Every ramped change is noted with its ramp (what a take's control log and a render need).
        let ramped = glided.log.filter { $0.rampFrames == ramp }
        #expect(ramped.count >= 150)
    }

    /// Recalls that come faster than the ramp (every 1 to 3 cycles, a ramp of 30 ms is about 6): each starts from
    /// where the values are, the newest target wins, and nothing clicks.
    @Test func recallsFasterThanTheRampDoNotClick() throws {
        let run = try Self.measure(rampFrames: 30 * Self.rate / 1000, gaps: (1, 3))
        print("ChainRampTests: 100 changes every 1 to 3 cycles, ramp 30 ms: largest step x\(run.worstStepAtChange / run.sineStep)")
        #expect(run.changes == 100)
        #expect(run.worstStepAtChange <= run.sineStep * 1.5)
    }

    /// A plugin that bypasses itself (fil4's lv2:enabled port) comes back when its bypass clears, at once or over a
    /// ramp (found by attack: after 06d4c79 the port stayed at 0 and the plugin stayed bypassed).
    @Test func aPluginsOwnBypassClearsAgain() throws {
        let fil4 = "http://gareus.org/oss/lv2/fil4#mono"
        guard PluginHost.shared.plugin(fil4) != nil else { return }
        let chain = PluginChain(specs: [PluginSpec(uri: fil4, name: "eq", controls: [.init(symbol: "gain", value: 12)])],
                                channels: 1, sampleRate: Self.rate, period: Self.period, label: "test")
        #expect(try chain.bypassesItself("eq"))
        let input = UnsafeMutablePointer<Float>.allocate(capacity: Self.period)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: Self.period)
        defer {
            input.deallocate()
            output.deallocate()
        }
        var ins = [input], outs = [output]
        var phase = 0.0
        // The peak of the last 50 of `cycles` (the plugin fades its own bypass in and out over some of them).
        func peak(cycles: Int) -> Float {
            var p: Float = 0
            for c in 0..<cycles {
                for i in 0..<Self.period {
                    input[i] = Float(0.1 * sin(phase))
                    phase += 2 * Double.pi * 997 / Double(Self.rate)
                }
                ins.withUnsafeBufferPointer { i in
                    outs.withUnsafeBufferPointer { o in
                        ChainState.run(chain.state.pointee, inputs: i.baseAddress!, outputs: o.baseAddress!, frames: Self.period)
                    }
                }
                if c >= cycles - 50 { for i in 0..<Self.period { p = max(p, abs(output[i])) } }
            }
            return p
        }
        let on = peak(cycles: 200)
        try chain.setBypass("eq", true)
        let bypassed = peak(cycles: 200)
        try chain.setBypass("eq", false)
        let back = peak(cycles: 200)
        try chain.setBypass("eq", true, rampFrames: 1440)
        _ = peak(cycles: 200)
        try chain.setBypass("eq", false, rampFrames: 1440)
        let backRamped = peak(cycles: 200)
        print("ChainRampTests: fil4 at +12 dB: peak \(on), bypassed \(bypassed), back \(back), back after a ramped bypass \(backRamped)")
        #expect(abs(on - 0.398) < 0.02 && abs(bypassed - 0.1) < 0.01)
        #expect(abs(back - on) < 0.01 && abs(backRamped - on) < 0.01)
    }

    /// A frequency glides logarithmically: half way through, 200 Hz to 5 kHz is near 1 kHz (the geometric mean), not
    /// near 2.6 kHz.
    @Test func aFrequencyGlidesInEqualRatios() throws {
        var g = Glide(from: 200, to: 5000, done: 0, length: 1000)
        let mid = g.advance(500, scale: ControlScale.logarithmic.rawValue)
        #expect(abs(mid - 1000) < 1)
        var l = Glide(from: 0, to: -20, done: 0, length: 1000)
        #expect(abs(l.advance(500, scale: ControlScale.linear.rawValue) + 10) < 1e-5)
        #expect(l.advance(600, scale: ControlScale.linear.rawValue) == -20)
        #expect(l.length == 0)
    }

    /// A hold keeps new values back until the cycle at its clock, then all start in that cycle; a stale one (the
    /// clock went back: a server that came back) is dropped.
    @Test func aHoldStartsEveryValueInOneCycle() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: Self.amp, name: "amp")], channels: 1, sampleRate: Self.rate,
                                period: 64, label: "test")
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        let out = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        defer {
            buffer.deallocate()
            out.deallocate()
        }
        buffer.initialize(repeating: 0.5, count: 64)
        var ins = [buffer], outs = [out]
        func cycle(_ clock: Int) {
            ins.withUnsafeBufferPointer { i in
                outs.withUnsafeBufferPointer { o in
                    ChainState.run(chain.state.pointee, inputs: i.baseAddress!, outputs: o.baseAddress!, frames: 64,
                                   clock: clock)
                }
            }
        }
        cycle(1000)
        _ = chain.drainChanges()
        chain.hold(until: 1128)
        try chain.set("amp", "gain", -20)
        chain.gainDB = -6
        cycle(1064)
        #expect(chain.drainChanges().isEmpty)
        #expect(abs(out[63] - 0.5) < 1e-6)
        cycle(1128)
        let changes = chain.drainChanges()
        #expect(changes.count == 2)
        #expect(changes.allSatisfy { $0.clock == 1128 })
        // Stale: far ahead of the clock.
        chain.hold(until: 4_000_000)
        try chain.set("amp", "gain", -10)
        cycle(1192)
        #expect(chain.drainChanges().count == 1)
    }
}
