import Testing
import Foundation
import Control
import Logging
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite struct SystemdNotifyTests {
    let logger = Logger(label: "test.systemd")

    @Test func addressesArePathsOrAbstractNames() throws {
        let path = try NotifyAddress.parse("/run/systemd/notify").get()
        #expect(!path.isAbstract && path.pathBytes == Array("/run/systemd/notify".utf8))
        let abstract = try NotifyAddress.parse("@tandem/notify").get()
        #expect(abstract.isAbstract && abstract.pathBytes == [0] + Array("tandem/notify".utf8))
        for bad in ["", "@", "relative/path", "vsock:2:1234", "/" + String(repeating: "x", count: 200), "/a\u{0}b"] {
            #expect(throws: NotifyError.self, "\(bad.debugDescription)") { try NotifyAddress.parse(bad).get() }
        }
    }

    @Test func watchdogIntervalIsHalfOfWatchdogUsecForThisProcessOnly() {
        #expect(SystemdNotifier.watchdogInterval(usec: "2000000", watchdogPID: nil, pid: 42) == 1.0)
        #expect(SystemdNotifier.watchdogInterval(usec: "2000000", watchdogPID: "42", pid: 42) == 1.0)
        #expect(SystemdNotifier.watchdogInterval(usec: "2000000", watchdogPID: "43", pid: 42) == nil)
        #expect(SystemdNotifier.watchdogInterval(usec: "0", watchdogPID: nil, pid: 42) == nil)
        #expect(SystemdNotifier.watchdogInterval(usec: "-5", watchdogPID: nil, pid: 42) == nil)
        #expect(SystemdNotifier.watchdogInterval(usec: "1e300", watchdogPID: nil, pid: 42) == nil)
        #expect(SystemdNotifier.watchdogInterval(usec: nil, watchdogPID: nil, pid: 42) == nil)
    }

    @Test(arguments: ["path", "abstract"])
    func datagramsReachThePathAndTheAbstractSocket(kind: String) throws {
        let name = kind == "abstract" ? "@tandem-test-\(getpid())-\(UUID().uuidString.prefix(8))"
            : NSTemporaryDirectory() + "tandem-notify-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { if kind == "path" { unlink(name) } }
        let listener = try NotifyListener(name)
        let notifier = try #require(SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": name, "WATCHDOG_USEC": "3000000"],
                                                                    logger: logger))
        #expect(notifier.watchdogInterval == 1.5)
        #expect(notifier.send(["READY=1", "STATUS=line one\nstill line one"]))
        #expect(listener.receive(timeout: 2) == "READY=1\nSTATUS=line one still line one")
        #expect(notifier.reloading())
        let reload = try #require(listener.receive(timeout: 2))
        #expect(reload.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") && UInt64(reload.split(separator: "=").last ?? "") != nil)
    }

    @Test func aMissingSocketIsToldOnceAndTheNotifierGoesOn() throws {
        let name = NSTemporaryDirectory() + "tandem-no-such-socket-\(UUID().uuidString.prefix(8))"
        let notifier = try #require(SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": name], logger: logger))
        for _ in 0..<5 { #expect(!notifier.send("WATCHDOG=1")) }
        #expect(notifier.failed == 5 && notifier.sent == 0)
        let listener = try NotifyListener(name)              // systemd appears after all
        defer { unlink(name) }
        #expect(notifier.send("READY=1"))
        #expect(listener.receive(timeout: 2) == "READY=1")
        #expect(SystemdNotifier.fromEnvironment([:], logger: logger) == nil)
        #expect(SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": "vsock:1:2"], logger: logger) == nil)
    }

    /// Pings every interval while the counters move; none once a counter has stood still past `staleAfter`; at once
    /// when it moves again.
    @Test func theWatchdogGatePingsOnlyWhileEveryEngineCycles() {
        var gate = WatchdogGate(interval: 0.5, periodSeconds: 1024.0 / 48000)
        #expect(gate.staleAfter == 0.5)
        var pings: [Double] = []
        var rec = 0, play = 0
        var t = 0.0
        func run(until end: Double, recMoves: Bool, playMoves: Bool) {
            while t < end {
                if recMoves { rec += 1 }
                if playMoves { play += 1 }
                if gate.check(cycles: [rec, play], now: t) { pings.append(t) }
                t += 0.02
            }
        }
        run(until: 3, recMoves: true, playMoves: true)
        #expect(pings.count == 6, "\(pings)")                    // 0, 0.5, … 2.5
        let beforeStall = pings.count
        run(until: 6, recMoves: true, playMoves: false)          // the player's thread stalls
        #expect(pings.count - beforeStall <= 1 && pings.allSatisfy { $0 < 3.52 }, "\(pings)")
        #expect(gate.isHolding && gate.withheld == 1)
        run(until: 7, recMoves: true, playMoves: true)
        #expect(pings.contains { $0 >= 6 && $0 < 6.05 }, "ping as soon as cycles move again: \(pings)")
        #expect(!gate.isHolding)
        // A session without engines (waiting for its server) is judged by the control loop alone.
        var idle = WatchdogGate(interval: 0.5)
        #expect(idle.check(cycles: [], now: 10) && !idle.check(cycles: [], now: 10.2) && idle.check(cycles: [], now: 10.5))
    }
}
