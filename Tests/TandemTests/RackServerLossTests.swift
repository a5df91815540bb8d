import Foundation
import Jack
import Testing
import TestSupport

/// An isolated rack whose process ends because its JACK server went away (exit 3) is not a crash (issue 43, item F):
/// it was reported "crashed: exited with code 3", in events and in take reports, and counted among the crashes.
@Suite(.serialized) struct RackServerLossTests {
    @Test func aRackEndingWithItsServerIsNoCrash() throws {
        let name = JackServer.uniqueName("t-rackloss")
        var server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rackloss")
        let preset = dir.appendingPathComponent("r.toml").path
        try """
            [session]
            name = "rl"
            directory = "\(dir.path)"
            on_server_loss = "resume"
            [[rack]]
            name = "fx"
            client = "rl-fx"
            isolate = true
            inputs = 1
            [[rack.plugins]]
            uri = "http://lv2plug.in/plugins/eg-amp"
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let tandem = try TandemProcess(["run", "--no-view", preset], server: server,
                                       log: dir.appendingPathComponent("run.log").path)
        defer { if tandem.process.isRunning { _ = tandem.process.stop(SIGKILL) } }
        let observer = try JackClient(name: "observer", server: name)
        #expect(TestEnvironment.waitUntil(timeout: 15) { !observer.ports(matching: "^rl-fx:").isEmpty }, "\(tandem.output)")
        observer.close()
        // A server lost, back, and lost again while the rack's process starts on it (a flap): the process ends with
        // exit 3 under its supervisor.
        server.kill9()
        #expect(tandem.waitFor("JACK server lost", timeout: 10), "\(tandem.output)")
        server = try TestEnvironment.server(named: name)
        #expect(tandem.waitFor("rack process started", timeout: 15, occurrence: 2), "\(tandem.output)")
        server.kill9()
        _ = tandem.waitFor("JACK server lost", timeout: 10, occurrence: 2)
        usleep(1_500_000)
        server = try TestEnvironment.server(named: name)
        let watcher = try JackClient(name: "watcher", server: name)
        let back = TestEnvironment.waitUntil(timeout: 20) { !watcher.ports(matching: "^rl-fx:").isEmpty }
        watcher.close()
        let output = tandem.output
        print("measured: " + output.split(separator: "\n").filter { $0.contains("rack") && !$0.contains(" info ") }
            .joined(separator: " | "))
        #expect(!output.contains("crashed"), "a rack that ended with its server is no crash:\n\(output)")
        #expect(back, "the rack comes back with the server:\n\(output)")
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 10) == 0, "\(tandem.output)")
    }
}
