import Foundation
import Plugins
import Presets
import Testing

/// Channel shapes, side inputs, bypass and the dry/wet mix, run cycle by cycle without a server and checked sample
/// by sample against real Debian plugins (swh-lv2, x42-plugins).
@Suite(.serialized) struct ChainShapeTests {
    static let swh = "http://plugin.org.uk/swh-plugins/"
    static let split = swh + "split", gverb = swh + "gverb", ringmod = swh + "ringmod_2i1o", sc2 = swh + "sc2"
    static let amp = swh + "amp", xfade = swh + "xfade", nodelay = "http://gareus.org/oss/lv2/nodelay"
    static let installed = FileManager.default.fileExists(atPath: "/usr/lib/lv2/split-swh.lv2")
        && FileManager.default.fileExists(atPath: "/usr/lib/lv2/sc2-swh.lv2")
        && FileManager.default.fileExists(atPath: "/usr/lib/lv2/nodelay.lv2")

    /// Runs `input` (planar) through the chain in periods of `period`; `sides` feeds its side inputs; `before`
    /// runs before each cycle with the cycle's index.
    static func run(_ chain: PluginChain, _ input: [[Float]], period: Int, sides: [[Float]]? = nil,
                    before: (Int) -> Void = { _ in }) -> [[Float]] {
        let frames = input[0].count
        let ins = (0..<chain.inputChannels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: period) }
        let outs = (0..<chain.outputChannels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: period) }
        let side = (0..<(sides?.count ?? 0)).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: period) }
        defer { (ins + outs + side).forEach { $0.deallocate() } }
        var result = [[Float]](repeating: [], count: chain.outputChannels)
        var at = 0, cycle = 0
        while at + period <= frames {
            before(cycle)
            for c in 0..<ins.count { input[c].withUnsafeBufferPointer { ins[c].update(from: $0.baseAddress! + at, count: period) } }
            for c in 0..<side.count { sides![c].withUnsafeBufferPointer { side[c].update(from: $0.baseAddress! + at, count: period) } }
            ins.withUnsafeBufferPointer { i in
                outs.withUnsafeBufferPointer { o in
                    side.withUnsafeBufferPointer { s in
                        ChainState.run(chain.state.pointee, inputs: i.baseAddress!, outputs: o.baseAddress!,
                                       frames: period, sides: sides == nil ? nil : s.baseAddress!)
                    }
                }
            }
            for c in 0..<outs.count { result[c] += UnsafeBufferPointer(start: outs[c], count: period) }
            at += period
            cycle += 1
        }
        return result
    }

    static func noise(_ frames: Int, seed: UInt64, peak: Float = 0.8) -> [Float] {
        var x = seed
        return (0..<frames).map { _ in
            x = x &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int32(truncatingIfNeeded: x >> 32)) / Float(Int32.max) * peak
        }
    }

    static func rms(_ x: ArraySlice<Float>) -> Float {
        (x.reduce(Float(0)) { $0 + $1 * $1 } / Float(max(1, x.count))).squareRoot()
    }

    @Test(.enabled(if: installed))
    func monoToStereoWidensThePath() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: Self.split)], inputs: 1, outputs: nil, sampleRate: 48000,
                                period: 128, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(chain.outputChannels == 2)
        let input = [Self.noise(128 * 100, seed: 3)]
        let out = Self.run(chain, input, period: 128)
        #expect(out[0] == input[0] && out[1] == input[0], "swh split copies its input to both sides")

        // A reverb: one input, two different outputs, both carrying the signal.
        let reverb = PluginChain(specs: [PluginSpec(uri: Self.gverb)], inputs: 1, outputs: nil, sampleRate: 48000,
                                 period: 128, label: "test")
        #expect(reverb.problems.isEmpty && reverb.outputChannels == 2, "\(reverb.problems)")
        let wet = Self.run(reverb, input, period: 128)
        #expect(Self.rms(wet[0][6400...]) > 0.01 && Self.rms(wet[1][6400...]) > 0.01)
        #expect(wet[0] != wet[1])
        print("measured: gverb mono→stereo, rms L \(Self.rms(wet[0][6400...])) R \(Self.rms(wet[1][6400...]))")
    }

    /// Stereo → mono (a ring modulator taking both channels), then mono → stereo again, on a 2-channel engine path.
    @Test(.enabled(if: installed))
    func stereoToMonoAndBackOnAStereoEnginePath() throws {
        let spec = PluginSpec(uri: Self.ringmod, controls: [.init(symbol: "depth", value: 2)])
        let mono = PluginChain(specs: [spec], inputs: 2, outputs: nil, sampleRate: 48000, period: 64, label: "test")
        #expect(mono.problems.isEmpty && mono.outputChannels == 1, "\(mono.problems)")
        let input = [Self.noise(64 * 50, seed: 1), Self.noise(64 * 50, seed: 2)]
        let one = Self.run(mono, input, period: 64)[0]
        // Depth 2 is ring modulation: the product of the two channels.
        var worst: Float = 0
        for i in 0..<one.count { worst = max(worst, abs(one[i] - input[0][i] * input[1][i])) }
        #expect(worst < 1e-6, "largest |out - L*R| = \(worst)")

        let chain = PluginChain(specs: [spec, PluginSpec(uri: Self.split)], channels: 2, sampleRate: 48000,
                                period: 64, label: "player")
        #expect(chain.problems.isEmpty && chain.outputChannels == 2, "\(chain.problems)")
        #expect(chain.status.map(\.channelsOut) == [1, 2])
        let out = Self.run(chain, input, period: 64)
        #expect(out[0] == one && out[1] == one)
    }

    /// An engine whose ports fix the channel count: a plugin that would change it is left out with a message that
    /// names it, its ports and both counts; so is one that fits no way.
    @Test(.enabled(if: installed))
    func whatCannotBeMappedIsRefusedByName() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: Self.gverb), PluginSpec(uri: Self.amp)], channels: 1,
                                sampleRate: 48000, period: 64, label: "recorder")
        #expect(chain.specs.map(\.name) == ["amp"])
        let gverb = try #require(chain.problems.first { $0.plugin == "gverb" })
        #expect(gverb.code == .channels && gverb.description.contains("turns 1 channel(s) into 2")
                && gverb.description.contains("recorder chain"), "\(gverb)")
        let xfade = PluginChain(specs: [PluginSpec(uri: Self.xfade)], channels: 2, sampleRate: 48000, period: 64,
                                label: "player")
        let e = try #require(xfade.problems.first)
        #expect(xfade.isEmpty && e.code == .channels && e.description.contains("2-channel path")
                && e.description.contains("4 → 2"), "\(e)")
        print("refused: \(gverb.description)\nrefused: \(e.description)")
        // The preset check says the same without building anything.
        let found = PluginHost.shared.check(chain: [PluginSpec(uri: Self.gverb)], channels: 2)
        let first = found[0].first?.error
        #expect(first?.code == .channels)
        #expect(first?.description.contains("2-channel path") == true)
        let fits = PluginHost.shared.check(chain: [PluginSpec(uri: Self.ringmod), PluginSpec(uri: Self.gverb)], channels: 2)
        #expect(fits.allSatisfy { $0.isEmpty }, "\(fits)")
    }

    /// swh sc2: the side input, not the main input, drives the gain reduction; unconnected it is silent.
    @Test(.enabled(if: installed))
    func sidechainCompressorFollowsItsSideInput() throws {
        let spec = PluginSpec(uri: Self.sc2, name: "comp", controls: [
            .init(symbol: "threshold", value: -30), .init(symbol: "ratio", value: 10), .init(symbol: "attack", value: 2),
            .init(symbol: "release", value: 20)])
        let chain = PluginChain(specs: [spec], channels: 1, sampleRate: 48000, period: 256, label: "rack")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(chain.sideInputs.map(\.name) == ["comp_sidechain"])
        let frames = 256 * 188
        let main = [Self.noise(frames, seed: 9, peak: 0.1)]
        // Side: loud in the first half, silent in the second.
        let side = [Self.noise(frames, seed: 10, peak: 0.9).enumerated().map { $0.offset < frames / 2 ? $0.element : 0 }]
        let out = Self.run(chain, main, period: 256, sides: side)[0]
        let ratio = { (r: Range<Int>) in Self.rms(out[r]) / Self.rms(main[0][r]) }
        let loud = ratio(12000..<24000), quiet = ratio(36000..<48000)
        #expect(loud < 0.3 && quiet > 0.9, "gain with a loud side input \(loud), with a silent one \(quiet)")
        // Unconnected (nil): silent side input, no reduction although the main input is the same.
        let chain2 = PluginChain(specs: [spec], channels: 1, sampleRate: 48000, period: 256, label: "recorder")
        let free = Self.run(chain2, main, period: 256)[0]
        let unfed = Self.rms(free[12000..<24000]) / Self.rms(main[0][12000..<24000])
        #expect(unfed > 0.9, "\(unfed)")
        print("measured: sc2 gain with loud side \(loud), silent side \(quiet), unconnected \(unfed)")
    }

    /// Bypassing a plugin with 100 frames of latency mid-stream: the output stays the input delayed by 100 frames
    /// through the switch (no shift), and the largest step at the switch is no larger than the signal's own.
    @Test(.enabled(if: installed))
    func bypassOfALatentPluginNeitherShiftsNorClicks() throws {
        let delay = 100, period = 256
        let chain = PluginChain(specs: [PluginSpec(uri: Self.nodelay, name: "late", controls: [
            .init(symbol: "delay", value: Double(delay)), .init(symbol: "report_latency", value: 1)])],
                                channels: 1, sampleRate: 48000, period: period, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(try chain.bypassesItself("late") == false)
        let frames = period * 400
        let input = [Self.noise(frames, seed: 4)]
        let switchCycle = 200
        let out = Self.run(chain, input, period: period) { cycle in
            if cycle == switchCycle { try? chain.setBypass("late", true) }
        }[0]
        #expect(try chain.isBypassed("late"))
        #expect(chain.latency == delay)
        var worst: Float = 0
        for i in (switchCycle - 50) * period..<frames { worst = max(worst, abs(out[i] - input[0][i - delay])) }
        #expect(worst < 1e-6, "largest |out - input delayed by \(delay)| from before to after the switch: \(worst)")
        var ownStep: Float = 0, stepAtSwitch: Float = 0
        for i in 1..<frames { ownStep = max(ownStep, abs(input[0][i] - input[0][i - 1])) }
        for i in switchCycle * period - 1..<(switchCycle + 1) * period + 1 { stepAtSwitch = max(stepAtSwitch, abs(out[i] - out[i - 1])) }
        #expect(stepAtSwitch <= ownStep)
        print("measured: bypass of nodelay (\(delay) frames): largest deviation \(worst), step at switch \(stepAtSwitch) (signal's own largest \(ownStep))")
    }

    /// The chain's dry/wet mix and output gain: after the one-cycle ramp, out = (wet * mix + dry * (1 - mix)) * gain.
    @Test(.enabled(if: installed))
    func mixAndGainFollowTheirFormula() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: Self.amp, controls: [.init(symbol: "gain", value: -6)])],
                                channels: 2, sampleRate: 48000, period: 64, label: "test", mix: 0.25, gainDB: -3)
        #expect(chain.problems.isEmpty && chain.mix == 0.25 && chain.gainDB == -3)
        let input = [Self.noise(64 * 20, seed: 5), Self.noise(64 * 20, seed: 6)]
        let out = Self.run(chain, input, period: 64)
        let a = Float(pow(10, -6.0 / 20)), g = Float(pow(10, -3.0 / 20))
        var worst: Float = 0
        for c in 0..<2 {
            for i in 64..<input[c].count {
                worst = max(worst, abs(out[c][i] - (input[c][i] * a * 0.25 + input[c][i] * 0.75) * g))
            }
        }
        #expect(worst < 1e-6, "\(worst)")
        chain.mix = 7
        chain.gainDB = -1000
        #expect(chain.mix == 1 && chain.gainDB == PluginChain.gainRange.lowerBound)
    }
}

