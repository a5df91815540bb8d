import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// Plugin messages for an isolated rack, sent to the session's own control port by the rack's name.
@Suite(.serialized) struct RackControlTests {
    static func ctl(_ port: Int, _ words: [String]) throws -> (code: Int32, text: String) {
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)"] + words, timeout: 10)
        // `ctl` prints "ok: DETAIL".
        var last = (r.output.split(separator: "\n").last.map(String.init) ?? "").trimmingCharacters(in: .whitespaces)
        if last.hasPrefix("ok: ") { last = String(last.dropFirst(4)) }
        return (r.code, last)
    }

    /// Control value, bypass, mix and gain of a plugin in an isolated rack, set over the session's port: the rack's
    /// process has them (read on its own port), and after the process is killed (SIGSEGV, as a crashing plugin
    /// would) and restarted, it has them still.
    @Test(.enabled(if: RackTests.hasSWH))
    func pluginMessagesReachAnIsolatedRackAndSurviveItsRestart() throws {
        let server = try TestEnvironment.server("rackctl")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackctl")
        let port = 37000 + Int(getpid() % 20000)
        let path = try RackIsolationTests.isolatedRackPreset(
            "ctl", dir: dir, port: port, plugin: "uri = \"\(RackTests.amp)\"\nname = \"amp\"\ncontrols = { gain = -6 }",
            extra: "[[connect]]\nfrom = \"src:out_1\"\nto = \"fx:in_1\"")
        let noise = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: noise, sample: .float32)
        let src = try TandemProcess(["play", "--client", "src", "--loop", "item", noise], server: server,
                                    log: dir.appendingPathComponent("src.log").path)
        defer { src.process.signal(SIGTERM); _ = src.process.wait(timeout: 10) }
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        defer { run.process.signal(SIGTERM); _ = run.process.wait(timeout: 15) }
        #expect(run.waitFor("rack process started"), "\(run.output)")
        // A session of isolated racks alone watches the graph with a client of its own (no process callback).
        #expect(run.waitFor("connected src:out_1 -> fx:in_1"), "\(run.output)")
        // The child answers once its client is active.
        var first = (code: Int32(-1), text: "")
        for _ in 0..<50 where first.code != 0 {
            first = try Self.ctl(port, ["/tandem/plugin/set", "fx", "amp", "gain", "-12"])
            if first.code != 0 { usleep(100_000) }
        }
        #expect(first.code == 0 && Double(first.text) == -12, "set over the session's port: \(first)")
        #expect(try Self.ctl(port, ["/tandem/plugin/bypass", "fx", "amp", "1"]).text == "1")
        #expect(Double(try Self.ctl(port, ["/tandem/plugin/mix", "fx", "0.75"]).text) == 0.75)
        #expect(Double(try Self.ctl(port, ["/tandem/plugin/gain", "fx", "-2.5"]).text) == -2.5)
        func values(_ p: Int) throws -> [String] {
            try [["/tandem/plugin/get", "fx", "amp", "gain"], ["/tandem/plugin/bypass", "fx", "amp"],
                 ["/tandem/plugin/mix", "fx"], ["/tandem/plugin/gain", "fx"]].map { try Self.ctl(p, $0).text }
        }
        let want = ["-12.0", "1", "0.75", "-2.5"]
        let rack = RackIsolationTests.rack(try RackIsolationTests.status(port))
        let childPort = try #require(rack["controlPort"] as? Int, "\(rack)")
        #expect(try values(childPort) == want, "the rack's own process has the values")
        #expect(try values(port) == want, "read back through the session")
        // The child saves changed values at most once a second.
        usleep(1_500_000)
        let pid = (rack["pid"] as? Int).map { pid_t($0) } ?? 0
        #expect(pid > 0)
        kill(pid, SIGSEGV)
        #expect(run.waitFor("rack fx back after", timeout: 8), "\(run.output)")
        let again = RackIsolationTests.rack(try RackIsolationTests.status(port))
        #expect((again["crashes"] as? Int) == 1 && (again["pid"] as? Int).map { pid_t($0) } != pid, "\(again)")
        #expect(try values(port) == want, "after the restart")
        #expect(run.waitFor("connected src:out_1 -> fx:in_1", occurrence: 2), "reconnected: \(run.output)")
        // A rack that is not there is still named as unknown.
        #expect(try Self.ctl(port, ["/tandem/plugin/get", "nope", "amp", "gain"]).code != 0)
    }
}
