@testable import Coordinator
import Presets
import Foundation
import Realtime
import Synchronization
import TestSupport
@testable import WebAPI
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP server of a session that runs nothing (no JACK): a `Session` owned by a control thread of the harness,
/// which carries out the server's work as a session's loop does, and a plain-socket client. For what the server
/// itself does with requests (limits, framing, headers, access) in seconds.
final class ServerHarness: @unchecked Sendable {
    let server: HTTPServer
    let port: Int
    let client: HTTPTestClient
    private let wake = Wakeup.allocate()
    private let stopping = Flag()
    /// The longest turn of the control thread's work for the server so far, in nanoseconds (see `longestTurn`).
    private let longestTickNanos = Longest()
    private let stopped = DispatchSemaphore(value: 0)
    /// Set once by the control thread before `init` returns.
    private var directory: String?

    /// `configure` adjusts the server's configuration; `sessionDirectory`: a preset whose session folder is this
    /// (takes, presets, favourites), else no preset at all; `prepare` is given the session on its control thread
    /// before the server starts (scenes, say); `events`: the session's events go to the event stream each turn, as a
    /// session's loop sends them.
    init(token: String? = nil, origins: [String] = [], host: String = "127.0.0.1",
         sessionDirectory: String? = nil, metrics: MetricsSource? = nil,
         configure: (inout HTTPServer.Configuration) -> Void = { _ in },
         events: Bool = false, prepare: @escaping @Sendable (Session) -> Void = { _ in }) throws {
        var configuration = HTTPServer.Configuration(address: HTTPAddress(host: host, port: 0),
                                                     access: HTTPAccess(token: token, origins: origins))
        configure(&configuration)
        let ready = DispatchSemaphore(value: 0)
        let journal = Mutex<EventJournal?>(nil)
        let wake = self.wake, stopping = self.stopping, stopped = self.stopped, longest = self.longestTickNanos
        let serverBox = Mutex<HTTPServer?>(nil)
        let thread = Thread {
            let session = Session()
            if let sessionDirectory {
                var preset = Preset()
                preset.session.directory = sessionDirectory
                session.preset = preset
            }
            prepare(session)
            journal.withLock { $0 = session.journal }
            ready.signal()
            var server: HTTPServer?
            while !stopping.value.load(ordering: .acquiring) {
                _ = wake.wait(seconds: 0.01)
                if server == nil { server = serverBox.withLock { $0 } }
                let t = DispatchTime.now().uptimeNanoseconds
                server?.tick(session)
                if events { _ = session.drainNumberedEvents() }
                longest.note(Int(DispatchTime.now().uptimeNanoseconds - t))
            }
            stopped.signal()
        }
        thread.start()
        ready.wait()
        let s = HTTPServer(configuration: configuration, wake: wake, journal: journal.withLock { $0! }, metrics: metrics)
        serverBox.withLock { $0 = s }
        server = s
        do {
            port = try s.start()
        } catch {
            stopping.value.store(true, ordering: .releasing)
            stopped.wait()
            throw error
        }
        var c = HTTPTestClient(port: port, token: token)
        c.host = host
        client = c
    }

    func stop() {
        server.stop()
        stopping.value.store(true, ordering: .releasing)
        wake.post()
        stopped.wait()
    }

    final class Flag: Sendable { let value = Atomic<Bool>(false) }

    final class Longest: Sendable {
        let value = Atomic<Int>(0)
        func note(_ n: Int) {
            var seen = value.load(ordering: .relaxed)
            while n > seen {
                let (done, now) = value.compareExchange(expected: seen, desired: n, ordering: .relaxed)
                if done { break }
                seen = now
            }
        }
    }

    /// The longest the control thread spent on the server's work in one turn (what a session's loop would be held
    /// for), in seconds, since the last `resetLongestTurn`.
    var longestTurn: Double { Double(longestTickNanos.value.load(ordering: .relaxed)) / 1e9 }
    func resetLongestTurn() { longestTickNanos.value.store(0, ordering: .relaxed) }

    /// Seconds `body` took.
    static func time(_ body: () -> Void) -> Double {
        let t = Date()
        body()
        return Date().timeIntervalSince(t)
    }
}
