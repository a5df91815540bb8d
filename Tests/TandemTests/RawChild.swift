import Foundation
import Jack
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A `tandem` child whose standard streams the test chooses: a pipe, /dev/full, a pty (then in a new session with the
/// pty as its controlling terminal, so closing the master hangs it up), a file. Signals and reaping as ChildProcess.
final class RawChild {
    let pid: pid_t
    private var status: Int32?

    enum Stream {
        case fd(Int32)
        case path(String, Int32)
        /// A terminal: the slave side of a pty, opened as the controlling terminal of a new session.
        case terminal(String)
    }

    init(_ arguments: [String], stdin: Stream = .path("/dev/null", O_RDONLY), stdout: Stream, stderr: Stream,
         server: JackServer?, environment: [String: String] = [:]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var newSession = false
        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .fd(let f): posix_spawn_file_actions_adddup2(&actions, f, fd)
            case .path(let p, let flags): posix_spawn_file_actions_addopen(&actions, fd, p, flags | O_CREAT, 0o644)
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
        // No backtracer: a trap ends the process at once (exit 132/133), not seconds later while it symbolicates.
        env["SWIFT_BACKTRACE"] = "enable=no"
        if let server { env["JACK_DEFAULT_SERVER"] = server.name; env["JACK_NO_START_SERVER"] = "1" }
        for (k, v) in environment { env[k] = v }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var child = pid_t()
        let rc = posix_spawnp(&child, arguments[0], &actions, &attr, argv, envp)
        guard rc == 0 else { throw SpawnError(description: "cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
        pid = child
    }

    func signal(_ sig: Int32) { if status == nil { kill(pid, sig) } }

    var isRunning: Bool {
        if status != nil { return false }
        var s: Int32 = 0
        if waitpid(pid, &s, WNOHANG) == pid { status = s; return false }
        return true
    }

    /// Exit code (128 + signal when killed), or nil on time-out.
    func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() >= deadline { return nil }
            usleep(2_000)
        }
        return exitCode
    }

    var exitCode: Int32? {
        guard let s = status else { return nil }
        return s & 0x7f == 0 ? (s >> 8) & 0xff : 128 + (s & 0x7f)
    }

    deinit {
        if isRunning { kill(pid, SIGKILL); _ = wait(timeout: 5) }
    }
}

/// A pty pair: the master stays with the test, the slave's path is given to the child.
struct PseudoTerminal {
    let master: Int32
    let slavePath: String

    init() throws {
        // posix_openpt and friends are not exported by Glibc's module: the same through /dev/ptmx and its ioctls.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, UInt(0x4004_5431) /* TIOCSPTLCK */, &unlock) == 0, ioctl(master, UInt(0x8004_5430) /* TIOCGPTN */, &number) == 0 else {
            throw SpawnError(description: "no pty: \(String(cString: strerror(errno)))")
        }
        slavePath = "/dev/pts/\(number)"
        var size = winsize(ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
    }

    /// Reads what the child wrote so far (non-blocking).
    func drain() -> String {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            var p = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 0) > 0, p.revents & Int16(POLLIN) != 0 else { break }
            let n = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            out += buffer.prefix(n)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Hangs the terminal up, as a closed terminal window or a dropped SSH session does.
    func hangUp() { close(master) }
}

struct SpawnError: Error, CustomStringConvertible {
    let description: String
}