extension ChainShapeTests {
    /// Bypass, mix and gain are saved beside the plugins' state and come back in a new chain (the session's
    /// restore, and a rebuild after a period change).
    @Test(.enabled(if: installed))
    func bypassMixAndGainAreSavedAndRestored() throws {
        let specs = [PluginSpec(uri: Self.amp, name: "a"), PluginSpec(uri: Self.amp, name: "b", bypass: true)]
        let chain = PluginChain(specs: specs, channels: 1, sampleRate: 48000, period: 64, label: "test")
        #expect(try chain.isBypassed("b") && !chain.isBypassed("a"))
        try chain.setBypass("a", true)
        try chain.setBypass("b", false)
        chain.mix = 0.5
        chain.gainDB = -2
        #expect(chain.currentSpecs.map(\.bypass) == [true, false])
        let dir = NSTemporaryDirectory() + "tandem-chainsettings-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try chain.save(to: dir)
        let back = PluginChain(specs: specs, channels: 1, sampleRate: 48000, period: 64, label: "test", savedState: dir)
        #expect(try back.isBypassed("a") && !back.isBypassed("b"))
        #expect(back.mix == 0.5 && back.gainDB == -2)
        // A bypassed amplifier at +6 dB passes its input untouched from the first cycle.
        let loud = PluginChain(specs: [PluginSpec(uri: Self.amp, controls: [.init(symbol: "gain", value: 6)], bypass: true)],
                               channels: 1, sampleRate: 48000, period: 64, label: "test")
        let input = [Self.noise(64 * 4, seed: 8)]
        #expect(Self.run(loud, input, period: 64)[0] == input[0])
    }
}

