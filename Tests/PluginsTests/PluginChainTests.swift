import Foundation
@testable import Plugins
import Presets
import Testing

/// The chain run cycle by cycle, without a server (the process body is a plain function over buffers).
@Suite(.serialized) struct PluginChainTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static let highpass = "http://plugin.org.uk/swh-plugins/highpass_iir"
    static let convolver = "http://gareus.org/oss/lv2/zeroconvolv#Mono"

    /// Runs `cycles` periods of `input` (planar, one array per channel) through the chain.
    static func run(_ chain: PluginChain, _ input: [[Float]], period: Int) -> [[Float]] {
        let channels = input.count, frames = input[0].count
        let ins = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: period) }
        let outs = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: period) }
        defer { (ins + outs).forEach { $0.deallocate() } }
        var result = [[Float]](repeating: [], count: channels)
        var at = 0
        while at + period <= frames {
            for c in 0..<channels { input[c].withUnsafeBufferPointer { ins[c].update(from: $0.baseAddress! + at, count: period) } }
            ins.withUnsafeBufferPointer { i in
                outs.withUnsafeBufferPointer { o in
                    ChainState.run(chain.state.pointee, inputs: i.baseAddress!, outputs: o.baseAddress!, frames: period)
                }
            }
            for c in 0..<channels { result[c] += UnsafeBufferPointer(start: outs[c], count: period) }
            at += period
        }
        return result
    }

    static func noise(_ frames: Int, seed: UInt64) -> [Float] {
        var x = seed
        return (0..<frames).map { _ in
            x = x &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int32(truncatingIfNeeded: x >> 32)) / Float(Int32.max) * 0.8
        }
    }

    @Test func amplifierAtMinusSixDecibelsScalesEverySample() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: Self.amp, controls: [.init(symbol: "gain", value: -6)])],
                                channels: 2, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        let input = [Self.noise(47872, seed: 1), Self.noise(47872, seed: 2)]
        let output = Self.run(chain, input, period: 256)
        let g = Float(pow(10, -6.0 / 20))
        var worst: Float = 0
        for c in 0..<2 { for i in 0..<input[c].count { worst = max(worst, abs(output[c][i] - input[c][i] * g)) } }
        #expect(worst <= 1e-7, "largest difference \(worst)")
        // A mono plugin on a stereo path runs one instance per channel.
        #expect(chain.status.first?.instances == 2)
    }

    /// lv2:sampleRate controls: the range is scaled by the rate; a default inside the unscaled range is a fraction of
    /// it, one outside was written in Hz and stays (clamped to the scaled range). swh's single_para (range 0-0.4,
    /// default 440) then starts at 440 Hz, as under jalv, and puts out finite samples (it gave NaN at 21,120,000 Hz).
    @Test func aSampleRateControlsDefaultWrittenInHzStaysInHz() throws {
        let port = { (lo: Float, hi: Float, d: Float) in
            PluginPortInfo(index: 0, symbol: "fc", name: "fc", kind: .control, isInput: true, defaultValue: d,
                           minimum: lo, maximum: hi, reportsLatency: false, isToggle: false, isInteger: false,
                           isOptional: false, scalesWithRate: true)
        }
        #expect(port(0, 0.4, 440).at(sampleRate: 48000).defaultValue == 440)
        #expect(port(0, 0.5, 0.1).at(sampleRate: 48000).defaultValue == 4800)
        #expect(port(0, 0.4, 1e6).at(sampleRate: 48000).defaultValue == 19200)
        #expect(port(0, 0.4, 440).at(sampleRate: 48000).maximum == 19200)
        let uri = "http://plugin.org.uk/swh-plugins/singlePara"
        guard PluginHost.shared.plugin(uri) != nil else { return }
        let chain = PluginChain(specs: [PluginSpec(uri: uri)], channels: 1, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(try chain.value("singlepara", "fc") == 440)
        let output = Self.run(chain, [Self.noise(48128, seed: 3)], period: 256)
        #expect(output[0].allSatisfy { $0.isFinite }, "finite output")
    }

    /// CV ports: blop's ADSR (CV in, CV out, no audio) runs; its gate is a side input of the chain (`adsr_drive`)
    /// and its envelope an extra output (`adsr_out`) that rises while the gate is high; the path goes past it.
    /// (Refused before as "0 → 0 channel(s) cannot follow a 0-channel path".)
    @Test func cvPortsAreSideInputsAndOutputs() throws {
        let uri = "http://drobilla.net/plugins/blop/adsr"
        guard PluginHost.shared.plugin(uri) != nil else { return }
        let chain = PluginChain(specs: [PluginSpec(uri: uri)], channels: 1, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(chain.sideInputs.map(\.name) == ["adsr_drive"] && chain.sideOutputs.map(\.name) == ["adsr_out"])
        let n = 256
        let input = UnsafeMutablePointer<Float>.allocate(capacity: n), output = UnsafeMutablePointer<Float>.allocate(capacity: n)
        let gate = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { [input, output, gate].forEach { $0.deallocate() } }
        for i in 0..<n { input[i] = Float(i) / Float(n) }
        gate.initialize(repeating: 0, count: n)
        var envelope: [Float] = []
        for cycle in 0..<200 {
            if cycle == 20 { gate.update(repeating: 1, count: n) }
            withUnsafePointer(to: input) { i in
                withUnsafePointer(to: output) { o in
                    withUnsafePointer(to: gate) { g in
                        ChainState.run(chain.state.pointee, inputs: i, outputs: o, frames: n, sides: g)
                    }
                }
            }
            envelope += UnsafeBufferPointer(start: chain.state.pointee.sideOutputBuffers[0], count: n)
            #expect((0..<n).allSatisfy { output[$0] == input[$0] }, "the path goes past a CV module unchanged")
        }
        #expect(envelope.allSatisfy { $0.isFinite } && (envelope.prefix(20 * n).max() ?? 1) < 0.01
                && (envelope.max() ?? 0) > 0.5, "silent with the gate low, rising once it is high")
    }

    @Test func aChangedControlAppliesFromTheNextCycle() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: Self.highpass), PluginSpec(uri: Self.amp)],
                                channels: 1, sampleRate: 48000, period: 64, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(try chain.value("amp", "gain") == 0)
        let input = [[Float](repeating: 0.5, count: 64)]
        let before = Self.run(chain, input, period: 64)
        try chain.set("amp", "gain", -20)
        let after = Self.run(chain, input, period: 64)
        #expect(abs(after[0][0]) < abs(before[0][63]) * 0.2 + 1e-6)
        #expect(chain.dirty)
        #expect(throws: PluginError.self) { try chain.set("amp", "gian", 1) }
        #expect(throws: PluginError.self) { try chain.set("nope", "gain", 1) }
    }

    @Test func missingPluginAndBadChannelsAreNamedAndLeftOut() {
        let chain = PluginChain(specs: [PluginSpec(uri: "http://example.org/no-such-plugin"),
                                        PluginSpec(uri: "http://gareus.org/oss/lv2/zeroconvolv#Stereo"),
                                        PluginSpec(uri: Self.amp)],
                                channels: 3, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.specs.map(\.name) == ["amp"])
        #expect(chain.problems.count == 2)
        #expect(chain.problems.first { $0.code == .notInstalled }?.description.contains("no-such-plugin") == true)
        #expect(chain.problems.first { $0.code == .channels }?.description.contains("3-channel") == true)
    }

    @Test func workerPluginLoadsItsPresetAndConvolves() throws {
        // zeroconvolv requires worker, options, bounded block length and URID map; its "No-OP" preset loads a
        // delta impulse response through the worker.
        let chain = PluginChain(specs: [PluginSpec(uri: Self.convolver,
                                                   preset: "http://gareus.org/oss/lv2/zeroconvolv/pset#noopMono")],
                                channels: 1, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        let input = [Self.noise(47872, seed: 3)]
        var output: [[Float]] = []
        for _ in 0..<50 {
            output = Self.run(chain, input, period: 256)
            if output[0].suffix(1000).contains(where: { $0 != 0 }) { break }
            usleep(20_000)
        }
        #expect((chain.status.first?.workerRequests ?? 0) > 0)
        // The convolver reports its latency (a partitioned convolution delays by one partition); the output is the
        // input delayed by exactly that.
        let latency = chain.latency
        #expect(latency > 0 && latency < 8192)
        var worst: Float = 0
        for i in 24000..<47872 { worst = max(worst, abs(output[0][i] - input[0][i - latency])) }
        #expect(worst < 1e-5, "largest difference from the input through a delta IR: \(worst)")
    }
}

