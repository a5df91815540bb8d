import Foundation
import Testing
import TestSupport

/// Issue 43, item 6: a `[[connect]]` rule that matches no port is said at start and in the status, and a one-shot
/// command's `--connect` that matches fewer ports than the engine has names the inputs left unconnected.
@Suite(.serialized) struct IdleConnectionRuleTests {
    @Test func aRuleThatConnectsNothingIsSaidAtStartAndInTheStatus() throws {
        let server = try TestEnvironment.server("idlerule")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("idlerule")
        let port = 34000 + Int(getpid() % 15000)
        let path = dir.appendingPathComponent("idle.toml").path
        try """
            [session]
            name = "idle"
            directory = "\(dir.path)"
            control_port = \(port)
            [recorder]
            channels = 2
            start = "armed"
            [[connect]]
            from = "sytem:capture_*"
            to = "tandem-rec:in_*"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        defer {
            run.process.signal(SIGTERM)
            _ = run.process.wait(timeout: 10)
        }
        #expect(run.waitFor("control protocol listening"), "\(run.output)")
        let words = "connect sytem:capture_* -> tandem-rec:in_* (line 8): no output port matches 'sytem:capture_*'"
        #expect(run.waitFor("connects nothing"), "\(run.output)")
        #expect(run.output.contains(words), "\(run.output)")
        let status = try CommandSurfacesTests.osc(port, "/tandem/status", [])
        #expect(status.ok && status.detail.contains("\"idleConnections\":[\"\(words)\"]"), "\(status.detail)")
    }

    @Test func aConnectThatMatchesFewerPortsNamesTheInputsLeftSilent() throws {
        let server = try TestEnvironment.server("idlecli")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("idlecli")
        let t = try TandemProcess(["record", "-c", "4", "-d", dir.path, "--connect", "system:capture_.*"], server: server,
                                  log: dir.appendingPathComponent("t.log").path)
        #expect(t.waitFor(" recording: "), "\(t.output)")
        t.process.signal(SIGTERM)
        #expect(t.process.wait(timeout: 10) == 0)
        #expect(t.output.contains("system:capture_.* matched 2 port(s) for 4 input(s): tandem-rec:in_3 to tandem-rec:in_4"
                                  + " stay unconnected (silent in the take)"), "\(t.output)")
    }
}
