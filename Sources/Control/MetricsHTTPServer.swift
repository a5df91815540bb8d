import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 for one thing: `GET /metrics` (Prometheus text format). Everything else is
/// answered with an error status and a log line: another path 404, another method 405, a request that is not HTTP
/// 400, a request head over `maxRequestBytes` 431, a client that does not finish its request within
/// `requestTimeout` 408. Every socket is non-blocking and polled from the control loop (`poll`), a bounded amount
/// of work per call, so a slow, stuck or hostile client can never hold the session loop. One response per
/// connection (`Connection: close`).
///
/// Why not swift-nio or FlyingFox: this serves one path on loopback to one scraper every few seconds; a socket
/// polled from the loop Tandem already runs is ~250 lines and adds nothing to the build, where swift-nio (which
/// FlyingFox does without, but it needs Swift concurrency tasks and its own event loop) adds minutes to every clean
/// build on a 2-core machine (docs/DEPLOYMENT.md has the figures).
///
/// Threads: one owner (the control thread).
public final class MetricsHTTPServer {
    public let port: Int
    private let fd: Int32
    private let logger: Logger
    private let body: () -> [UInt8]
    /// Largest request head read; a longer one is refused with 431.
    public static let maxRequestBytes = 8192
    /// At most this many connections at once; more wait in the kernel's backlog.
    public static let maxConnections = 16
    public static let requestTimeout = 2.0

    private struct Connection {
        var fd: Int32
        var request: [UInt8] = []
        var response: [UInt8] = []
        var sent = 0
        var opened = Date()
        var peer: String
    }
    private var connections: [Connection] = []
    /// Requests refused, and when the last refusal was logged (at most one line a second; the count says the rest).
    public private(set) var refused = 0
    public private(set) var served = 0
    private var lastRefusalLog = Date.distantPast
    private var unloggedRefusals = 0

    public struct Error: Swift.Error, CustomStringConvertible {
        public let description: String
    }

    /// Listens on 127.0.0.1:`port` (0: any free port). `body` makes the metrics text when a scrape arrives.
    public init(port: Int, logger: Logger = Logger(label: "tandem.metrics"), body: @escaping () -> [UInt8]) throws(Error) {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw Error(description: "cannot create a TCP socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = UDPSocket.loopback(port: port)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0, listen(s, 16) == 0 else {
            let why = String(cString: strerror(errno))
            close(s)
            throw Error(description: "cannot listen on 127.0.0.1:\(port) (TCP, metrics): \(why)")
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) }
        }
        fd = s
        self.port = Int(UInt16(bigEndian: bound.sin_port))
        self.logger = logger
        self.body = body
        logger.info("metrics listening", metadata: ["url": "http://127.0.0.1:\(self.port)/metrics"])
    }

    deinit {
        for c in connections { close(c.fd) }
        close(fd)
    }

    /// Accepts, reads, answers and writes what can be done now without waiting.
    public func poll() {
        while connections.count < Self.maxConnections {
            var peer = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let c = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(fd, $0, &len) }
            }
            guard c >= 0 else { break }
            _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK)
            _ = fcntl(c, F_SETFD, FD_CLOEXEC)
            connections.append(Connection(fd: c, peer: "\(UDPSocket.text(peer.sin_addr)):\(UInt16(bigEndian: peer.sin_port))"))
        }
        var keep: [Connection] = []
        for var c in connections {
            if step(&c) { keep.append(c) } else { close(c.fd) }
        }
        connections = keep
    }

    /// Moves one connection on; false when it is done (to be closed).
    private func step(_ c: inout Connection) -> Bool {
        if c.response.isEmpty {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while c.request.count <= Self.maxRequestBytes {
                let n = buffer.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, $0.count, 0) }
                if n > 0 {
                    c.request += buffer[0..<n]
                    if Self.headEnd(c.request) != nil { break }
                    continue
                }
                if n == 0 { return false }   // closed before a whole request: nothing to answer
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return false
            }
            if c.request.count > Self.maxRequestBytes && Self.headEnd(c.request) == nil {
                c.response = refuse(431, "Request Header Fields Too Large", "a request head over \(Self.maxRequestBytes) bytes", c)
            } else if Self.headEnd(c.request) != nil {
                c.response = answer(c)
            } else if Date().timeIntervalSince(c.opened) > Self.requestTimeout {
                c.response = refuse(408, "Request Timeout", "no whole request within \(Self.requestTimeout) s", c)
            } else {
                return true
            }
        }
        while c.sent < c.response.count {
            let n = c.response.withUnsafeBytes { b -> Int in
                guard let base = b.baseAddress else { return 0 }
                return send(c.fd, base + c.sent, b.count - c.sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 { c.sent += n; continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                return Date().timeIntervalSince(c.opened) < 10   // a reader that never reads is dropped
            }
            return false
        }
        shutdown(c.fd, Int32(SHUT_WR))
        return false
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func answer(_ c: Connection) -> [UInt8] {
        let headBytes = c.request[0..<(Self.headEnd(c.request) ?? c.request.count)]
        let head = String(decoding: headBytes, as: UTF8.self)
        let requestLine = head.split(separator: "\r\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), !parts[0].isEmpty,
              parts[0].allSatisfy({ $0.isASCII && $0.isUppercase }) else {
            return refuse(400, "Bad Request", "not an HTTP/1.x request line: \(Self.printable(requestLine))", c)
        }
        let method = parts[0], target = parts[1]
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard method == "GET" || method == "HEAD" else {
            return refuse(405, "Method Not Allowed", "\(Self.printable(method)) (only GET /metrics)", c, extra: "Allow: GET, HEAD\r\n")
        }
        guard path == "/metrics" else {
            return refuse(404, "Not Found", "\(Self.printable(target)) (only GET /metrics)", c)
        }
        served += 1
        let text = body()
        let header = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            + "Content-Length: \(text.count)\r\nConnection: close\r\n\r\n"
        return Array(header.utf8) + (method == "HEAD" ? [] : text)
    }

    private func refuse(_ code: Int, _ reason: String, _ why: String, _ c: Connection, extra: String = "") -> [UInt8] {
        refused += 1
        if Date().timeIntervalSince(lastRefusalLog) >= 1 {
            let more = unloggedRefusals > 0 ? " (and \(unloggedRefusals) more refused since the last such line)" : ""
            logger.warning("metrics: refused a request with \(code) \(reason): \(why)\(more)", metadata: ["from": "\(c.peer)"])
            lastRefusalLog = Date()
            unloggedRefusals = 0
        } else {
            unloggedRefusals += 1
        }
        let text = "\(code) \(reason): this server answers only GET /metrics\n"
        return Array(("HTTP/1.1 \(code) \(reason)\r\nContent-Type: text/plain; charset=utf-8\r\n\(extra)"
                      + "Content-Length: \(text.utf8.count)\r\nConnection: close\r\n\r\n" + text).utf8)
    }

    /// At most 80 characters of `s`, control characters shown as '?', for a log line.
    static func printable<S: StringProtocol>(_ s: S) -> String {
        String(String(s).unicodeScalars.prefix(80).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
    }
}