extension PluginChainTests {
    /// Saved state (the impulse response the worker loaded, and the control values) comes back in a new chain.
    @Test func savedStateComesBackInANewChain() throws {
        let dir = NSTemporaryDirectory() + "tandem-chainstate-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = [Self.noise(256 * 100, seed: 4)]
        func converged(_ chain: PluginChain) -> [[Float]] {
            var out: [[Float]] = []
            for _ in 0..<100 {
                out = Self.run(chain, input, period: 256)
                if out[0].suffix(1000).contains(where: { $0 != 0 }) { break }
                usleep(20_000)
            }
            return out
        }
        let first = PluginChain(specs: [PluginSpec(uri: Self.convolver, name: "room",
                                                   preset: "http://gareus.org/oss/lv2/zeroconvolv/pset#noopMono"),
                                        PluginSpec(uri: Self.amp, controls: [.init(symbol: "gain", value: -6)])],
                                channels: 1, sampleRate: 48000, period: 256, label: "test")
        _ = converged(first)
        try first.set("amp", "gain", -12)
        try first.save(to: dir)
        // Saving never touches the files the state refers to (lilv can replace them with links if misused).
        #expect(FileManager.default.fileExists(atPath: "/usr/lib/lv2/zeroconvo.lv2/ir/delta-48k.wav"))
        let text = try String(contentsOfFile: PluginChain.stateFile(directory: dir, plugin: "room"), encoding: .utf8)
        #expect(text.contains("delta-48k"), "\(text)")
        let second = PluginChain(specs: [PluginSpec(uri: Self.convolver, name: "room"), PluginSpec(uri: Self.amp)],
                                 channels: 1, sampleRate: 48000, period: 256, label: "test", savedState: dir)
        #expect(second.problems.isEmpty, "\(second.problems)")
        #expect(try second.value("amp", "gain") == -12)
        let out = converged(second)
        let sounding = out[0].suffix(1000).contains { $0 != 0 }
        #expect(sounding, "the impulse response came back")
    }
}
