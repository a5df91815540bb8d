import Foundation
import Jack
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A `tandem` child whose standard streams the test chooses: a pipe, /dev/full, a pty (then in a new session with the
/// pty as its controlling terminal, so closing the master hangs it up), a file. A `ChildProcess` underneath; this only
/// adds the environment every such test wants.
final class RawChild {
    typealias Stream = ChildProcess.Stream
    let child: ChildProcess
    var pid: pid_t { child.pid }

    init(_ arguments: [String], stdin: Stream = .path("/dev/null", O_RDONLY), stdout: Stream, stderr: Stream,
         server: JackServer?, environment: [String: String] = [:]) throws {
        func created(_ s: Stream) -> Stream {
            if case .path(let p, let flags) = s { return .path(p, flags | O_CREAT) }
            return s
        }
        // No backtracer: a trap ends the process at once (exit 132/133), not seconds later while it symbolicates.
        var env = ["SWIFT_BACKTRACE": "enable=no"]
        if let server { env["JACK_DEFAULT_SERVER"] = server.name; env["JACK_NO_START_SERVER"] = "1" }
        for (k, v) in environment { env[k] = v }
        child = try ChildProcess(arguments, streams: [0: created(stdin), 1: created(stdout), 2: created(stderr)],
                                 environment: env)
    }

    func signal(_ sig: Int32) { child.signal(sig) }
    var isRunning: Bool { child.isRunning }
    /// Exit code (128 + signal when killed), or nil on time-out.
    func wait(timeout: Double) -> Int32? { child.wait(timeout: timeout) }
    var exitCode: Int32? { child.exitCode }
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
