#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Jack

/// A private headless PipeWire daemon serving JACK clients through pipewire-jack's libjack (docs/RELIABILITY.md,
/// PipeWire). Config: `Tests/Fixtures/pipewire/tandem-test.conf`; a private `XDG_RUNTIME_DIR` isolates it (PipeWire's
/// libjack ignores `JACK_DEFAULT_SERVER`). Clients started with `environment` load PipeWire's libjack instead of
/// jackd2's (`LD_LIBRARY_PATH`), so the same `tandem` binary runs unchanged on it.
///
/// A watchdog shell stops the daemon when this process dies, as for `JackServer`. Threads: one owner.
// @unchecked Sendable: `process`, `watchdog` and `watchdogPipe` change only in `start` and `stop`, on the one owner's
// thread (a test's); the rest is constant.
public final class PipeWireServer: @unchecked Sendable {
    /// Where PipeWire's libjack lives on Debian (pipewire-jack).
    public static let jackLibraryDirectory = "/usr/lib/x86_64-linux-gnu/pipewire-0.3/jack"

    /// This daemon's folder: runtime directory, config, log.
    public let folder: URL
    public let logPath: String
    public private(set) var process: ChildProcess?
    private var watchdog: ChildProcess?
    private var watchdogPipe: Int32 = -1

    /// The config file the project carries (found from this source file's place).
    public static var configPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/Fixtures/pipewire/tandem-test.conf").path
    }

    /// Why PipeWire cannot be run here, or nil (pipewire, pw-metadata and PipeWire's libjack installed; root, as the
    /// config runs the daemon without a user session).
    public static let unavailableReason: String? = {
        if getuid() != 0 { return "the headless test daemon runs as root" }
        for program in ["pipewire", "pw-metadata"] where !TestEnvironment.hasProgram(program) {
            return "'\(program)' is not installed (apt-get install pipewire pipewire-bin pipewire-jack)"
        }
        if !FileManager.default.fileExists(atPath: jackLibraryDirectory + "/libjack.so.0") {
            return "PipeWire's libjack is not installed (apt-get install pipewire-jack)"
        }
        return nil
    }()

    public static var available: Bool { unavailableReason == nil }

    /// The environment for every client of this daemon (and for the daemon itself).
    public var environment: [String: String] {
        ["XDG_RUNTIME_DIR": folder.appendingPathComponent("run").path,
         "XDG_CONFIG_HOME": folder.appendingPathComponent("config").path,
         "PIPEWIRE_RUNTIME_DIR": folder.appendingPathComponent("run").path,
         "PIPEWIRE_REMOTE": "pipewire-0",
         "LD_LIBRARY_PATH": Self.jackLibraryDirectory,
         "JACK_DEFAULT_SERVER": "", "JACK_NO_START_SERVER": "1", "DBUS_SESSION_BUS_ADDRESS": "",
         "PIPEWIRE_LOG_SYSTEMD": "false"]
    }

    public init(_ label: String) throws {
        folder = TestEnvironment.temporaryDirectory("pw-\(label)")
        logPath = folder.appendingPathComponent("pipewire.log").path
        for sub in ["run", "config"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        try start()
    }

    /// Starts the daemon (again, in the same folder after `stop`) and waits until JACK clients see its ports.
    public func start() throws {
        let p = try ChildProcess(["pipewire", "-c", Self.configPath], environment: environment, outputPath: logPath)
        process = p
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 else {
            p.stop()
            throw FixtureError( "cannot create the watchdog pipe for pipewire")
        }
        watchdogPipe = fds[1]
        watchdog = try? ChildProcess(["/bin/sh", "-c", "read _ ; kill -TERM \(p.pid) 2>/dev/null"], stdinFD: fds[0])
        Glibc.close(fds[0])
        // Fix the quantum (else a client's jack_set_buffer_size changes the graph), then wait for system:*.
        let ready = TestEnvironment.waitUntil(timeout: 10) {
            guard p.isRunning,
                  let q = try? TestEnvironment.run(["pw-metadata", "-n", "settings", "0", "clock.force-quantum", "256"],
                                                   environment: environment, timeout: 5), q.code == 0,
                  let lsp = try? TestEnvironment.run(["jack_lsp"], environment: environment, timeout: 5)
            else { return false }
            return lsp.output.contains("system:capture_1")
        }
        if !ready {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            stop()
            throw FixtureError( "pipewire did not become ready: \(log.suffix(600))")
        }
    }

    /// Stops the daemon with `signal` (SIGTERM: every client gets its shutdown callback; SIGKILL: a crash).
    public func stop(_ signal: Int32 = SIGTERM) {
        process?.stop(signal, grace: 5)
        process = nil
        watchdog?.stop(SIGKILL, grace: 1)
        watchdog = nil
        if watchdogPipe >= 0 {
            Glibc.close(watchdogPipe)
            watchdogPipe = -1
        }
    }

    /// Starts a client program of this daemon.
    public func spawn(_ arguments: [String], log: String) throws -> ChildProcess {
        try ChildProcess(arguments, environment: environment, outputPath: log)
    }

    /// Runs a client program of this daemon to completion.
    @discardableResult
    public func run(_ arguments: [String], timeout: Double = 30) throws -> (code: Int32, output: String) {
        try TestEnvironment.run(arguments, environment: environment, timeout: timeout)
    }

    deinit { stop() }
}
