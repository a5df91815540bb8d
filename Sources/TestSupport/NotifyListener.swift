import Foundation
import Realtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

public struct NotifyListenerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// A datagram socket a test binds, standing in for systemd's notification socket ($NOTIFY_SOCKET).
/// Threads: one reader.
public final class NotifyListener: Sendable {
    public let fd: Int32
    public let name: String

    /// `name` is a path or "@abstract".
    public init(_ name: String) throws {
        self.name = name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NotifyListenerError(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard rc == 0 else { throw NotifyListenerError(message: "bind \(name): \(String(cString: strerror(errno)))") }
    }

    deinit {
        stopFlag.store(true, ordering: .relaxed)
        while collecting.load(ordering: .relaxed) { usleep(10_000) }
        close(fd)
    }

    private let received = Mutex<[(at: Double, text: String)]>([])
    private let stopFlag = Atomic<Bool>(false)
    private let collecting = Atomic<Bool>(false)

    /// Every datagram since `startCollecting`, with its arrival on the monotonic clock (seconds).
    public var messages: [(at: Double, text: String)] { received.withLock { $0 } }

    /// Receives on a thread of its own from now on (use `messages`, not `receive`, after this).
    public func startCollecting() {
        collecting.store(true, ordering: .relaxed)
        let thread = Thread { [self] in
            while !stopFlag.load(ordering: .relaxed) {
                if let text = receive(timeout: 0.05) {
                    let at = Double(monotonicNanoseconds()) / 1e9
                    received.withLock { $0.append((at, text)) }
                }
            }
            collecting.store(false, ordering: .relaxed)
        }
        thread.start()
    }

    /// Stops the collecting thread.
    public func stop() {
        stopFlag.store(true, ordering: .relaxed)
        while collecting.load(ordering: .relaxed) { usleep(10_000) }
    }

    /// The next datagram within `timeout` seconds.
    public func receive(timeout: Double) -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n >= 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : nil
    }
}

