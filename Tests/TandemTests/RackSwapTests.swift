import Takes
import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// Live changes of a running rack's plugin list: built off the process thread, swapped at a cycle boundary and
/// crossfaded over that one cycle.
@Suite(.serialized) struct RackSwapTests {
    /// A sine of `amplitude` at `hz`, one second long (a whole number of cycles, so it loops without a seam).
    static func sine(hz: Double, amplitude: Float) -> [Float] {
        (0..<48000).map { amplitude * Float(sin(2 * Double.pi * hz * Double($0) / 48000)) }
    }

    static func preset(_ dir: URL, gains: [Double]) -> String {
        var text = """
            [session]
            name = "swap"
            directory = "\(dir.path)"
            save_plugins = false
            restore_plugins = false
            [recorder]
            channels = 1
            [[rack]]
            name = "lvl"
            isolate = false
            inputs = ["in_1"]
            outputs = ["out_1"]

            """
        for (i, g) in gains.enumerated() {
            text += """
                [[rack.plugins]]
                uri = "\(RackTests.amp)"
                name = "amp\(i + 1)"
                controls = { gain = \(g) }

                """
        }
        return text + """
            [[connect]]
            from = "src:out_1"
            to = "lvl:in_1"
            [[connect]]
            from = "lvl:out_1"
            to = "tandem-rec:in_1"
            """
    }

    /// A steady 100 Hz sine through a rack running an amplifier at -6 dB; the preset is re-applied with two amplifiers
    /// (-2 and -1 dB) instead. The recording of the rack's output has no gap (no run of zeros) and no sample step at
    /// the switch larger than the louder sine's own (a hard switch at a random phase jumps by up to 0.1, twenty times
    /// the sine's largest step of 0.0046).
    @Test(.enabled(if: RackTests.hasSWH))
    func aChangedPluginListIsSwappedWithoutAGapOrAClick() throws {
        let server = try TestEnvironment.server("rackswap")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackswap")
        let wav = dir.appendingPathComponent("sine.wav").path
        try TestEnvironment.writeWAV(Self.sine(hz: 100, amplitude: 0.5), channels: 1, path: wav, sample: .float32)
        let src = try TandemProcess(["play", "--client", "src", "--loop", "item", wav], server: server,
                                    log: dir.appendingPathComponent("src.log").path)
        defer { src.process.signal(SIGTERM); _ = src.process.wait(timeout: 10) }
        let path = dir.appendingPathComponent("swap.toml").path
        try Self.preset(dir, gains: [-6]).write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("connected lvl:out_1 -> tandem-rec:in_1"), "\(run.output)")
        #expect(run.waitFor("connected src:out_1 -> lvl:in_1"), "\(run.output)")
        usleep(1_500_000)
        try Self.preset(dir, gains: [-2, -1]).write(toFile: path, atomically: true, encoding: .utf8)
        run.process.signal(SIGHUP)
        #expect(run.waitFor("reloaded \(path)"), "\(run.output)")
        #expect(run.output.contains("rack lvl plugins"), "the plugin list was changed in place: \(run.output)")
        usleep(1_500_000)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let report = try TakeReport.read(from: try #require(TakeCheck.reports(in: dir.path).first))
        let file = try #require(report.chunks.first?.files.first)
        let x = try TestEnvironment.readAudio(file.hasPrefix("/") ? file : dir.appendingPathComponent(file).path).samples
        let onset = try #require(x.firstIndex { abs($0) > 0.01 }, "the sine reached the recorder")
        let end = x.count - 4800
        try #require(end - onset > 96000, "at least 2 s recorded after the onset (\(end - onset) frames)")
        // The swap happened: -6 dB (0.25) before it, -3 dB (0.354) after.
        let before = x[onset..<(onset + 24000)].map(abs).max() ?? 0
        let after = x[(end - 24000)..<end].map(abs).max() ?? 0
        #expect(abs(before - 0.5 * 0.501) < 0.005 && abs(after - 0.5 * 0.708) < 0.005, "levels \(before) then \(after)")
        // No gap: no run of 4 or more exact zeros (the sine never stays at 0 for two samples).
        var run0 = 0, longest = 0
        for v in x[onset..<end] {
            run0 = v == 0 ? run0 + 1 : 0
            longest = max(longest, run0)
        }
        #expect(longest < 4, "a run of \(longest) zeros in the rack's output")
        // No click: the largest step anywhere is at most the louder sine's own largest step (5 % for rounding).
        var own: Float = 0, worst: Float = 0, at = 0
        for i in (end - 24000)..<(end - 1) { own = max(own, abs(x[i + 1] - x[i])) }
        for i in onset..<(end - 1) where abs(x[i + 1] - x[i]) > worst { worst = abs(x[i + 1] - x[i]); at = i }
        try? "swap: largest step \(worst) at frame \(at), the sine's own \(own)\n"
            .write(toFile: "/tmp/tandem-rack-swap.txt", atomically: true, encoding: .utf8)
        #expect(own > 0.004 && worst <= own * 1.05, "largest step \(worst) at frame \(at); the sine's own \(own)")
    }
}
