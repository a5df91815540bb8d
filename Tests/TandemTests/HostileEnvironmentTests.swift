import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// `tandem record` and `tandem run` where the world around them misbehaves: stdout a closed pipe or piped into
/// `head -1`, a terminal that hangs up, SIGHUP, standard streams on a full disk, the session folder made read-only
/// mid-take. The promise (docs/RELIABILITY.md, issue 17): the take goes on and completes; stopped later by SIGINT it
/// exits 0 and its report says `stopped`, with the source's audio frame for frame. A folder that becomes read-only
/// is a disk error: said clearly, the file left readable, exit 4.
@Suite(.serialized) struct HostileEnvironmentTests {
    enum Mode: String { case record, run }

    /// One recording under test: a private server, a looped noise source, the session folder and logs beside it.
    final class Rig {
        let server: JackServer
        let base: URL
        let session: URL
        let noise: LoopedNoise
        let mode: Mode
        var child: RawChild?
        var source: TandemProcess?
        var started = Date()

        init(_ label: String, mode: Mode) throws {
            self.mode = mode
            server = try TestEnvironment.server("hx-\(label)")
            base = TestEnvironment.temporaryDirectory("hostile-\(label)")
            session = base.appendingPathComponent("session")
            try FileManager.default.createDirectory(at: session, withIntermediateDirectories: true)
            let src = base.appendingPathComponent("src")
            try FileManager.default.createDirectory(at: src, withIntermediateDirectories: true)
            noise = try LoopedNoise(dir: src)
        }

        deinit {
            source?.process.stop(SIGKILL)
            child = nil
            server.stop()
        }

        var stderrLog: String { base.appendingPathComponent("stderr.log").path }
        var stdoutLog: String { base.appendingPathComponent("stdout.log").path }
        func log(_ name: String) -> String { (try? String(contentsOfFile: base.appendingPathComponent(name).path, encoding: .utf8)) ?? "" }

        /// The command line: `record` into the session folder, or `run` of a preset doing the same (with `preset`
        /// lines added).
        func arguments(extra: [String], preset: String) throws -> [String] {
            switch mode {
            case .record:
                return [TestEnvironment.product("tandem"), "record", "--client", "hx-rec", "-c", "2", "-d", session.path,
                        "--session", "hx"] + extra
            case .run:
                let path = base.appendingPathComponent("hx.toml").path
                try """
                    [session]
                    name = "hx"
                    directory = "\(session.path)"
                    [recorder]
                    client = "hx-rec"
                    channels = 2
                    \(preset)
                    """.write(toFile: path, atomically: true, encoding: .utf8)
                return [TestEnvironment.product("tandem"), "run", "--control-port", "0"] + extra + [path]
            }
        }

        /// Starts Tandem with the given streams, waits for its first take's file, then starts the source into it.
        func start(stdout: RawChild.Stream, stderr: RawChild.Stream, stdin: RawChild.Stream = .path("/dev/null", O_RDONLY),
                   extra: [String] = [], preset: String = "", wrapper: [String] = [],
                   environment: [String: String] = [:]) throws {
            child = try RawChild(wrapper + (try arguments(extra: extra, preset: preset)), stdin: stdin, stdout: stdout,
                                 stderr: stderr, server: server, environment: environment)
            let recording = TestEnvironment.waitUntil(timeout: 10) { !takeFiles.isEmpty }
            try #require(recording, "no take started: \(log("stderr.log")) \(log("stdout.log"))")
            started = Date()
            source = try noise.play(into: "hx-rec:in_.*", server: server, client: "hx-src",
                                    log: base.appendingPathComponent("source.log").path)
            _ = source?.waitFor("playing", timeout: 3)
        }