extension ChainShapeTests {
    /// A plugin with an lv2:enabled port (x42 fil4) bypasses itself through it: its gain of -12 dB applies before the
    /// bypass and not after; the host's crossfade stays out of it.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/lv2/fil4.lv2")))
    func aPluginWithAnEnabledPortBypassesItself() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: "http://gareus.org/oss/lv2/fil4#mono", name: "eq",
                                                   controls: [.init(symbol: "gain", value: -12)])],
                                channels: 1, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(try chain.bypassesItself("eq"))
        let frames = 256 * 400
        let input = [Self.noise(frames, seed: 12, peak: 0.5)]
        let out = Self.run(chain, input, period: 256) { cycle in
            if cycle == 200 { try? chain.setBypass("eq", true) }
        }[0]
        let before = Self.rms(out[25600..<51200]) / Self.rms(input[0][25600..<51200])
        let after = Self.rms(out[76800..<102400]) / Self.rms(input[0][76800..<102400])
        #expect(before < 0.3 && after > 0.98, "gain before the bypass \(before), after \(after)")
        #expect(try chain.value("eq", "enable") == 1, "the user's value stays; the cycle writes 0 while bypassed")
        print("measured: fil4 -12 dB, gain before bypass \(before), after \(after)")
    }
}

extension ChainShapeTests {
    /// x42 zeroconvolv#MonoToStereo (worker, LV2 preset, reported latency) on a mono path: two outputs, each the
    /// input delayed by the latency it reports (its No-OP preset loads a delta impulse response on both sides).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/lv2/zeroconvo.lv2")))
    func convolverMonoToStereo() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: "http://gareus.org/oss/lv2/zeroconvolv#MonoToStereo",
                                                   preset: "http://gareus.org/oss/lv2/zeroconvolv/pset#noopMonoToStereo")],
                                inputs: 1, outputs: nil, sampleRate: 48000, period: 256, label: "rack")
        #expect(chain.problems.isEmpty && chain.outputChannels == 2, "\(chain.problems)")
        let input = [Self.noise(256 * 187, seed: 21)]
        var output: [[Float]] = []
        for _ in 0..<50 {
            output = Self.run(chain, input, period: 256)
            if output[1].suffix(1000).contains(where: { $0 != 0 }) { break }
            usleep(20_000)
        }
        let latency = chain.latency
        #expect(latency > 0 && latency < 8192)
        var worst: Float = 0
        for c in 0..<2 { for i in 24000..<input[0].count { worst = max(worst, abs(output[c][i] - input[0][i - latency])) } }
        #expect(worst < 1e-5, "largest difference from the input delayed by \(latency): \(worst)")
        print("measured: zeroconvolv MonoToStereo, latency \(latency), largest difference on both sides \(worst)")
    }
}

