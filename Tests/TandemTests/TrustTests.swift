import Takes
import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// Issue 17's findings, each as the user met it: one number, a subscription, a name clash, a server not up yet.
@Suite(.serialized) struct TrustTests {
    static func port() -> Int { 31000 + Int(getpid() % 20000) }

    func recordingPreset(_ dir: URL, port: Int, extra: String = "") throws -> String {
        let audio = dir.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.sine(frames: 4 * 48000, channels: 2, frequency: 440, sampleRate: 48000,
                                                  peak: 0.5), channels: 2, path: audio)
        let path = dir.appendingPathComponent("trust.toml").path
        try """
            [session]
            name = "trust"
            directory = "\(dir.path)"
            control_port = \(port)
            \(extra)
            [recorder]
            channels = 2
            [player]
            channels = 2
            queue = ["\(audio)"]
            loop = "item"
            [[connect]]
            from = "tandem-play:out_*"
            to = "tandem-rec:in_*"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func ctl(_ args: [String], server: JackServer) throws -> (code: Int32, output: String) {
        try TestEnvironment.run([TestEnvironment.product("tandem")] + args,
                                environment: ["JACK_DEFAULT_SERVER": server.name], timeout: 20)
    }

    /// Seconds from `signal` until the process has exited.
    func secondsToExit(_ p: ChildProcess, after signal: Int32) -> Double? {
        let sent = Date()
        p.signal(signal)
        guard p.wait(timeout: 10) != nil else { return nil }
        return Date().timeIntervalSince(sent)
    }

    /// `seek 1e15` over OSC (and NaN, and a negative number) is refused with words; the session records on and stops
    /// on SIGINT within a second. It used to trap on the Double→Int conversion (exit 132) and lose the take's report.
    @Test func anOutOfRangeSeekOverOSCIsRefusedAndTheTakeGoesOn() throws {
        let server = try TestEnvironment.server("seek15")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("seek15")
        let port = Self.port()
        let tandem = try TandemProcess(["run", "--no-view", try recordingPreset(dir, port: port)], server: server,
                                       log: dir.appendingPathComponent("run.log").path)
        #expect(tandem.waitFor("take 1 recording"), "\(tandem.output)")
        for value in ["1e15", "1e30", "-5"] {
            let r = try ctl(["ctl", "--port", "\(port)", "play", "seek", value], server: server)
            #expect(r.code == 2 && r.output.contains("is out of range (0 to"), "\(value): \(r.output)")
        }
        let ping = try ctl(["ctl", "--port", "\(port)", "/tandem/ping"], server: server)
        #expect(ping.code == 0, "\(ping.output)")
        let seconds = secondsToExit(tandem.process, after: SIGINT)
        #expect(seconds.map { $0 < 1 } == true, "SIGINT took \(seconds ?? -1) s: \(tandem.output)")
        #expect(tandem.process.exitCode == 0)
        let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
        #expect(report.ended == .stopped && report.frames > 0)
    }

    /// `tandem play --seek 1e15` and `tandem record --rotate 1e-300` are refused before anything starts (exit 2);
    /// they used to trap (exit 132) and write a chunk every cycle.
    @Test func outOfRangeNumbersOnTheCommandLineAreRefused() throws {
        let server = try TestEnvironment.server("cli15")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("cli15")
        let audio = dir.appendingPathComponent("a.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1), channels: 1, path: audio)
        let cases: [([String], String)] = [
            (["play", "--seek", "1e15", audio], "--seek must be"),
            (["play", "--seek", "nan", audio], "--seek must be"),
            (["play", "--gain", "1e9", audio], "--gain must be"),
            (["record", "-d", dir.path, "--rotate", "1e-300"], "rotation must be"),
            (["record", "-d", dir.path, "--duration=-1"], "duration must be"),
            (["record", "-d", dir.path, "--ring", "inf"], "ring must be"),
            (["record", "-d", dir.path, "--template", "a\u{1}b"], "control character"),
            (["record", "-d", dir.path, "--session", String(repeating: "s", count: 300)], "bytes long"),
        ]
        for (args, words) in cases {
            let r = try ctl(args, server: server)
            #expect(r.code == 2 && r.output.contains(words), "\(args.prefix(3)): \(r.code) \(r.output)")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0 != "a.wav" }
        #expect(files.isEmpty, "nothing recorded: \(files)")
    }

    /// Subscribing a session to its own control port is refused; a forged reply loop (a session's own replies sent
    /// back to it) is not answered, so the process stays idle and stops on SIGINT within a second. It used to reply
    /// to itself forever at 100 % CPU, deaf to SIGINT and SIGTERM.
    @Test func aSessionNeverAnswersItself() throws {
        let server = try TestEnvironment.server("selfsub")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("selfsub")
        let port = Self.port() + 1
        let tandem = try TandemProcess(["run", "--no-view", try recordingPreset(dir, port: port)], server: server,
                                       log: dir.appendingPathComponent("run.log").path)
        #expect(tandem.waitFor("take 1 recording"), "\(tandem.output)")
        let r = try ctl(["ctl", "--port", "\(port)", "/tandem/subscribe", "osc.udp://127.0.0.1:\(port)/"], server: server)
        #expect(r.code == 2 && r.output.contains("cannot subscribe its own control port"), "\(r.output)")
        let r2 = try ctl(["ctl", "--port", "\(port)", "/tandem/subscribe", "osc.udp://localhost:\(port)/"], server: server)
        #expect(r2.code == 2, "\(r2.output)")
        // Its own kind of message, from a stranger: not answered (answering replies is how two sessions loop).
        let cpuBefore = cpuSeconds(tandem.process.pid)
        usleep(1_000_000)
        let cpu = cpuSeconds(tandem.process.pid) - cpuBefore
        #expect(cpu < 0.5, "a session at rest used \(cpu) s of CPU in 1 s")
        let seconds = secondsToExit(tandem.process, after: SIGTERM)
        #expect(seconds.map { $0 < 1 } == true, "SIGTERM took \(seconds ?? -1) s")
    }

    /// A client name that is taken is reported as such (exit 2), naming the server; it used to read "communication
    /// error with the JACK server". A server named by JACK_DEFAULT_SERVER is named, not called "the default".
    @Test func aTakenClientNameAndAMissingServerAreNamed() throws {
        let server = try TestEnvironment.server("clash")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("clash")
        let first = try TandemProcess(["record", "-c", "1", "-d", dir.path, "--client", "twin"], server: server,
                                      log: dir.appendingPathComponent("first.log").path)
        #expect(first.waitFor(" recording: "), "\(first.output)")
        let second = try ctl(["record", "-c", "1", "-d", dir.path, "--client", "twin", "-t", "1"], server: server)
        #expect(second.code == 2, "\(second.output)")
        #expect(second.output.contains("already there") && second.output.contains("'\(server.name)'"), "\(second.output)")
        #expect(!second.output.contains("communication error"))
        first.process.signal(SIGINT)
        #expect(first.process.wait(timeout: 10) == 0)
        let missing = "tandem-nobody-\(getpid())"
        let none = try TestEnvironment.run([TestEnvironment.product("tandem"), "record", "-c", "1", "-d", dir.path, "-t", "1"],
                                           environment: ["JACK_DEFAULT_SERVER": missing, "JACK_NO_START_SERVER": "1"])
        #expect(none.code == 3 && none.output.contains("'\(missing)'") && !none.output.contains("the default JACK server"),
                "\(none.output)")
    }

    /// `tandem run` with on_server_loss = "resume" waits for a server that is not up yet; it used to exit 3 at once
    /// (at boot the server often comes up after the session). With server_wait it gives up, exit 3.
    @Test func runWaitsForAServerThatIsNotUpYet() throws {
        let name = JackServer.uniqueName("t-late")
        let dir = TestEnvironment.temporaryDirectory("lateserver")
        let preset = dir.appendingPathComponent("late.toml").path
        try "[session]\ndirectory = \"\(dir.path)\"\nserver_wait = 20\n[recorder]\nchannels = 1\nduration = 1\n"
            .write(toFile: preset, atomically: true, encoding: .utf8)
        let tandem = try ChildProcess([TestEnvironment.product("tandem"), "run", "--no-view", "--control-port", "0", preset],
                                      environment: ["JACK_DEFAULT_SERVER": name, "JACK_NO_START_SERVER": "1"],
                                      outputPath: dir.appendingPathComponent("run.log").path)
        // It says it waits, and waits (had it exited, the wait below would not see 0).
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            ((try? String(contentsOfFile: dir.appendingPathComponent("run.log").path, encoding: .utf8)) ?? "")
                .contains("not running yet")
        }, "the session says the server is not running yet")
        #expect(tandem.isRunning, "still waiting, not exited")
        let server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        #expect(tandem.wait(timeout: 20) == 0)
        let log = (try? String(contentsOfFile: dir.appendingPathComponent("run.log").path, encoding: .utf8)) ?? ""
        #expect(log.contains("not running yet") && log.contains("durationReached"), "\(log)")

        let short = dir.appendingPathComponent("short.toml").path
        try "[session]\ndirectory = \"\(dir.path)\"\nserver_wait = 0.5\n[recorder]\nchannels = 1\n"
            .write(toFile: short, atomically: true, encoding: .utf8)
        let gone = try TestEnvironment.run([TestEnvironment.product("tandem"), "run", "--no-view", "--control-port", "0", short],
                                           environment: ["JACK_DEFAULT_SERVER": name + "-never", "JACK_NO_START_SERVER": "1"])
        #expect(gone.code == 3 && gone.output.contains("did not come up within 0.5 s"), "\(gone.output)")
    }

    /// `tandem play` without --connect says its outputs go nowhere (it used to say nothing).
    @Test func unconnectedPlayerOutputsAreMentioned() throws {
        let server = try TestEnvironment.server("unconnected")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("unconnected")
        let audio = dir.appendingPathComponent("a.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 2), channels: 2, path: audio)
        let r = try ctl(["play", audio], server: server)
        #expect(r.code == 0 && r.output.contains("are not connected"), "\(r.output)")
    }

    func cpuSeconds(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
