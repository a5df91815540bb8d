import Foundation
import Jack
import Testing
import TestSupport

/// The server dying again while the session restores itself on it (a flap; issue 43, item A). libjack2 frees every
/// client of the process at the next open after one was shut down, and the session went on using the handles it
/// held: it segfaulted in `jack_deactivate` (`Recorder.close` on the failed restore's way out, `Rack.close` in
/// `closeEngines`) or in `jack_get_uuid_for_client_name` (`startIsolated`). Killing the server as soon as the
/// restore has opened the recorder crashed the release build in 10 of 20 rounds (`scripts/flap-test.py --kill-on
/// 'recorder ready'`); `scripts/flap-test.py` is the long form, with random gaps and both cores loaded.
@Suite(.serialized) struct ServerFlapTests {
    @Test func aSessionSurvivesItsServerDyingAgainWhileItIsRestored() throws {
        let name = JackServer.uniqueName("t-flap")
        var server = try TestEnvironment.server(named: name, period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("flap")
        let port = LoopbackUDP.freePort()
        let preset = dir.appendingPathComponent("flap.toml").path
        try """
            [session]
            name = "flap"
            directory = "\(dir.path)"
            control_port = \(port)
            on_server_loss = "resume"
            [recorder]
            channels = 2
            client = "flap-rec"
            start = "immediately"
            [[rack]]
            name = "ins"
            client = "flap-ins"
            isolate = false
            inputs = 1
            [[rack.plugins]]
            uri = "http://lv2plug.in/plugins/eg-amp"
            [[rack]]
            name = "iso"
            client = "flap-iso"
            isolate = true
            inputs = 1
            [[rack.plugins]]
            uri = "http://lv2plug.in/plugins/eg-amp"
            [[connect]]
            from = "flap-ins:out_1"
            to = "flap-rec:in_1"
            [[connect]]
            from = "flap-iso:out_1"
            to = "flap-rec:in_2"
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let tandem = try TandemProcess(["run", "--no-view", "-v", preset], server: server,
                                       log: dir.appendingPathComponent("run.log").path)
        defer { if tandem.process.isRunning { _ = tandem.process.stop(SIGKILL) } }
        #expect(tandem.waitFor("take started", timeout: 20), "\(tandem.output)")
        func count(_ text: String) -> Int { tandem.output.components(separatedBy: text).count - 1 }

        let rounds = 12
        var restored = 0
        for round in 1...rounds {
            // Lost; back; lost again as soon as the restore has opened the recorder (before its racks); back.
            let ready = count("recorder ready"), back = count("JACK server is back: clients")
            server.kill9()
            server = try TestEnvironment.server(named: name, period: 256)
            _ = TestEnvironment.waitUntil(timeout: 10) { count("recorder ready") > ready || !tandem.process.isRunning }
            server.kill9()
            server = try TestEnvironment.server(named: name, period: 256)
            let ok = TestEnvironment.waitUntil(timeout: 15) {
                count("JACK server is back: clients") > back || !tandem.process.isRunning
            }
            guard tandem.process.isRunning else {
                let code = tandem.process.wait(timeout: 1).map { String($0) } ?? "?"
                Issue.record("round \(round): tandem ended (\(code)):\n\(tandem.output.suffix(3000))")
                return
            }
            guard ok else {
                // Open (issue 43, item A): about one flap run in 14 stalls inside libjack during a restore (a
                // client's open or close waits on a lock no thread holds, after libjack's metadata database ran out
                // of mutexes: "BDB2034"). A crash above still fails; this stall is known, counted and said.
                withKnownIssue("round \(round): the restore stalled inside libjack (open: docs/RELIABILITY.md, Server flaps)",
                               isIntermittent: true) {
                    Issue.record("round \(round): the session is not restored:\n\(tandem.output.suffix(3000))")
                }
                print("measured: the restore stalled in round \(round) of \(rounds) (the known libjack stall)")
                return
            }
            restored += 1
        }
        // It answers on its control port.
        let status = try TestEnvironment.run([TestEnvironment.product("tandem"), "status", "--port", "\(port)",
                                              "--json"], timeout: 10)
        #expect(status.code == 0 && status.output.contains("\"recorder\""), "\(status.output)")
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output.suffix(2000))")
        // Every take's report parses and says how it ended.
        let reports = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasPrefix("flap-") && $0.hasSuffix(".json")
        }
        for file in reports {
            let data = try Data(contentsOf: dir.appendingPathComponent(file))
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect(object?["ended"] is String, "\(file) says how its take ended")
        }
        print("measured: \(rounds) flaps, \(restored) restores, \(reports.count) take reports, "
              + "\(count("JACK server lost")) losses seen")
    }
}
