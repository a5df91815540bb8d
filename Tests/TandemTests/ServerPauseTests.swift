import Takes
import Testing
import Foundation
import Jack
import SoundFile
import TestSupport

/// The JACK server paused (SIGSTOP) under a running session: nothing of Tandem's is taken for hung, and a stop
/// asked for meanwhile ends the process within a bound with its files complete.
@Suite(.serialized) struct ServerPauseTests {
    /// An isolated rack beside a server stopped for 3 s: its own hang check reads a frame time that stands still
    /// while the server does (the cycle's), so the rack is the same process after SIGCONT and no hang is counted.
    /// (It read `jack_frame_time`, which libjack extrapolates from the clock, and killed itself as hung.)
    @Test(.enabled(if: RackTests.hasSWH))
    func anIsolatedRackOutlivesAPausedServer() throws {
        let server = try TestEnvironment.server("pauserack")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("pauserack")
        let port = 35000 + Int((getpid() + 811) % 20000)
        let path = try RackIsolationTests.isolatedRackPreset("paused", dir: dir, port: port, plugin: "uri = \"\(RackTests.amp)\"")
        let run = try TandemProcess(["run", "--no-view", path], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
        defer { run.process.stop(SIGTERM, grace: 10) }
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            let r = RackIsolationTests.rack((try? RackIsolationTests.status(port)) ?? [:])
            return r["running"] as? Bool == true && (r["cycles"] as? Int ?? 0) > 0
        }, "\(run.output)")
        let pid = RackIsolationTests.rackPid(port)
        #expect(pid > 0)
        server.process.signal(SIGSTOP)
        usleep(3_000_000)   // the stimulus: a 3 s pause (the rack's hang check fires after 1.5 s of a still counter)
        server.process.signal(SIGCONT)
        let resumed = RackIsolationTests.rack((try? RackIsolationTests.status(port)) ?? [:])["cycles"] as? Int ?? 0
        // Running again: its counter moves past what it was at SIGCONT (beats come every 2 s).
        #expect(TestEnvironment.waitUntil(timeout: 8) {
            (RackIsolationTests.rack((try? RackIsolationTests.status(port)) ?? [:])["cycles"] as? Int ?? 0) > resumed
        }, "\(run.output)")
        let rack = RackIsolationTests.rack(try RackIsolationTests.status(port))
        #expect(RackIsolationTests.rackPid(port) == pid, "the rack's process was replaced: \(rack)\n\(run.output)")
        #expect((rack["hangs"] as? Int ?? 0) == 0 && (rack["crashes"] as? Int ?? 0) == 0, "\(rack)")
        #expect(!run.output.contains("hung"), "\(run.output)")
    }

    /// SIGTERM to `tandem record` while its server is stopped: the process ends within 3 s (it blocked in
    /// `jack_deactivate` for as long as the server stayed stopped), and the take's file and report are complete:
    /// ended "stopped", the report's frames are the file's, and the file opens.
    @Test func sigtermEndsTheProcessWhileTheServerIsPaused() throws {
        let server = try TestEnvironment.server("pauseterm")
        defer {
            server.process.signal(SIGCONT)
            server.stop()
        }
        let dir = TestEnvironment.temporaryDirectory("pauseterm")
        let t = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--session", "paused"], server: server,
                                  log: dir.appendingPathComponent("record.log").path)
        defer { t.process.stop(SIGKILL, grace: 0) }
        #expect(t.waitFor(" recording: ", timeout: 5), "\(t.output)")
        // Some audio in the file before the pause.
        let audio = try #require(announcedFile(t.output))
        #expect(TestEnvironment.waitUntil(timeout: 5) {
            ((try? FileManager.default.attributesOfItem(atPath: audio)[.size] as? Int) ?? 0) > 16_384
        })
        server.process.signal(SIGSTOP)
        let sent = Date()
        t.process.signal(SIGTERM)
        let code = t.process.wait(timeout: 3)
        let took = Date().timeIntervalSince(sent)
        #expect(code != nil, "SIGTERM with the server stopped: still running after 3 s\n\(t.output)\n\(hangReport(t.process.pid))")
        print("SIGTERM with the server stopped: ended in \(String(format: "%.2f", took)) s, code \(String(describing: code))")
        let path = try #require(announcedReport(t.output) ?? firstReport(dir), "\(t.output)")
        let r = try TakeReport.read(from: path)
        #expect(r.ended == .stopped && r.frames > 0, "\(r.ended) \(r.frames)")
        let file = try #require(r.chunks.first?.files.first)
        #expect(try SoundFileReader(path: file).frames == r.frames)
    }

    func firstReport(_ dir: URL) -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.first { $0.hasSuffix(".json") }.map { dir.appendingPathComponent($0).path }
    }

    /// A stop held up by a disk that does not answer (the writer stalled for 30 s by the fault hook): a second
    /// SIGTERM ends the process at once, 128 + 15, and says so (it was ignored: only SIGKILL ended such a process).
    @Test func aSecondSigtermEndsAStopTheDiskHoldsUp() throws {
        let server = try TestEnvironment.server("secondterm")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("secondterm")
        let t = try TandemProcess(["record", "-c", "1", "-d", dir.path], server: server,
                                  extraEnvironment: ["TANDEM_FAULT_STALL_WRITER": "0.2:30"],
                                  log: dir.appendingPathComponent("record.log").path)
        defer { t.process.stop(SIGKILL, grace: 0) }
        #expect(t.waitFor("stalling the disk writer", timeout: 5), "\(t.output)")
        t.process.signal(SIGTERM)
        #expect(t.process.wait(timeout: 0.5) == nil, "the first stop waits for the disk")
        let sent = Date()
        t.process.signal(SIGTERM)
        let code = t.process.wait(timeout: 2)
        print("a second SIGTERM while the disk stalls: ended in \(String(format: "%.2f", Date().timeIntervalSince(sent))) s")
        #expect(code == 128 + SIGTERM && t.output.contains("a second SIGTERM while stopping"), "\(String(describing: code))\n\(t.output)")
    }

    /// The same for `run` with a recorder and an isolated rack beside it: the rack's process ends by its own bound,
    /// the session by its, and the whole is gone within 3 s with the take's report complete.
    @Test(.enabled(if: RackTests.hasSWH))
    func sigtermEndsARunWithAnIsolatedRackWhileTheServerIsPaused() throws {
        let server = try TestEnvironment.server("pauserun")
        defer {
            server.process.signal(SIGCONT)
            server.stop()
        }
        let dir = TestEnvironment.temporaryDirectory("pauserun")
        let port = 36000 + Int((getpid() + 977) % 20000)
        let path = try RackIsolationTests.isolatedRackPreset("pausedrun", dir: dir, port: port,
                                                              plugin: "uri = \"\(RackTests.amp)\"",
                                                              extra: "[recorder]\nchannels = 1\nstart = \"immediately\"\n")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        defer { run.process.stop(SIGKILL, grace: 0) }
        #expect(run.waitFor(" recording: ", timeout: 10), "\(run.output)")
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            RackIsolationTests.rack((try? RackIsolationTests.status(port)) ?? [:])["running"] as? Bool == true
        }, "\(run.output)")
        let rackPid = RackIsolationTests.rackPid(port)
        server.process.signal(SIGSTOP)
        let sent = Date()
        run.process.signal(SIGTERM)
        let code = run.process.wait(timeout: 3)
        print("SIGTERM to run with an isolated rack, the server stopped: ended in \(String(format: "%.2f", Date().timeIntervalSince(sent))) s")
        #expect(code == 0, "\(String(describing: code))\n\(run.output)")
        #expect(rackPid > 0 && kill(rackPid, 0) != 0, "the rack's process \(rackPid) is gone")
        let report = try #require(firstReport(dir))
        #expect(try TakeReport.read(from: report).ended == .stopped)
    }
}
