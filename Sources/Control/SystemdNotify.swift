import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Where systemd listens for a service's notifications: `$NOTIFY_SOCKET`, a Unix datagram socket given as a path
/// (`/run/systemd/notify`) or as an abstract name (`@name`: the `@` stands for the leading NUL byte).
public struct NotifyAddress: Sendable, Equatable {
    /// The bytes of `sun_path` that count (for an abstract name: a NUL byte, then the name, no terminator).
    public let pathBytes: [UInt8]
    public var isAbstract: Bool { pathBytes.first == 0 }

    /// Parses `$NOTIFY_SOCKET`; the error says in words why the value cannot be used.
    public static func parse(_ text: String) -> Result<NotifyAddress, NotifyError> {
        let bytes = Array(text.utf8)
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard let first = bytes.first else { return .failure(NotifyError("NOTIFY_SOCKET is empty")) }
        if bytes.contains(0) { return .failure(NotifyError("NOTIFY_SOCKET contains a NUL byte")) }
        switch first {
        case UInt8(ascii: "/"):
            guard bytes.count < capacity else {
                return .failure(NotifyError("NOTIFY_SOCKET '\(text)' is longer than a socket path may be (\(capacity - 1) bytes)"))
            }
            return .success(NotifyAddress(pathBytes: bytes))
        case UInt8(ascii: "@"):
            guard bytes.count > 1, bytes.count <= capacity else {
                return .failure(NotifyError("NOTIFY_SOCKET '\(text)' is not an abstract socket name of 1 to \(capacity - 1) bytes"))
            }
            return .success(NotifyAddress(pathBytes: [0] + bytes.dropFirst()))
        default:
            return .failure(NotifyError("NOTIFY_SOCKET '\(text)' is neither a path nor an abstract name (@…); "
                                        + "other kinds (vsock:) are not supported"))
        }
    }

    /// Calls `body` with the socket address and its length (abstract names are not NUL-terminated: the length ends
    /// them).
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in pathBytes.enumerated() where i < raw.count { raw[i] = b }
        }
        let length = (MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2) + pathBytes.count
            + (isAbstract ? 0 : 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
        }
    }
}