        var takeFiles: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: session.path)) ?? []).filter { $0.hasSuffix(".wav") }
        }

        /// Lets the take run on, checks the process is still there, stops it with SIGINT and checks the take.
        func expectSurvival(_ what: String, seconds: Double = 1.5) {
            usleep(UInt32(seconds * 1_000_000))
            guard let child else { return }
            let alive = child.isRunning
            #expect(alive, "\(mode) with \(what): the process died (exit \(child.exitCode.map(String.init) ?? "?")) before it was stopped; stderr: \(log("stderr.log").suffix(1500))")
            let stoppedAt = Date()
            child.signal(SIGINT)
            let code = child.wait(timeout: 10)
            let elapsed = stoppedAt.timeIntervalSince(started)
            if alive {
                #expect(code == 0, "\(mode) with \(what): exit \(code.map(String.init) ?? "none within 10 s") after SIGINT; stderr: \(log("stderr.log").suffix(1500))")
            }
            source?.process.stop(SIGINT)
            let reports = TakeCheck.reports(in: session.path)
            #expect(reports.count == 1, "\(mode) with \(what): reports \(reports)")
            for r in reports {
                let t = TakeCheck.verify(report: r, source: noise.index)
                #expect(t.problems.isEmpty, "\(mode) with \(what): \(t)")
                // The take ran until SIGINT: it holds (nearly) all the time from its start to the signal.
                #expect(Double(t.frames) >= (elapsed - 0.5) * 48000,
                        "\(mode) with \(what): \(t.frames) frames for \(String(format: "%.2f", elapsed)) s of recording")
                #expect(t.audio.sourceFrames >= Int((elapsed - 1.0) * 48000), "\(mode) with \(what): \(t)")
            }
        }
    }

    // MARK: stdout a closed pipe

    func closedPipe(_ mode: Mode) throws {
        let rig = try Rig("closed-\(mode)", mode: mode)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])                                   // nobody will ever read
        defer { close(fds[1]) }
        try rig.start(stdout: .fd(fds[1]), stderr: .path(rig.stderrLog, O_WRONLY | O_APPEND))
        rig.expectSurvival("stdout a closed pipe")
    }

    @Test func recordWithStdoutAClosedPipe() throws { try closedPipe(.record) }
    @Test func runWithStdoutAClosedPipe() throws { try closedPipe(.run) }

    // MARK: stdout piped into head -1

    func headOne(_ mode: Mode) throws {
        let rig = try Rig("head-\(mode)", mode: mode)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let head = try RawChild(["head", "-1"], stdin: .fd(fds[0]), stdout: .path(rig.stdoutLog, O_WRONLY | O_APPEND),
                                stderr: .path("/dev/null", O_WRONLY), server: nil)
        close(fds[0])
        try rig.start(stdout: .fd(fds[1]), stderr: .path(rig.stderrLog, O_WRONLY | O_APPEND))
        close(fds[1])
        #expect(head.wait(timeout: 5) == 0, "head read its line and left")
        rig.expectSurvival("stdout piped into head -1")
        #expect(!rig.log("stdout.log").isEmpty, "head saw the first line")
    }

    @Test func recordPipedIntoHeadDashOne() throws { try headOne(.record) }
    @Test func runPipedIntoHeadDashOne() throws { try headOne(.run) }

    // MARK: a terminal that hangs up

    func ptyHangUp(_ mode: Mode) throws {
        let rig = try Rig("pty-\(mode)", mode: mode)
        let pty = try PseudoTerminal()
        try rig.start(stdout: .terminal(pty.slavePath), stderr: .fd(1), stdin: .terminal(pty.slavePath),
                      environment: ["TERM": "xterm-256color"])
        usleep(500_000)
        let screen = pty.drain()
        #expect(screen.contains("recording") || screen.contains("REC"), "the terminal showed the take: \(screen.suffix(500))")
        pty.hangUp()
        rig.expectSurvival("its terminal hung up")
    }

    @Test func recordSurvivesItsTerminalHangingUp() throws { try ptyHangUp(.record) }
    @Test func runSurvivesItsTerminalHangingUp() throws { try ptyHangUp(.run) }

    // MARK: SIGHUP

    func hangUpSignal(_ mode: Mode) throws {
        let rig = try Rig("sighup-\(mode)", mode: mode)
        try rig.start(stdout: .path(rig.stdoutLog, O_WRONLY | O_APPEND), stderr: .path(rig.stderrLog, O_WRONLY | O_APPEND))
        usleep(500_000)
        rig.child?.signal(SIGHUP)
        rig.expectSurvival("SIGHUP")
    }

    @Test func recordSurvivesSIGHUP() throws { try hangUpSignal(.record) }
    @Test func runSurvivesSIGHUP() throws { try hangUpSignal(.run) }

    // MARK: standard streams on a full disk

    /// `record` with stdout and stderr both on /dev/full (every write fails with ENOSPC), verbose.
    @Test func recordWithStdoutAndStderrOnAFullDisk() throws {
        let rig = try Rig("full-record", mode: .record)
        try rig.start(stdout: .path("/dev/full", O_WRONLY), stderr: .path("/dev/full", O_WRONLY), extra: ["-v"])
        rig.expectSurvival("stdout and stderr on a full disk")
    }

    /// `run` with stderr on /dev/full and a queue item that cannot be played, so an error line must be written there
    /// during the take.
    @Test func runWithStderrOnAFullDisk() throws {
        let rig = try Rig("full-run", mode: .run)
        let broken = rig.base.appendingPathComponent("src/broken.wav").path
        try "not audio".write(toFile: broken, atomically: true, encoding: .utf8)
        try rig.start(stdout: .path(rig.stdoutLog, O_WRONLY | O_APPEND), stderr: .path("/dev/full", O_WRONLY),
                      extra: ["-v"], preset: "[player]\nclient = \"hx-play\"\nchannels = 2\nqueue = [\"\(broken)\"]\n")
        rig.expectSurvival("stderr on a full disk")
    }

    // MARK: the session folder made read-only mid-take

    /// The folder becomes read-only (chmod, with the capabilities that bypass permissions dropped) while a take
    /// rotates every second: the next chunk cannot be created. A disk error: said on stderr, exit 4, every chunk
    /// written so far readable with the frames its report gives, the report saying `diskError`.
    @Test(.enabled(if: TestEnvironment.hasProgram("setpriv")), arguments: [Mode.record, Mode.run])
    func aFolderMadeReadOnlyMidTakeIsADiskError(_ mode: Mode) throws {
        let rig = try Rig("ro-\(mode)", mode: mode)
        let wrapper = getuid() == 0 ? ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-all"] : []
        try rig.start(stdout: .path(rig.stdoutLog, O_WRONLY | O_APPEND), stderr: .path(rig.stderrLog, O_WRONLY | O_APPEND),
                      extra: mode == .record ? ["--rotate", "1"] : ["--set", "recorder.rotate=1"], wrapper: wrapper)
        defer { chmod(rig.session.path, 0o755) }
        usleep(1_300_000)
        #expect(chmod(rig.session.path, 0o555) == 0)
        let code = rig.child?.wait(timeout: 6)
        rig.source?.process.stop(SIGINT)
        if code == nil { rig.child?.signal(SIGINT); _ = rig.child?.wait(timeout: 10) }
        #expect(code == 4, "\(mode): exit \(code.map(String.init) ?? "none within 6 s of the folder going read-only"); stderr: \(rig.log("stderr.log").suffix(1500))")
        let stderr = rig.log("stderr.log") + rig.log("stdout.log")
        #expect(stderr.contains("disk") && stderr.contains("Permission denied"), "\(mode): a clear disk error: \(stderr.suffix(1500))")
        let reports = TakeCheck.reports(in: rig.session.path)
        #expect(reports.count == 1, "\(reports)")
        for r in reports {
            let t = TakeCheck.verify(report: r, source: rig.noise.index, ended: [.diskError])
            #expect(t.problems.isEmpty && t.frames >= 48000, "\(mode): \(t)")
        }
    }
}
