import Commands
import Foundation
import Plugins
import Presets
import Render
import SoundFile
import Testing
import TestSupport

/// The offline renderer over files, without a server: latency taken out, tails, commands at their cycles, and every
/// bad input refused with words and nothing left behind. (Sample identity with live takes: RenderIdentityTests.)
@Suite(.serialized) struct RendererTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static let nodelay = "http://gareus.org/oss/lv2/nodelay"
    static var hasPlugins: Bool { PluginHost.shared.plugin(amp) != nil && PluginHost.shared.plugin(nodelay) != nil }

    /// A rack of `specs` over 2 channels, rendering `input` into `dir/NAME.wav`.
    static func job(_ specs: [PluginSpec], input: String, dir: URL, name: String = "out", period: Int = 256) -> RenderJob {
        let chain = RenderChain(kind: .rack, engine: "fx", plugins: specs, inputs: 2, outputs: 2)
        var j = RenderJob(number: 1, chain: chain, inputs: [RenderInput(path: input)],
                          output: dir.appendingPathComponent("\(name).wav").path,
                          report: dir.appendingPathComponent("\(name).json").path, format: AudioFormat(), period: period)
        j.tail = .seconds(0)
        return j
    }

    static func noise(_ dir: URL, frames: Int = 48000, name: String = "in.wav", scale: Float = 1) throws -> (String, [Float]) {
        let path = dir.appendingPathComponent(name).path
        let samples = Signals.noise(frames: frames, channels: 2).map { $0 * scale }
        try TestEnvironment.writeWAV(samples, channels: 2, path: path, sample: .float32)
        return (path, samples)
    }

    @Test(.enabled(if: hasPlugins)) func latencyIsTakenOutSoTheOutputLinesUpWithTheInput() throws {
        let dir = TestEnvironment.temporaryDirectory("render-latency")
        let (input, samples) = try Self.noise(dir)
        let j = Self.job([PluginSpec(uri: Self.nodelay, controls: [.init(symbol: "delay", value: 1000)])], input: input, dir: dir)
        let report = try Renderer.run(j)
        #expect(report.latency.frames == 1000)
        let out = try TestEnvironment.readAudio(j.output)
        #expect(out.samples == samples, "frame n of the output is the chain's answer to input frame n")
        #expect(report.frames == 48000 && report.inputFrames == 48000 && report.tailFrames == 0)
        #expect(report.sources.first?.sha256 == SHA256.file(input))
        #expect(report.outputSHA256 == SHA256.file(j.output))
    }

    @Test(.enabled(if: hasPlugins)) func aTailRingsOutToSilenceOrForAStatedTime() throws {
        let dir = TestEnvironment.temporaryDirectory("render-tail")
        let (input, samples) = try Self.noise(dir)
        // Delays without reporting latency: a tail of 2400 frames past the input's end.
        let delay = [PluginSpec(uri: Self.nodelay, controls: [.init(symbol: "delay", value: 2400),
                                                             .init(symbol: "report_latency", value: 0)])]
        var j = Self.job(delay, input: input, dir: dir, name: "silence")
        j.tail = .silence
        let r = try Renderer.run(j)
        #expect(r.frames == 48000 + 2400, "the file ends after its last sound")
        let out = try TestEnvironment.readAudio(j.output).samples
        #expect(Array(out[(2400 * 2)...]) == samples && out.prefix(4800).allSatisfy { $0 == 0 })
        var fixed = Self.job(delay, input: input, dir: dir, name: "fixed")
        fixed.tail = .seconds(0.5)
        #expect(try Renderer.run(fixed).frames == 48000 + 24000)
        var cut = Self.job(delay, input: input, dir: dir, name: "none")
        cut.tail = .seconds(0)
        #expect(try Renderer.run(cut).frames == 48000)
    }

    @Test(.enabled(if: hasPlugins)) func commandsTakeEffectAtTheCycleAtOrAfterTheirFrame() throws {
        let dir = TestEnvironment.temporaryDirectory("render-events")
        let (input, samples) = try Self.noise(dir)
        var j = Self.job([PluginSpec(uri: Self.amp, name: "amp", controls: [.init(symbol: "gain", value: 0)])],
                         input: input, dir: dir)
        j.cycleOffset = 100
        j.events = [AutomationEvent(at: 1000, address: "/tandem/plugin/set",
                                    args: [.text("fx"), .text("amp"), .text("gain"), .number(-6)], origin: "t:1"),
                    AutomationEvent(at: 2000, address: "/tandem/plugin/bypass",
                                    args: [.text("fx"), .text("amp"), .number(1)], origin: "t:2")]
        let r = try Renderer.run(j)
        // Cycles of 256 begin at input frames 156, 412, ... (the input's first frame is frame 100 of its cycle).
        #expect(r.events.map(\.appliedAt) == [1180, 2204], "\(r.events)")
        #expect(r.applied.map(\.frame) == [1180, 2204] && r.applied.first?.address == "/tandem/plugin/set")
        let out = try TestEnvironment.readAudio(j.output).samples
        #expect(Array(out[0..<(1180 * 2)]) == Array(samples[0..<(1180 * 2)]), "0 dB before its cycle")
        let g = out[1180 * 2 + 7] / samples[1180 * 2 + 7]
        #expect(abs(g - 0.501187) < 1e-4, "-6 dB from its cycle on: \(g)")
        #expect(Array(out[((2204 + 256) * 2)...]) == Array(samples[((2204 + 256) * 2)...]), "bypassed after the crossfade")
    }

    @Test(.enabled(if: hasPlugins)) func badInputIsRefusedInWordsAndNothingIsWritten() throws {
        let dir = TestEnvironment.temporaryDirectory("render-bad")
        let (input, _) = try Self.noise(dir)
        let amp = [PluginSpec(uri: Self.amp, name: "amp")]
        func refusal(_ j: RenderJob) -> RenderError? {
            do { _ = try Renderer.run(j) } catch { return error }
            return nil
        }
        func left(_ j: RenderJob) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter {
                $0.contains((j.output as NSString).lastPathComponent) || $0.hasSuffix(".json")
            }
        }
        var missing = Self.job(amp, input: dir.appendingPathComponent("nope.wav").path, dir: dir, name: "missing")
        missing.inputs = [RenderInput(path: dir.appendingPathComponent("nope.wav").path)]
        #expect(refusal(missing)?.message.contains("no such file") == true)
        let garbage = dir.appendingPathComponent("garbage.wav").path
        try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: URL(fileURLWithPath: garbage))
        let corrupt = refusal(Self.job(amp, input: garbage, dir: dir, name: "corrupt"))
        #expect(corrupt?.kind == .badInput && corrupt?.message.contains("cannot read '\(garbage)'") == true, "\(String(describing: corrupt))")
        // A copy cut short: its header promises more than it holds.
        let cutPath = dir.appendingPathComponent("half.wav").path
        let whole = try Data(contentsOf: URL(fileURLWithPath: input))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: cutPath))
        let cut = refusal(Self.job(amp, input: cutPath, dir: dir, name: "cut"))
        #expect(cut?.message.contains("is cut short") == true, "\(String(describing: cut))")
        let lowPath = dir.appendingPathComponent("low.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 8000, channels: 2), channels: 2, sampleRate: 8000, path: lowPath)
        var upsampled = Self.job(amp, input: lowPath, dir: dir, name: "rate")
        upsampled.sampleRate = 96000
        #expect(refusal(upsampled)?.message.contains("cannot be converted to the chain's 96000 Hz") == true)
        var past = Self.job(amp, input: input, dir: dir, name: "past")
        past.events = [AutomationEvent(at: 48000, address: "/tandem/plugin/bypass",
                                       args: [.text("fx"), .text("amp"), .number(1)], origin: "auto.txt:3")]
        #expect(refusal(past)?.message == "auto.txt:3: frame 48000 is past the end of the input (48000 frames)")
        var unknown = Self.job(amp, input: input, dir: dir, name: "unknown")
        unknown.events = [AutomationEvent(at: 10, address: "/tandem/plugin/set",
                                          args: [.text("fx"), .text("amp"), .text("volume"), .number(1)], origin: "auto.txt:1")]
        #expect(refusal(unknown)?.message.contains("auto.txt:1: ") == true
                && refusal(unknown)?.message.contains("has no control 'volume'") == true,
                "\(String(describing: refusal(unknown)))")
        var range = Self.job(amp, input: input, dir: dir, name: "range")
        range.events = [AutomationEvent(at: 10, address: "/tandem/plugin/set",
                                        args: [.text("fx"), .text("amp"), .text("gain"), .number(500)], origin: "a:1")]
        #expect(refusal(range)?.message.contains("is outside its range") == true)
        for j in [missing, upsampled, past, unknown, range] { #expect(left(j).isEmpty, "\(left(j))") }
        // An output that exists is never overwritten.
        let existing = Self.job(amp, input: input, dir: dir, name: "exists")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing.output))
        #expect(refusal(existing)?.message.contains("exists: a render never overwrites a file") == true)
        #expect(try String(contentsOfFile: existing.output, encoding: .utf8) == "keep me")
    }

    /// A disk that fills up: the job fails as a disk error, and neither the output nor its partial file is left.
    @Test(.enabled(if: hasPlugins && getuid() == 0)) func aFullDiskLeavesNothingThatLooksComplete() throws {
        let dir = TestEnvironment.temporaryDirectory("render-full")
        let (input, _) = try Self.noise(dir, frames: 48000 * 10)   // 3.7 MB of float stereo
        let mount = dir.appendingPathComponent("small").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 1)
        defer { TestEnvironment.unmount(mount) }
        var j = Self.job([PluginSpec(uri: Self.amp)], input: input, dir: URL(fileURLWithPath: mount))
        j.chain.inputs = 2
        var failure: RenderError?
        do { _ = try Renderer.run(j) } catch { failure = error }
        #expect(failure?.kind == .disk, "\(String(describing: failure))")
        #expect(failure?.message.contains("No space left on device") == true || failure?.message.contains("space") == true,
                "\(String(describing: failure))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount).isEmpty, "nothing left behind")
    }
}
