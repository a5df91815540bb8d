import Takes
import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// A rack's side input ports follow its chain when a plugin with a side input is left out.
@Suite(.serialized) struct RackSideInputTests {
    static let ghost = "http://tandem.test/lv2/ghost"
    /// A bundle that describes `ghost` (a mono plugin with a side-chain input) without a binary: listed, never loaded.
    static let ghostDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/lv2-ghost").path

    static func preset(_ dir: URL, port: Int, ghost: Bool) -> String {
        """
        [session]
        name = "sides"
        directory = "\(dir.path)"
        control_port = \(port)
        on_plugin_error = "bypass"
        save_plugins = false
        restore_plugins = false
        [recorder]
        channels = 3
        [[rack]]
        name = "duck"
        isolate = false
        inputs = ["in_1"]
        outputs = ["out_1"]
        \(ghost ? "[[rack.plugins]]\nuri = \"\(Self.ghost)\"\nname = \"g\"\n" : "")
        [[rack.plugins]]
        uri = "http://plugin.org.uk/swh-plugins/sc2"
        name = "b"
        controls = { threshold = -30, ratio = 10, attack = 2, release = 2, knee = 1 }
        [[connect]]
        from = "main:out_1"
        to = "/(duck:in_1|tandem-rec:in_1)/"
        mode = "all"
        [[connect]]
        from = "side:out_1"
        to = "/(duck:b_sidechain|tandem-rec:in_3)/"
        mode = "all"
        [[connect]]
        from = "duck:out_1"
        to = "tandem-rec:in_2"
        """
    }

    /// A rack runs swh sc2 ("b", its side chain on `duck:b_sidechain` by a rule); the preset is re-applied with a
    /// side-chain plugin before it that cannot be loaded ("g", left out). The rack's ports are its chain's: no
    /// `duck:g_sidechain` is left behind, `duck:b_sidechain` is connected by the rule again, and sc2's gain follows
    /// the signal on that port (unity while it is silent, ducked while it is loud). Before, the ports were named from
    /// the preset: `g_sidechain` stayed, and sc2 read it (silent) instead of its own.
    @Test(.enabled(if: RackTests.hasSWH))
    func sideInputPortsFollowTheChainWhenAPluginIsLeftOut() throws {
        let server = try TestEnvironment.server("racksides")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("racksides")
        let main = dir.appendingPathComponent("main.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1).map { $0 * 0.1 }, channels: 1, path: main,
                                     sample: .float32)
        let side = dir.appendingPathComponent("side.wav").path
        try TestEnvironment.writeWAV([Float](repeating: 0, count: 48000) + Signals.noise(frames: 48000, channels: 1, seed: 7).map { $0 * 0.9 },
                                     channels: 1, path: side, sample: .float32)
        let players = try [("main", main), ("side", side)].map { name, file in
            try TandemProcess(["play", "--client", name, "--loop", "item", file], server: server,
                              log: dir.appendingPathComponent("\(name).log").path)
        }
        defer { for p in players { p.process.signal(SIGTERM); _ = p.process.wait(timeout: 10) } }
        let port = 38000 + Int(getpid() % 20000)
        let path = dir.appendingPathComponent("sides.toml").path
        try Self.preset(dir, port: port, ghost: false).write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", path], server: server,
                                    extraEnvironment: ["LV2_PATH": "\(Self.ghostDir):/usr/lib/lv2"],
                                    log: dir.appendingPathComponent("run.log").path)
        defer { run.process.signal(SIGTERM); _ = run.process.wait(timeout: 15) }
        #expect(run.waitFor("connected side:out_1 -> duck:b_sidechain"), "\(run.output)")
        try Self.preset(dir, port: port, ghost: true).write(toFile: path, atomically: true, encoding: .utf8)
        run.process.signal(SIGHUP)
        #expect(run.waitFor("reloaded \(path)"), "\(run.output)")
        #expect(run.waitFor("connected side:out_1 -> duck:b_sidechain", occurrence: 2), "\(run.output)")
        #expect(run.waitFor("connected duck:out_1 -> tandem-rec:in_2", occurrence: 2), "\(run.output)")
        let ports = try TestEnvironment.run(["jack_lsp", "-s", server.name])
        let duck = ports.output.split(separator: "\n").filter { $0.hasPrefix("duck:") }.map(String.init).sorted()
        #expect(duck == ["duck:b_sidechain", "duck:in_1", "duck:out_1"], "the rack's ports: \(duck)")
        usleep(4_500_000)
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let report = try TakeReport.read(from: try #require(TakeCheck.reports(in: dir.path).first))
        let file = try #require(report.chunks.first?.files.first)
        let audio = try TestEnvironment.readAudio(file.hasPrefix("/") ? file : dir.appendingPathComponent(file).path)
        let frames = audio.samples.count / 3
        // The last 4 s (after the re-apply): windows of silent and of loud side signal.
        let (q, l) = RackTests.sidechainGains(audio.samples, channels: 3, input: 0, output: 1, side: 2,
                                              windowsFrom: max(0, frames - 4 * 48000), to: frames - 4800)
        #expect(q.count > 10 && l.count > 10, "windows: \(q.count) quiet, \(l.count) loud")
        #expect(q.isEmpty || abs(q[q.count / 2] - 1) < 0.05, "gain with a silent side chain: \(q)")
        #expect(l.isEmpty || l[l.count / 2] < 0.5, "gain with a loud side chain: \(l)")
    }
}
