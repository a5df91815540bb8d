import Foundation
import Takes
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The pre-auth lockout, against the real program (issue 44, item 1): 1,000 idle TCP connections opened to a
/// recording session's HTTP port while a status poller asks every 100 ms. Every status is answered within a second
/// and the take recorded meanwhile is every frame of its source, in order.
@Suite(.serialized) struct IdleConnectionTakeTests {
    /// Opens a TCP connection to 127.0.0.1:`port` without waiting for it, and sends nothing.
    static func idle(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return fd
    }

    @Test func statusIsAnsweredAndTheTakeIsWholeUnderAThousandIdleConnections() throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < 4096 && limit.rlim_max > limit.rlim_cur {
            limit.rlim_cur = min(limit.rlim_max, 4096)
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        let server = try TestEnvironment.server("idle-take")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("idle-take")
        let noise = try LoopedNoise(dir: dir, channels: 2, seconds: 1)
        let source = try TandemProcess(["play", "--client", "idle-src", "--loop", "item", noise.path], server: server,
                                       log: dir.appendingPathComponent("src.log").path)
        defer { source.process.signal(SIGTERM); _ = source.process.wait(timeout: 10) }
        #expect(source.waitFor("playing 1/1"), "\(source.output)")
        let port = Int.random(in: 20000...40000)
        let rec = try TandemProcess(["record", "--client", "idle-rec", "-c", "2", "-d", dir.path, "-t", "8",
                                     "--http", "127.0.0.1:\(port)", "--connect", "idle-src:out_.*"],
                                    server: server, log: dir.appendingPathComponent("rec.log").path)
        defer { if rec.process.isRunning { _ = rec.process.stop(SIGKILL) } }
        #expect(rec.waitFor(" recording: ", timeout: 15), "\(rec.output)")
        #expect(rec.waitFor("HTTP API listening", timeout: 5), "\(rec.output)")
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        var slowest = 0.0
        var answered = 0, asked = 0
        let until = Date().addingTimeInterval(5)
        while Date() < until {
            // The idle connections arrive over the first two seconds, 100 at a time, between two status polls.
            if sockets.count < 1000 { for _ in 0..<100 { sockets.append(Self.idle(port)) } }
            let started = Date()
            let r = try TestEnvironment.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "3",
                                             "http://127.0.0.1:\(port)/api/status"], timeout: 5)
            asked += 1
            if r.output.hasPrefix("200") { answered += 1 }
            slowest = max(slowest, Date().timeIntervalSince(started))
            usleep(100_000)
        }
        let opened = sockets.filter { $0 >= 0 }.count
        print("measured: \(opened) idle connections; status answered \(answered) of \(asked), slowest "
              + String(format: "%.3f", slowest) + " s (curl's whole run)")
        #expect(opened == 1000)
        #expect(answered == asked && slowest < 1, "answered \(answered) of \(asked), slowest \(slowest) s")
        #expect(rec.process.wait(timeout: 20) == 0, "\(rec.output)")
        let report = try #require(TakeCheck.reports(in: dir.path).first)
        let check = TakeCheck.verify(report: report, source: noise.index, ended: [.durationReached])
        #expect(check.problems.isEmpty, "\(check.problems)")
        #expect(check.audio.discontinuities == 0 && check.frames == 8 * 48000, "\(check.audio), \(check.frames) frames")
    }
}