public struct NotifyError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The service side of systemd's notification protocol (sd_notify(3)), written here instead of linking libsystemd:
/// one datagram of `KEY=VALUE` lines to `$NOTIFY_SOCKET` per call. `READY=1`, `STATUS=…`, `WATCHDOG=1`,
/// `RELOADING=1`, `STOPPING=1` are what Tandem sends.
///
/// A socket that is missing or refuses (no systemd, a wrong path) costs one log line, not the session: later sends
/// keep trying without logging, and one line says when they get through again. Sends never block (a full socket
/// drops that message, as systemd's own client does after its timeout).
///
/// Threads: not thread-safe; the control loop owns it.
public final class SystemdNotifier {
    public let address: NotifyAddress
    /// The text of `$NOTIFY_SOCKET`, for log lines.
    public let socketName: String
    /// How often the watchdog wants a `WATCHDOG=1`: half of `$WATCHDOG_USEC`, as sd_watchdog_enabled(3) advises;
    /// nil when systemd runs no watchdog for this process.
    public let watchdogInterval: Double?
    private let fd: Int32
    private let logger: Logger
    private var failing = false
    /// Datagrams sent and refused since start.
    public private(set) var sent = 0
    public private(set) var failed = 0

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`; nil when there is no
    /// `NOTIFY_SOCKET` (not started by systemd) or it cannot be used (said once in the log).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment,
                                       pid: pid_t = getpid(), logger: Logger) -> SystemdNotifier? {
        guard let name = environment["NOTIFY_SOCKET"] else { return nil }
        let address: NotifyAddress
        switch NotifyAddress.parse(name) {
        case .success(let a): address = a
        case .failure(let e):
            logger.error("systemd notifications off: \(e.message)")
            return nil
        }
        let interval = watchdogInterval(usec: environment["WATCHDOG_USEC"], watchdogPID: environment["WATCHDOG_PID"],
                                         pid: pid)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            logger.error("systemd notifications off: cannot create a datagram socket: \(String(cString: strerror(errno)))")
            return nil
        }
        return SystemdNotifier(address: address, name: name, watchdogInterval: interval, fd: fd, logger: logger)
    }

    /// Half of `usec` microseconds in seconds, when the watchdog is meant for `pid` (sd_watchdog_enabled(3)); nil
    /// when unset, not a positive number, or meant for another process.
    public static func watchdogInterval(usec: String?, watchdogPID: String?, pid: pid_t) -> Double? {
        guard let usec, let micros = UInt64(usec.trimmingCharacters(in: .whitespaces)), micros > 0 else { return nil }
        if let watchdogPID, let owner = Int64(watchdogPID.trimmingCharacters(in: .whitespaces)), owner != Int64(pid) {
            return nil
        }
        return Double(micros) / 2 / 1_000_000
    }

    private init(address: NotifyAddress, name: String, watchdogInterval: Double?, fd: Int32, logger: Logger) {
        self.address = address
        self.socketName = name
        self.watchdogInterval = watchdogInterval
        self.fd = fd
        self.logger = logger
    }

    deinit { close(fd) }

    /// Sends one datagram of `lines` (each `KEY=VALUE`, no newline inside a value). False when it was not sent.
    @discardableResult
    public func send(_ lines: [String]) -> Bool {
        let text = lines.map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "\n")
        let bytes = Array(text.utf8)
        var rc = -1
        repeat {
            rc = address.withSockaddr { addr, length in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), addr, length) }
            }
        } while rc < 0 && errno == EINTR
        if rc >= 0 {
            sent += 1
            if failing {
                failing = false
                logger.info("systemd notify socket \(socketName) reachable again")
            }
            return true
        }
        let reason = String(cString: strerror(errno))
        failed += 1
        if !failing {
            failing = true
            let what = errno == ENOENT || errno == ECONNREFUSED ? "does not exist or nobody listens" : "refused a message"
            let text = "systemd notify socket \(socketName) \(what) (\(reason)); the session goes on without "
                + "telling systemd (READY, STATUS, WATCHDOG are not delivered)"
            logger.error("\(text)")
        }
        return false
    }

    @discardableResult
    public func send(_ line: String) -> Bool { send([line]) }

    /// `RELOADING=1` with the monotonic time systemd (253 and later) asks for beside it.
    @discardableResult
    public func reloading() -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let micros = UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec / 1000)
        return send(["RELOADING=1", "MONOTONIC_USEC=\(micros)"])
    }
}

/// Decides when a `WATCHDOG=1` is due: every `interval` seconds, and only while every real-time engine is alive,
/// which is its JACK cycle counter having moved within `staleAfter` seconds. A stalled JACK server, a hung process
/// thread or a hung control loop (which calls this) therefore stop the pings, and systemd's watchdog fires.
///
/// With no engine at all (a session waiting for its lost server closes its engines) only the control loop is
/// checked: the session is doing what it was asked to, and a restart would not bring the server back sooner.
///
/// Threads: a value owned by the control loop.
public struct WatchdogGate: Sendable {
    public let interval: Double
    public let staleAfter: Double
    private var counts: [Int] = []
    private var moved: [Double] = []
    private var lastPing = -Double.infinity
    /// Pings held back because an engine had stopped (since start).
    public private(set) var withheld = 0
    private var holding = false

    /// `staleAfter` defaults to the interval, at most 0.5 s, but never less than 3 periods of `periodSeconds`.
    public init(interval: Double, periodSeconds: Double = 0) {
        self.interval = interval
        staleAfter = min(interval, max(0.5, 3 * periodSeconds))
    }

    /// Call often (every control-loop turn) with each engine's cycle counter and the monotonic time in seconds;
    /// true when a `WATCHDOG=1` is to be sent now.
    public mutating func check(cycles: [Int], now: Double) -> Bool {
        if cycles.count != counts.count {
            counts = cycles
            moved = Array(repeating: now, count: cycles.count)
        } else {
            for i in cycles.indices where cycles[i] != counts[i] {
                counts[i] = cycles[i]
                moved[i] = now
            }
        }
        guard now - lastPing >= interval else { return false }
        let alive = moved.allSatisfy { now - $0 <= staleAfter }
        if !alive {
            if !holding { withheld += 1 }
            holding = true
            return false
        }
        holding = false
        lastPing = now
        return true
    }

    /// Whether the last check found an engine stopped.
    public var isHolding: Bool { holding }
}
