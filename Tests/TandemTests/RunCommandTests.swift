import Takes
import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

@Suite(.serialized) struct RunCommandTests {
    func writePreset(_ dir: URL, policy: String, server: JackServer) throws -> String {
        let audio = dir.appendingPathComponent("loop.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 24000, channels: 2), channels: 2, path: audio)
        let path = dir.appendingPathComponent("rig.toml").path
        try """
            [session]
            name = "rig"
            directory = "\(dir.path)"
            on_server_loss = "\(policy)"
            [recorder]
            client = "rig-rec"
            channels = 2
            [player]
            client = "rig-play"
            channels = 2
            queue = ["\(audio)"]
            loop = "item"
            [[connect]]
            from = "rig-play:out_*"
            to = "rig-rec:in_*"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// kill -9 of jackd during a take: the take is finalized and readable, the process stays up; when the server is
    /// back, both clients, their ports and connections return within 2 s and a new take runs.
    @Test func sessionSurvivesAServerRestart() throws {
        let name = JackServer.uniqueName("t-restart")
        var server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("restart")
        let preset = try writePreset(dir, policy: "resume", server: server)
        let tandem = try TandemProcess(["run", preset], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(tandem.waitFor("take 1 recording"))
        usleep(1_500_000)
        server.kill9()
        #expect(tandem.waitFor("take 1 server lost"), "\(tandem.output)")
        #expect(tandem.process.isRunning, "the process stays up without a server")
        let firstTake = try #require(tandem.output.split(separator: "\n").first { $0.contains("take 1 recording: ") }
            .map { String($0.split(separator: " ").last!) })
        let reader = try SoundFileReader(path: firstTake)
        #expect(reader.frames > 48000, "the take up to the loss is in the file")
        let report = try TakeReport.read(from: (firstTake as NSString).deletingPathExtension + ".json")
        #expect(report.ended == .serverLost)

        usleep(500_000)
        server = try TestEnvironment.server(named: name)       // the same name reclaims the crashed server's registry slot
        let ready = Date()
        let observer = try JackClient(name: "observer", server: name)
        let restored = TestEnvironment.waitUntil(timeout: 5) {
            observer.connections(of: "rig-play:out_1") == ["rig-rec:in_1"]
                && observer.connections(of: "rig-play:out_2") == ["rig-rec:in_2"]
                && tandem.output.contains("take 2 recording")
        }
        let seconds = Date().timeIntervalSince(ready)
        #expect(restored, "\(tandem.output)")
        #expect(seconds < 2, "restored \(seconds) s after the server was ready")
        #expect(Set(observer.ports(matching: "^rig-")) == ["rig-rec:in_1", "rig-rec:in_2", "rig-play:out_1", "rig-play:out_2"])
        observer.close()
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 10) == 0)
        let secondReport = try TakeReport.read(from: try #require(announcedReport(tandem.output.components(separatedBy: "take 2 recording").last ?? "")))
        #expect(secondReport.notes?.first?.contains("resumed after the JACK server was lost") == true)
        try? "restore after server ready: \(seconds) s\n".write(toFile: "/tmp/tandem-restore-measurement.txt", atomically: true, encoding: .utf8)
    }

    @Test func policyStopExitsNonZero() throws {
        let name = JackServer.uniqueName("t-stop")
        var server = try TestEnvironment.server(named: name)
        let dir = TestEnvironment.temporaryDirectory("stoppolicy")
        let preset = try writePreset(dir, policy: "stop", server: server)
        let tandem = try TandemProcess(["run", preset], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(tandem.waitFor("take 1 recording"))
        server.kill9()
        #expect(tandem.process.wait(timeout: 10) == 3, "\(tandem.output)")
        #expect(tandem.output.contains("take 1 server lost"))
        server = try TestEnvironment.server(named: name)   // reclaim the registry slot, then stop cleanly
        server.stop()
    }

    @Test func runFromAScriptRecordsTheWholeRequestedTime() throws {
        let server = try TestEnvironment.server("script")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("script")
        let preset = dir.appendingPathComponent("p.toml").path
        try "[session]\ndirectory = \"\(dir.path)\"\n[recorder]\nchannels = 1\nduration = 3\n"
            .write(toFile: preset, atomically: true, encoding: .utf8)
        // stdin is /dev/null (ChildProcess), as from cron or systemd.
        let tandem = try TandemProcess(["run", preset], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output)")
        let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
        #expect(report.frames == 3 * 48000 && report.ended == .durationReached)
    }

    @Test func aBadPresetStartsNothingAndExitsTwo() throws {
        let dir = TestEnvironment.temporaryDirectory("badrun")
        let preset = dir.appendingPathComponent("bad.toml").path
        try "[recorder]\nchannels = 0\nformt = 1\n".write(toFile: preset, atomically: true, encoding: .utf8)
        let log = dir.appendingPathComponent("log").path
        let p = try ChildProcess([TestEnvironment.product("tandem"), "run", preset], outputPath: log)
        #expect(p.wait(timeout: 10) == 2)
        let out = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(out.contains("bad.toml:2: recorder.channels") && out.contains("did you mean 'format'?"))
        let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", preset])
        #expect(check.code == 2 && check.output.contains("bad.toml:3: recorder.formt"))
    }
}
