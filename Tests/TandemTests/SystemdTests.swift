import Takes
import Testing
import Foundation
import Engine
import Jack
import Realtime
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `tandem run` under systemd's notification protocol, with the test as systemd: its own datagram socket as
/// `NOTIFY_SOCKET`, `WATCHDOG_USEC` set, the JACK server stopped to stall the real-time side.
@Suite(.serialized) struct SystemdTests {
    func writePreset(_ dir: URL, prefix: String) throws -> String {
        let audio = dir.appendingPathComponent("loop.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 24000, channels: 2), channels: 2, path: audio)
        let path = dir.appendingPathComponent("svc.toml").path
        try """
            [session]
            name = "svc"
            directory = "\(dir.path)"
            [recorder]
            client = "\(prefix)-rec"
            channels = 2
            [player]
            client = "\(prefix)-play"
            channels = 2
            queue = ["\(audio)"]
            loop = "item"
            [[connect]]
            from = "\(prefix)-play:out_*"
            to = "\(prefix)-rec:in_*"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func now() -> Double { Double(monotonicNanoseconds()) / 1e9 }

    /// READY=1 after the connections exist; WATCHDOG=1 every WATCHDOG_USEC/2; none while the JACK server is stopped
    /// (SIGSTOP 3 s), again after SIGCONT; RELOADING=1 then READY=1 around SIGHUP with 0 graph changes for the same
    /// preset; STOPPING=1 on SIGTERM.
    @Test func notifiesReadyWatchdogReloadAndStopping() throws {
        let server = try TestEnvironment.server("sdnotify")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("sdnotify")
        let prefix = "sd\(getpid() % 100000)"
        let preset = try writePreset(dir, prefix: prefix)
        let socketName = "@tandem-test-notify-\(getpid())-\(UUID().uuidString.prefix(8))"
        let listener = try NotifyListener(socketName)
        let observer = try JackClient(name: "sd-observer", server: server.name)
        defer { observer.close() }
        func graph() -> [String: [String]] {
            var out: [String: [String]] = [:]
            for p in observer.ports(matching: "^\(prefix)-") { out[p] = observer.connections(of: p).sorted() }
            return out
        }
        let wanted = ["\(prefix)-play:out_1": ["\(prefix)-rec:in_1"], "\(prefix)-play:out_2": ["\(prefix)-rec:in_2"],
                      "\(prefix)-rec:in_1": ["\(prefix)-play:out_1"], "\(prefix)-rec:in_2": ["\(prefix)-play:out_2"]]

        let tandem = try TandemProcess(["run", preset, "--no-view", "--control-port", "0"], server: server,
                                       extraEnvironment: ["NOTIFY_SOCKET": socketName, "WATCHDOG_USEC": "1000000"],
                                       log: dir.appendingPathComponent("run.log").path)
        defer { if tandem.process.isRunning { _ = tandem.process.stop(SIGKILL) } }

        // READY=1, and the connections are there the moment it arrives.
        var first: [String] = []
        var graphAtReady: [String: [String]] = [:]
        let deadline = Self.now() + 15
        while Self.now() < deadline, !first.contains(where: { $0.split(separator: "\n").contains("READY=1") }) {
            if let m = listener.receive(timeout: 0.5) {
                first.append(m)
                if m.split(separator: "\n").contains("READY=1") { graphAtReady = graph() }
            }
        }
        #expect(first.contains { $0.hasPrefix("READY=1\nSTATUS=") }, "\(first)\n\(tandem.output)")
        #expect(graphAtReady == wanted, "graph when READY=1 arrived: \(graphAtReady)")
        #expect(!first.contains { $0.contains("WATCHDOG=1") }, "no ping before READY: \(first)")

        listener.startCollecting()
        // The watchdog rate: 1 s configured, so a ping every 0.5 s.
        usleep(3_200_000)
        let steady = listener.messages.filter { $0.text == "WATCHDOG=1" }.map(\.at)
        let gaps = zip(steady.dropFirst(), steady).map { $0 - $1 }
        #expect(steady.count >= 5 && steady.count <= 8, "\(steady.count) pings in 3.2 s")
        #expect(gaps.allSatisfy { $0 > 0.45 && $0 < 0.65 }, "gaps \(gaps)")
        let status = listener.messages.filter { $0.text.hasPrefix("STATUS=") }.map(\.text)
        #expect(status.contains { $0.contains("recording take 1") && $0.contains("xruns") }, "\(status)")

        // The JACK server stops for 3 s: its cycles stop, and so do the pings.
        server.process.signal(SIGSTOP)
        let stopped = Self.now()
        usleep(3_000_000)
        server.process.signal(SIGCONT)
        let resumed = Self.now()
        #expect(TestEnvironment.waitUntil(timeout: 5) {
            listener.messages.contains { $0.text == "WATCHDOG=1" && $0.at > resumed }
        }, "pings come back after SIGCONT\n\(tandem.output)")
        let during = listener.messages.filter { $0.text == "WATCHDOG=1" && $0.at > stopped + 0.6 && $0.at < resumed }
        #expect(during.isEmpty, "pings while the server was stopped, at \(during.map { $0.at - stopped }) s")
        let lastBefore = listener.messages.filter { $0.text == "WATCHDOG=1" && $0.at < resumed }.last.map { $0.at - stopped }
        let firstAfter = listener.messages.first { $0.text == "WATCHDOG=1" && $0.at > resumed }.map { $0.at - resumed }
        #expect(tandem.process.isRunning)

        // SIGHUP with the same preset: RELOADING=1, then READY=1 saying 0 graph changes; the graph is as it was.
        let before = graph()
        let hup = Self.now()
        tandem.process.signal(SIGHUP)
        #expect(TestEnvironment.waitUntil(timeout: 5) {
            listener.messages.contains { $0.at > hup && $0.text.hasPrefix("READY=1") }
        }, "\(tandem.output)")
        let reload = listener.messages.filter { $0.at > hup && !$0.text.hasPrefix("WATCHDOG") && !$0.text.hasPrefix("STATUS") }
        #expect(reload.count >= 2 && reload[0].text.hasPrefix("RELOADING=1\nMONOTONIC_USEC="), "\(reload.map(\.text))")
        #expect(reload.count >= 2 && reload[1].text.hasPrefix("READY=1\nSTATUS=reloaded: 0 graph changes"),
                "\(reload.map(\.text))")
        #expect(graph() == before && before == wanted)
        #expect(tandem.output.contains("reloaded \(preset): 0 graph changes"), "\(tandem.output)")

        let term = Self.now()
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output)")
        #expect(TestEnvironment.waitUntil(timeout: 2) {
            listener.messages.contains { $0.at > term && $0.text.hasPrefix("STOPPING=1") }
        })
        listener.stop()
        let all = listener.messages.filter { $0.text == "WATCHDOG=1" && $0.at < stopped }.map(\.at)
        let mean = all.count > 1 ? (all[all.count - 1] - all[0]) / Double(all.count - 1) : 0
        try? """
            watchdog: WATCHDOG_USEC=1000000, mean ping interval \(String(format: "%.3f", mean)) s over \(all.count) pings; \
            last ping \(String(format: "%.2f", lastBefore ?? -1)) s after SIGSTOP, none for the rest of the 3 s stop; \
            first ping \(String(format: "%.2f", firstAfter ?? -1)) s after SIGCONT

            """.write(toFile: "/tmp/tandem-watchdog-measurement.txt", atomically: true, encoding: .utf8)
    }

    /// A server that is not up yet: STATUS says so and EXTEND_TIMEOUT_USEC stretches the start timeout over
    /// server_wait; READY=1 follows once the server is there and the preset applied.
    @Test func waitingForTheServerIsToldAndExtendsTheStartTimeout() throws {
        let name = JackServer.uniqueName("t-sdwait")
        let dir = TestEnvironment.temporaryDirectory("sdwait")
        var preset = try writePreset(dir, prefix: "sdw\(getpid() % 100000)")
        let text = try String(contentsOfFile: preset, encoding: .utf8)
            .replacingOccurrences(of: "[session]\n", with: "[session]\nserver = \"\(name)\"\nserver_wait = 120\n")
        preset = dir.appendingPathComponent("wait.toml").path
        try text.write(toFile: preset, atomically: true, encoding: .utf8)
        let socketName = "@tandem-test-wait-\(getpid())-\(UUID().uuidString.prefix(8))"
        let listener = try NotifyListener(socketName)
        let log = dir.appendingPathComponent("run.log").path
        let tandem = try ChildProcess([TestEnvironment.product("tandem"), "run", preset, "--no-view", "--control-port", "0"],
                                      environment: ["NOTIFY_SOCKET": socketName, "JACK_NO_START_SERVER": "1"],
                                      outputPath: log)
        defer { if tandem.isRunning { _ = tandem.stop(SIGKILL) } }
        func output() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        let waiting = try #require(listener.receive(timeout: 10), "\(output())")
        #expect(waiting == "STATUS=waiting for JACK server '\(name)' (up to 120 s)\nEXTEND_TIMEOUT_USEC=150000000")
        let server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        var ready: String?
        let deadline = Date().addingTimeInterval(10)
        while ready == nil, Date() < deadline {
            if let m = listener.receive(timeout: 0.5), m.hasPrefix("READY=1") { ready = m }
        }
        #expect(ready != nil, "\(output())")
        tandem.signal(SIGTERM)
        #expect(tandem.wait(timeout: 15) == 0)
    }

    /// A NOTIFY_SOCKET that does not exist: one clear log line, and the session records as ever.
    @Test func aMissingNotifySocketIsOneLogLineAndTheSessionGoesOn() throws {
        let server = try TestEnvironment.server("sdmissing")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("sdmissing")
        let preset = try writePreset(dir, prefix: "sdm\(getpid() % 100000)")
        let missing = dir.appendingPathComponent("no-such-notify-socket").path
        let tandem = try TandemProcess(["run", preset, "--no-view", "--control-port", "0"], server: server,
                                       extraEnvironment: ["NOTIFY_SOCKET": missing, "WATCHDOG_USEC": "400000"],
                                       log: dir.appendingPathComponent("run.log").path)
        #expect(tandem.waitFor("take 1 recording"), "\(tandem.output)")
        usleep(2_000_000)                       // ~10 pings and a status that all fail
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output)")
        let lines = tandem.output.split(separator: "\n").filter { $0.contains(missing) }
        #expect(lines.count == 1 && lines[0].contains("does not exist"), "\(lines)")
        let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
        #expect(report.frames > 48000 && report.droppedFrames == 0)
    }

    /// Log lines carry journald priorities when stderr is the stream JOURNAL_STREAM names, and only then.
    @Test func logLinesCarryJournalPrioritiesWhenStderrIsTheJournal() throws {
        let server = try TestEnvironment.server("sdjournal")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("sdjournal")
        let preset = try writePreset(dir, prefix: "sdj\(getpid() % 100000)")
        for matching in [true, false] {
            let log = dir.appendingPathComponent("run-\(matching).log").path
            #expect(FileManager.default.createFile(atPath: log, contents: nil))
            var st = stat()
            #expect(stat(log, &st) == 0)
            let stream = matching ? "\(st.st_dev):\(st.st_ino)" : "\(st.st_dev):\(st.st_ino + 1)"
            let tandem = try TandemProcess(["run", preset, "--no-view", "--control-port", "0"],
                                           server: server, extraEnvironment: ["JOURNAL_STREAM": stream], log: log)
            #expect(tandem.waitFor(" recording: "), "\(tandem.output)")
            tandem.process.signal(SIGHUP)           // an info line ("reloaded …")
            #expect(tandem.waitFor("reloaded"), "\(tandem.output)")
            tandem.process.signal(SIGTERM)
            #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output)")
            let logLines = tandem.output.split(separator: "\n").filter { $0.contains("tandem.session :") }
            #expect(!logLines.isEmpty, "\(tandem.output)")
            if matching {
                #expect(logLines.allSatisfy { $0.hasPrefix("<6>info tandem.session :") || $0.hasPrefix("<4>warning ") },
                        "\(logLines)")
            } else {
                #expect(logLines.allSatisfy { !$0.hasPrefix("<") && $0.contains(" info tandem.session :") }, "\(logLines)")
            }
        }
    }
}
