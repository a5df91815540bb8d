import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking UDP socket on the loopback interface: the control protocol is reachable from this machine only.
///
/// Threads: one owner (the control thread polls it).
public final class UDPSocket {
    public let fd: Int32
    /// The bound port (useful when 0 was asked for).
    public let port: Int

    public struct Error: Swift.Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Binds 127.0.0.1:`port` (0: any free port), or `address`:`port` when an address of this machine is given.
    public init(port: Int, address: in_addr? = nil) throws(Error) {
        let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw Error(message: "cannot create a UDP socket: \(String(cString: strerror(errno)))") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr = address ?? in_addr(s_addr: in_addr_t(UInt32(0x7F00_0001).bigEndian))
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let why = String(cString: strerror(errno))
            close(s)
            throw Error(message: "cannot listen on \(Self.text(addr.sin_addr)):\(port) (UDP): \(why)")
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) }
        }
        // The kernel stamps each datagram with its arrival time (read back by `receive` with SIOCGSTAMP): a marker
        // lands on the frame its request arrived at, however late the control loop gets to it. The first SIOCGSTAMP
        // turns the stamping on (it answers ENOENT, nothing received yet). Not SO_TIMESTAMP: with it the kernel
        // hands the stamp only as a control message and SIOCGSTAMP answers ENOENT for every datagram (measured:
        // markers then landed 126-847 frames late, the control loop's wait).
        var first = timeval()
        _ = ioctl(s, UInt(Self.getStamp), &first)
        fd = s
        self.port = Int(UInt16(bigEndian: bound.sin_port))
    }

    deinit { close(fd) }

    /// `SIOCGSTAMP`: the receive time of the last datagram read.
    static let getStamp: Int32 = 0x8906

    /// One received datagram: its bytes (at most `limit`), its real size, and its sender.
    public struct Datagram {
        public var bytes: [UInt8]
        public var size: Int
        public var source: sockaddr_in
        /// When the kernel received it (nil: unknown).
        public var arrival: Date? = nil
    }

    /// The errno of the last failed `receive` or `send` (0: none yet). On a connected socket ECONNREFUSED says the
    /// peer's port was closed (the kernel got its ICMP "port unreachable").
    public private(set) var lastError: Int32 = 0

    /// Receives from, and sends to, `peer` only; errors about it (its port closed) are then reported.
    public func connect(to peer: sockaddr_in) throws(Error) {
        var p = peer
        let rc = withUnsafePointer(to: &p) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            throw Error(message: "cannot reach \(Self.text(peer.sin_addr)):\(UInt16(bigEndian: peer.sin_port)): \(String(cString: strerror(errno)))")
        }
    }

    /// An IPv4 address as text.
    public static func text(_ a: in_addr) -> String {
        var a = a
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The next waiting datagram, or nil.
    public func receive(limit: Int) -> Datagram? {
        var buffer = [UInt8](repeating: 0, count: limit)
        var source = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let n = buffer.withUnsafeMutableBytes { b in
            withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, b.baseAddress, limit, Int32(MSG_TRUNC), $0, &len)
                }
            }
        }
        guard n >= 0 else {
            if errno != EAGAIN && errno != EWOULDBLOCK { lastError = errno }
            return nil
        }
        buffer.removeLast(max(0, limit - min(n, limit)))
        var stamp = timeval()
        let arrival: Date? = ioctl(fd, UInt(Self.getStamp), &stamp) == 0 && stamp.tv_sec > 0
            ? Date(timeIntervalSince1970: Double(stamp.tv_sec) + Double(stamp.tv_usec) / 1e6) : nil
        return Datagram(bytes: buffer, size: n, source: source, arrival: arrival)
    }

    /// Sends one datagram.
    @discardableResult
    public func send(_ bytes: [UInt8], to destination: sockaddr_in) -> Bool {
        var d = destination
        let n = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &d) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if n < 0 { lastError = errno }
        return n == bytes.count
    }

    /// Waits up to `seconds` for a datagram to arrive.
    public func wait(seconds: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let millis = seconds.isFinite ? min(max(0, seconds * 1000), 86_400_000) : 0
        return poll(&p, 1, Int32(millis)) > 0
    }

    /// A loopback address for `port`.
    public static func loopback(port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        return a
    }

    /// Whether an address is on the loopback network (127.0.0.0/8).
    public static func isLoopback(_ a: sockaddr_in) -> Bool {
        UInt32(bigEndian: a.sin_addr.s_addr) >> 24 == 127
    }

    /// Parses "osc.udp://127.0.0.1:9000/", "127.0.0.1:9000" or "9000" into a loopback address; nil otherwise.
    public static func parseLoopbackURL(_ url: String) -> sockaddr_in? {
        var rest = Substring(url)
        if rest.hasPrefix("osc.udp://") { rest = rest.dropFirst("osc.udp://".count) }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        let parts = rest.split(separator: ":")
        let host = parts.count == 2 ? String(parts[0]) : "127.0.0.1"
        guard let portText = parts.last, let port = Int(portText), (1...65535).contains(port) else { return nil }
        guard host == "localhost" || host.hasPrefix("127.") else { return nil }
        var a = loopback(port: port)
        if host.hasPrefix("127.") {
            var parsed = in_addr()
            guard inet_pton(AF_INET, host, &parsed) == 1 else { return nil }
            a.sin_addr = parsed
        }
        return a
    }
}