extension ChainShapeTests {
    /// The dry line of the mix when the path changes width: widened (swh split, mono to stereo, then x42 nodelay
    /// with 100 frames of latency) each output's dry signal is the one input, delayed by the chain's latency, so the
    /// mix stays the input delayed by 100 frames on both sides, also after the line wraps (57,600 frames through a
    /// 32,768-frame line); narrowed (swh ringmod, two inputs to one) it is the inputs' mean: out = wet * mix + mean *
    /// (1 - mix), the wet taken from the same chain at mix 1.
    @Test(.enabled(if: installed))
    func theMixesDryLineFollowsTheChannelShape() throws {
        // 96 frames a period: 32,768 is no multiple of it, so one cycle's line is written in two pieces.
        let delay = 100, period = 96, frames = 96 * 600
        let wide = PluginChain(specs: [PluginSpec(uri: Self.split, name: "split"),
                                       PluginSpec(uri: Self.nodelay, name: "late", controls: [
                                        .init(symbol: "delay", value: Double(delay)),
                                        .init(symbol: "report_latency", value: 1)])],
                               inputs: 1, outputs: nil, sampleRate: 48000, period: period, label: "test", mix: 0.5)
        #expect(wide.problems.isEmpty && wide.outputChannels == 2, "\(wide.problems)")
        guard wide.outputChannels == 2 else { return }
        let input = [Self.noise(frames, seed: 11)]
        let out = Self.run(wide, input, period: period)
        var worst: Float = 0
        for c in 0..<2 {
            for i in 2 * period..<frames { worst = max(worst, abs(out[c][i] - input[0][i - delay])) }
        }
        #expect(worst < 1e-6, "widened: largest deviation \(worst)")

        let specs = [PluginSpec(uri: Self.ringmod, name: "ring")]
        let wet = PluginChain(specs: specs, inputs: 2, outputs: nil, sampleRate: 48000, period: period, label: "test")
        let mixed = PluginChain(specs: specs, inputs: 2, outputs: nil, sampleRate: 48000, period: period,
                                label: "test", mix: 0.25)
        #expect(wet.problems.isEmpty && wet.outputChannels == 1 && mixed.outputChannels == 1, "\(wet.problems)")
        guard wet.outputChannels == 1, mixed.outputChannels == 1 else { return }
        let pair = [Self.noise(frames, seed: 12), Self.noise(frames, seed: 13)]
        let a = Self.run(wet, pair, period: period)[0], b = Self.run(mixed, pair, period: period)[0]
        var narrow: Float = 0
        for i in period..<frames {
            narrow = max(narrow, abs(b[i] - (a[i] * 0.25 + (pair[0][i] + pair[1][i]) / 2 * 0.75)))
        }
        #expect(narrow < 1e-6, "narrowed: largest deviation \(narrow)")
    }
}
