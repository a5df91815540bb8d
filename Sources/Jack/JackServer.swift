#if canImport(Glibc)
import Glibc
#endif
import CJack
import Foundation
import Synchronization
import Realtime

/// A private JACK server (`jackd -n NAME -d dummy`) that this process starts, owns and stops.
///
/// A watchdog shell holds the read end of a pipe whose write end only this process holds: when this process exits
/// for any reason, even a crash, the pipe closes and the watchdog sends SIGTERM to the server. No server is left
/// behind.
///
/// Threads: one owner (control side).
// @unchecked Sendable: `name`, the rates, `logPath` and the children's pids are constants; `watchdogPipe` and the
// children's reaped state change only in `stop`, `kill9` and `deinit`, on the one owner's thread.
public final class JackServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let period: Int
    /// The jackd process.
    public let process: ChildProcess
    private let watchdog: ChildProcess
    private var watchdogPipe: Int32
    /// Where jackd's output goes.
    public let logPath: String

    /// Starts `jackd -n name [-R|-r] -d dummy -r rate -p period -C capture -P playback` and waits until a client can
    /// connect.
    public init(name: String, sampleRate: Int = 48000, period: Int = 256, realtime: Bool = false,
                capturePorts: Int = 2, playbackPorts: Int = 2, logPath: String? = nil,
                readyTimeout: Double = 10) throws {
        self.name = name
        self.sampleRate = sampleRate
        self.period = period
        self.logPath = logPath ?? "/tmp/tandem-jackd-\(name).log"
        process = try ChildProcess(
            ["jackd", "-n", name, realtime ? "-R" : "-r", "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)",
             "-C", "\(capturePorts)", "-P", "\(playbackPorts)"],
            environment: ["JACK_NO_AUDIO_RESERVATION": "1"], outputPath: self.logPath)

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 else {
            process.stop()
            throw ChildProcessError(message: "cannot create the watchdog pipe for jackd '\(name)'")
        }
        watchdogPipe = fds[1]
        do {
            watchdog = try ChildProcess(["/bin/sh", "-c", "read _ ; kill -TERM \(process.pid) 2>/dev/null"],
                                        stdinFD: fds[0])
        } catch {
            Glibc.close(fds[0])
            Glibc.close(fds[1])
            process.stop()
            throw error
        }
        Glibc.close(fds[0])

        let deadline = Date().addingTimeInterval(readyTimeout)
        while !JackServer.probe(name) {
            if !process.isRunning || Date() >= deadline {
                let log = (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? ""
                stop()
                throw ChildProcessError(message: "jackd '\(name)' did not become ready: \(log.suffix(600))")
            }
            usleep(20_000)
        }
    }

    /// The name libjack uses for `server`: itself, else `$JACK_DEFAULT_SERVER`, else "default".
    public static func effectiveName(_ server: String?) -> String {
        if let server, !server.isEmpty { return server }
        if let env = ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"], !env.isEmpty { return env }
        return "default"
    }

    /// Whether libjack can be handed `name` as a server name (a longer one overflows a buffer inside it).
    public static func isUsableName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= JackNames.serverBytes && !name.utf8.contains(0)
    }

    /// Whether a client named `client` is on the server named `name` (false when the server cannot be reached).
    public static func hasClient(named client: String, on name: String) -> Bool {
        guard isUsableName(name) else { return false }
        var status = jack_status_t(0)
        let options = jack_options_t(JackNoStartServer.rawValue)
        guard let c = JackClients.open("tandem-probe", options: options, status: &status, server: name) else {
            return false
        }
        defer { jack_client_close(c) }
        guard let uuid = client.withCString({ jack_get_uuid_for_client_name(c, $0) }) else { return false }
        jack_free(uuid)
        return true
    }

    /// Stops the server with SIGTERM (SIGKILL after a grace period), reaps it and the watchdog.
    public func stop() {
        process.stop(SIGTERM, grace: 5)
        watchdog.stop(SIGKILL, grace: 1)
        if watchdogPipe >= 0 {
            Glibc.close(watchdogPipe)
            watchdogPipe = -1
        }
    }

    /// Kills the server hard (to simulate a crash) without stopping the watchdog.
    public func kill9() {
        process.stop(SIGKILL, grace: 1)
    }

    deinit { stop() }

    /// Whether this machine lets a process use real-time scheduling (root, or an rtprio limit): then private
    /// servers run with `-R`, where a late cycle is much rarer than with `-r`.
    public static let realtimeAllowed: Bool = {
        guard let p = try? ChildProcess(["chrt", "-f", "1", "true"]) else { return false }
        return p.wait(timeout: 5) == 0
    }()

    /// A server name unique to this process and call, for tests and private demo servers.
    public static func uniqueName(_ prefix: String) -> String {
        counter.withLock { n in
            n += 1
            return "\(prefix)-\(getpid())-\(n)"
        }
    }
    private static let counter = Mutex(0)
}
