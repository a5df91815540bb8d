import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket on 127.0.0.1 for a test to talk to a control port: send, receive with a time limit.
///
/// Threads: one owner.
public final class LoopbackUDP: Sendable {
    public let fd: Int32
    public let port: Int

    public init() throws {
        let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw ChildError("socket: \(String(cString: strerror(errno)))") }
        var addr = Self.address(port: 0)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let why = String(cString: strerror(errno))
            close(s)
            throw ChildError("bind: \(why)")
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) }
        }
        var size: Int32 = 4 << 20
        setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        fd = s
        port = Int(UInt16(bigEndian: bound.sin_port))
    }

    deinit { close(fd) }

    /// A free UDP port on 127.0.0.1 (bound, read, released).
    public static func freePort() -> Int { (try? LoopbackUDP().port) ?? 0 }

    static func address(port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        a.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        return a
    }

    /// Sends one datagram; false when the kernel refused it (too large, buffer full).
    @discardableResult
    public func send(_ bytes: [UInt8], to port: Int) -> Bool {
        var a = Self.address(port: port)
        let n = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return n == bytes.count
    }

    /// The next datagram, waiting up to `timeout` seconds; nil when none came.
    public func receive(timeout: Double) -> [UInt8]? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(max(0, timeout * 1000))) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard n >= 0 else { return nil }
        return Array(buffer.prefix(n))
    }
}

struct ChildError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
