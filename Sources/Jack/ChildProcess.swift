import CJack
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A child process started with `posix_spawn`, with an empty signal mask and default signal actions.
///
/// Why not Foundation.Process: a child inherits the spawning thread's signal mask, and test threads (or our own
/// signal-handling setup) block SIGTERM/SIGINT, so children started that way ignore the stop signal and hang.
///
/// Threads: one owner (control side). Not thread-safe.
// @unchecked Sendable: `pid` and `arguments` are constants; `exitStatus`, the one var, is set when the child is reaped
// (`isRunning`, `wait`, `stop`), only on the thread that owns the object (it is handed over, never shared).
public final class ChildProcess: @unchecked Sendable {
    /// The name of a signal that ends a child (a crashing plugin's, a killed one's) or stops a run, for messages and
    /// reports, which give the number beside it ("signal 2 (SIGINT)": never "signal 2 (signal 2)").
    public static func signalName(_ sig: Int32) -> String {
        switch sig {
        case SIGINT: return "SIGINT"
        case SIGHUP: return "SIGHUP"
        case SIGQUIT: return "SIGQUIT"
        case SIGPIPE: return "SIGPIPE"
        case SIGALRM: return "SIGALRM"
        case SIGUSR1: return "SIGUSR1"
        case SIGUSR2: return "SIGUSR2"
        case SIGXCPU: return "SIGXCPU"
        case SIGXFSZ: return "SIGXFSZ"
        case SIGSYS: return "SIGSYS"
        case SIGSEGV: return "SIGSEGV"
        case SIGABRT: return "SIGABRT"
        case SIGBUS: return "SIGBUS"
        case SIGFPE: return "SIGFPE"
        case SIGILL: return "SIGILL"
        case SIGKILL: return "SIGKILL"
        case SIGTERM: return "SIGTERM"
        case SIGTRAP: return "SIGTRAP"
        default: return "an unnamed signal"
        }
    }

    /// Called by a child early: it gets `signal` when the process that started it ends, however that ends (SIGKILL
    /// included). False when the parent is gone already (the child was orphaned before it asked).
    public static func endWithParent(signal: Int32 = SIGTERM) -> Bool {
        _ = tandem_set_parent_death_signal(signal)
        return getppid() != 1
    }

    public let pid: pid_t
    public let arguments: [String]
    private var exitStatus: Int32?

    /// Where one of the child's file descriptors goes.
    public enum Stream: Sendable {
        /// A descriptor of this process, duplicated onto the child's.
        case fd(Int32)
        /// A file opened (created if missing) with these flags.
        case path(String, Int32)
        /// The slave side of a pty, opened as the controlling terminal of a new session (closing the master hangs
        /// the child up).
        case terminal(String)
    }

    /// Spawns `arguments` (the first is looked up in PATH). `environment` entries are added to (or replace) this
    /// process's environment. Standard input is /dev/null unless `stdinFD` is given; stdout and stderr go to
    /// `outputPath` (appended) or /dev/null. `extraFDs`: descriptors of this process the child gets at these numbers
    /// (fd 3 and up: a heartbeat pipe).
    public convenience init(_ arguments: [String], environment: [String: String] = [:], outputPath: String? = nil,
                            stdinFD: Int32? = nil, extraFDs: [Int32: Int32] = [:]) throws {
        let out = outputPath ?? "/dev/null"
        var streams: [Int32: Stream] = [0: stdinFD.map { .fd($0) } ?? .path("/dev/null", O_RDONLY),
                                        1: .path(out, O_WRONLY | O_CREAT | O_APPEND), 2: .fd(-1)]
        for (child, parent) in extraFDs { streams[child] = .fd(parent) }
        try self.init(arguments, streams: streams, environment: environment)
    }

    /// Spawns `arguments` with each listed descriptor of the child set up as given (`.fd(-1)` for 2: the same as 1).
    public init(_ arguments: [String], streams: [Int32: Stream], environment: [String: String] = [:]) throws {
        guard let program = arguments.first else { throw ChildProcessError(message: "no program to start") }
        self.arguments = arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var newSession = false
        for (fd, stream) in streams.sorted(by: { $0.key < $1.key }) {
            switch stream {
            case .fd(let f) where f < 0 && fd == 2: posix_spawn_file_actions_adddup2(&actions, 1, 2)
            case .fd(let f): posix_spawn_file_actions_adddup2(&actions, f, fd)
            case .path(let p, let flags): posix_spawn_file_actions_addopen(&actions, fd, p, flags, 0o644)
            case .terminal(let p):
                newSession = true
                posix_spawn_file_actions_addopen(&actions, fd, p, O_RDWR, 0)
            }
        }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if newSession { flags |= 0x80 }     // POSIX_SPAWN_SETSID (glibc 2.26): the pty becomes the controlling terminal
        posix_spawnattr_setflags(&attr, Int16(flags))

        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let envStrings = env.map { "\($0.key)=\($0.value)" }

        var child = pid_t()
        let rc = ChildProcess.withCStrings(arguments) { argv in
            ChildProcess.withCStrings(envStrings) { envp in
                posix_spawnp(&child, program, &actions, &attr, argv, envp)
            }
        }
        guard rc == 0 else {
            throw ChildProcessError(message: "cannot start '\(program)': \(String(cString: strerror(rc)))")
        }
        pid = child
    }

    private static func withCStrings<R>(_ strings: [String],
                                        _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        // Never empty (the nil terminator), so the base address exists.
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// Sends a signal (no-op once reaped).
    public func signal(_ sig: Int32) {
        if exitStatus == nil { kill(pid, sig) }
    }

    /// Whether the child is still running (reaps it if it has exited).
    public var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            exitStatus = status
            return false
        }
        return r == 0
    }

    /// Waits up to `timeout` seconds for the child to exit. Returns its exit code (128+signal when killed by a
    /// signal), or nil on time-out.
    @discardableResult
    public func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() >= deadline { return nil }
            usleep(5_000)
        }
        return exitCode
    }

    /// The exit code once reaped: the status for a normal exit, 128+signal when killed.
    public var exitCode: Int32? {
        guard let s = exitStatus else { return nil }
        let sig = s & 0x7f
        return sig == 0 ? (s >> 8) & 0xff : 128 + sig
    }

    /// Sends `sig`, waits up to `grace` seconds, then SIGKILLs and reaps. Returns the exit code.
    @discardableResult
    public func stop(_ sig: Int32 = SIGTERM, grace: Double = 5) -> Int32? {
        guard isRunning else { return exitCode }
        signal(sig)
        if let code = wait(timeout: grace) { return code }
        kill(pid, SIGKILL)
        return wait(timeout: 5)
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = wait(timeout: 5)
        }
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
