import Takes
import Testing
import Foundation
import Jack
import TestSupport

/// A file-name template whose names collide from take to take (no `{take}`): each take gets its own files with a
/// `+N` suffix, and SIGTERM ends the process within 2 s in every state (the take-naming loop once tried numbers for
/// ever, all naming the same taken file, and the process then ignored SIGINT and SIGTERM).
@Suite(.serialized) struct TakeNamingTests {
    static let signalBound = 2.0

    /// Sends SIGTERM and expects exit 0 within `signalBound` (a hung process is killed so the suite goes on).
    func terminates(_ t: TandemProcess, _ state: String) {
        let sent = Date()
        t.process.signal(SIGTERM)
        let code = t.process.wait(timeout: Self.signalBound)
        #expect(code == 0, "SIGTERM \(state): not ended within \(Self.signalBound) s (code \(String(describing: code)))\n\(t.output)")
        if code == nil { t.process.stop(SIGKILL, grace: 1) }
        print("SIGTERM \(state): ended in \(String(format: "%.2f", Date().timeIntervalSince(sent))) s")
    }

    /// `tandem record -c 2 -d D --template fixed`, twice in one folder: the second take records into `fixed+1.wav`
    /// with its own report, and the first take's files are untouched.
    @Test func aTemplateWithoutTakeGivesTheSecondRunASuffix() throws {
        let server = try TestEnvironment.server("fixedname")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("fixedname")
        var files: [String] = []
        for run in 1...2 {
            let t = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--template", "fixed"],
                                      server: server, log: dir.appendingPathComponent("run-\(run).log").path)
            #expect(t.waitFor(" recording: ", timeout: 5), "run \(run): no take started\n\(t.output)")
            terminates(t, "while recording (run \(run))")
            files.append(announcedFile(t.output) ?? "")
        }
        #expect(files == [dir.appendingPathComponent("fixed.wav").path, dir.appendingPathComponent("fixed+1.wav").path])
        for (file, report) in [("fixed.wav", "fixed.json"), ("fixed+1.wav", "fixed+1.json")] {
            let r = try TakeReport.read(from: dir.appendingPathComponent(report).path)
            #expect(r.ended == .stopped && r.chunks.first?.files == [dir.appendingPathComponent(file).path])
        }
        // The second process goes on counting the session's takes in that folder: no two different "take 1".
        let takes = try ["fixed.json", "fixed+1.json"].map { try TakeReport.read(from: dir.appendingPathComponent($0).path).take }
        #expect(takes == [1, 2], "take numbers of two runs into one folder: \(takes)")
    }

    func armedPreset(_ dir: URL, port: Int) throws -> String {
        let path = dir.appendingPathComponent("fixed.toml").path
        try """
        [session]
        name = "fixed"
        directory = "\(dir.path)"
        control_port = \(port)
        [recorder]
        channels = 2
        start = "armed"
        template = "{session}-{date}"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func ctl(_ port: Int, _ words: [String]) throws -> (code: Int32, output: String) {
        try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)"] + words, timeout: 10)
    }

    /// A preset with `template = "{session}-{date}"` and `start = "armed"`: `preset check` accepts it, and `ctl
    /// record start`, `stop`, `start` records two takes into two sets of files. SIGTERM ends the process within 2 s
    /// while armed, while the second take records, and while armed after a stop.
    @Test func aPresetTemplateWithoutTakeRecordsStartStopStart() throws {
        let server = try TestEnvironment.server("fixedctl")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("fixedctl")
        let port = 30000 + Int((getpid() + 4301) % 20000)
        let preset = try armedPreset(dir, port: port)
        let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", preset], timeout: 10)
        #expect(check.code == 0, "\(check.output)")

        let armed = try TandemProcess(["run", "--no-view", preset], server: server,
                                      log: dir.appendingPathComponent("armed.log").path)
        #expect(armed.waitFor("control protocol listening"), "\(armed.output)")
        terminates(armed, "while armed")

        let run = try TandemProcess(["run", "--no-view", preset], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("control protocol listening"), "\(run.output)")
        #expect(try ctl(port, ["record", "start"]).code == 0)
        #expect(run.waitFor(" recording: ", timeout: 5), "\(run.output)")
        #expect(try ctl(port, ["record", "stop"]).code == 0)
        #expect(run.waitFor(" stopped", timeout: 5), "\(run.output)")
        #expect(try ctl(port, ["record", "start"]).code == 0)
        #expect(run.waitFor(" recording: ", timeout: 5, occurrence: 2), "the second start began no take\n\(run.output)")
        terminates(run, "while the second take records")
        let reports = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        #expect(reports.count == 2, "\(reports)")
        let audio = try reports.map { try TakeReport.read(from: dir.appendingPathComponent($0).path) }
            .flatMap { $0.chunks.flatMap(\.files) }
        #expect(Set(audio).count == 2 && audio.contains { $0.hasSuffix("+1.wav") }, "\(audio)")

        let again = try TandemProcess(["run", "--no-view", preset], server: server,
                                      log: dir.appendingPathComponent("again.log").path)
        #expect(again.waitFor("control protocol listening"), "\(again.output)")
        #expect(try ctl(port, ["record", "start"]).code == 0)
        #expect(again.waitFor(" recording: ", timeout: 5), "\(again.output)")
        #expect(try ctl(port, ["record", "stop"]).code == 0)
        #expect(again.waitFor(" stopped", timeout: 5), "\(again.output)")
        terminates(again, "while armed after a stop")
        #expect(again.output.contains("+2.wav"), "\(again.output)")
    }
}
