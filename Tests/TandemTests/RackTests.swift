import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// Racks: a chain live between JACK ports, in the same cycle, through the session like every other engine.
@Suite(.serialized) struct RackTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static var hasSWH: Bool { FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2") }

    /// Noise from a player goes to the recorder twice: straight, and through a rack running an amplifier at -6 dB.
    /// The rack's output is the input times the gain on the same frame: no added latency, nothing lost.
    @Test(.enabled(if: hasSWH))
    func aRackProcessesInTheSameCycle() throws {
        let server = try TestEnvironment.server("rack")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rack")
        let noise = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: noise, sample: .float32)
        let port = 32000 + Int(getpid() % 20000)
        let play = try TandemProcess(["play", "--wait", "--loop", "item", "--control-port", "\(port)", noise],
                                     server: server, log: dir.appendingPathComponent("play.log").path)
        defer { play.process.signal(SIGTERM); _ = play.process.wait(timeout: 10) }
        #expect(play.waitFor("control protocol listening"), "\(play.output)")
        let rack = try TandemProcess(["rack", "--name", "level", "--plugin", "\(Self.amp),gain=-6",
                                      "--connect-in", "tandem-play:out_1"],
                                     server: server, log: dir.appendingPathComponent("rack.log").path)
        defer { rack.process.signal(SIGTERM); _ = rack.process.wait(timeout: 10) }
        #expect(rack.waitFor("connected tandem-play:out_1 -> level:in_1"), "\(rack.output)")
        let rec = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--session", "through",
                                     "--connect", "tandem-play:out_1", "--connect", "level:out_1"],
                                    server: server, log: dir.appendingPathComponent("rec.log").path)
        #expect(rec.waitFor("take 1 recording"), "\(rec.output)")
        let go = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)", "play", "play"])
        #expect(go.code == 0, "\(go.output)")
        usleep(1_500_000)
        rec.process.signal(SIGINT)
        #expect(rec.process.wait(timeout: 10) == 0, "\(rec.output)")
        let take = try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasPrefix("through-") && $0.hasSuffix(".wav") }
        let audio = try TestEnvironment.readAudio(dir.appendingPathComponent(try #require(take)).path)
        #expect(audio.channels == 2)
        let gain = Float(pow(10, -6.0 / 20))
        var loud = 0, worst: Float = 0
        for i in 0..<(audio.samples.count / 2) {
            let dry = audio.samples[2 * i], wet = audio.samples[2 * i + 1]
            if abs(dry) > 0.01 { loud += 1 }
            worst = max(worst, abs(wet - dry * gain))
        }
        #expect(loud > 24000, "the noise reached the recorder (\(loud) loud frames)")
        #expect(worst < 1e-5, "the rack's output is the input at -6 dB on the same frame (worst error \(worst))")
        // The rack reports what passes through it: its output carries its source's capture latency plus its own (0).
        let lsp = try TestEnvironment.run(["jack_lsp", "-s", server.name, "-l", "level:out_1"])
        #expect(lsp.output.contains("capture latency = [ 0 0 ]"), "\(lsp.output)")
    }

    /// Racks in a preset run beside the recorder; `preset check` names their problems; re-applying changes nothing.
    @Test(.enabled(if: hasSWH))
    func aPresetWithARackAppliesByDiff() throws {
        let server = try TestEnvironment.server("rackpreset")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackpreset")
        let path = dir.appendingPathComponent("racks.toml").path
        try """
            [session]
            name = "racks"
            directory = "\(dir.path)"
            control_port = \(33000 + Int(getpid() % 20000))
            [[rack]]
            name = "voice"
            [[rack.plugins]]
            uri = "\(Self.amp)"
            controls = { gain = -3 }
            [[rack]]
            name = "tone"
            inputs = 2
            [[rack.plugins]]
            uri = "\(Self.amp)"
            [[connect]]
            from = "voice:out_1"
            to = "tone:in_*"
            mode = "all"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", path])
        #expect(check.code == 0 && check.output.contains("rack voice (1 plugin(s)), rack tone (1 plugin(s))"), "\(check.output)")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("connected voice:out_1 -> tone:in_2"), "\(run.output)")
        let ports = try TestEnvironment.run(["jack_lsp", "-s", server.name])
        for p in ["voice:in_1", "voice:out_1", "tone:in_1", "tone:in_2", "tone:out_1", "tone:out_2"] {
            #expect(ports.output.contains(p), "\(p) in \(ports.output)")
        }
        run.process.signal(SIGHUP)
        #expect(run.waitFor("graph changes"), "\(run.output)")
        #expect(run.output.contains("reloaded \(path): 0 graph changes"), "\(run.output)")
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 10) == 0, "\(run.output)")
    }
}
