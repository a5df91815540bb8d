import Foundation
import Testing
import TestSupport

/// Plugins that read a local variable they have not written get zeros, not what the host's last call left on the
/// stack (issue 43, item 8). swh's chebstortion and harmonicGen compute their polynomial into a local array only every
/// fifth sample, across run() calls, so the first samples of a run() read whatever lay there: under Tandem 1e15 to
/// 1e28 came out of their DC filter after a silence, under jalv 0.51 by luck. `lv2host_run` zeroes the stack below
/// each run() first. The chain code is the live engines' (render runs `ChainState.run` as a rack does).
@Suite(.serialized) struct UninitializedLocalsTests {
    @Test(arguments: ["chebstortion", "harmonicGen"])
    func aPluginReadingUnwrittenLocalsGivesWhatJalvGives(plugin: String) throws {
        let uri = "http://plugin.org.uk/swh-plugins/\(plugin)"
        guard FileManager.default.fileExists(atPath: "/usr/lib/lv2/chebstortion-swh.lv2") else { return }
        let dir = TestEnvironment.temporaryDirectory("uninit-\(plugin)")
        // 1.5 s of silence (the filter's envelope decays to nothing), then 3 s of noise at ±0.5, as the plugin sweep
        // feeds a rack that waited for its input.
        let silence = [Float](repeating: 0, count: 72_000)
        let noise = Signals.noise(frames: 144_000, channels: 1, seed: 43)
        let input = dir.appendingPathComponent("in.wav").path
        try TestEnvironment.writeWAV(silence + noise, channels: 1, path: input)
        let output = dir.appendingPathComponent("out.wav").path
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "render", "--plugin", uri, "-o", output, input])
        #expect(r.code == 0, "\(r.output)")
        let out = try TestEnvironment.readAudio(output)
        let peak = out.samples.map { abs($0) }.max() ?? .infinity
        print("measured: \(plugin) after a silence peaks at \(peak) (jalv: 0.513)")
        // The plugin at its default (no distortion) passes the noise through its DC filter: about the input's peak.
        #expect(peak.isFinite && abs(peak - 0.513) < 0.05, "peak \(peak)")
    }
}
