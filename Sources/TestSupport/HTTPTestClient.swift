import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain HTTP/1.1 client on a socket, for tests of Tandem's HTTP API: it sends exactly the bytes asked for (a
/// hostile client's too) and reads the answer as it comes, and speaks just enough WebSocket to follow the event
/// stream. No library between the test and the server.
public struct HTTPTestClient {
    public let port: Int
    public var host = "127.0.0.1"
    /// Sent as `Authorization: Bearer` when set.
    public var token: String?

    public init(port: Int, token: String? = nil) {
        self.port = port
        self.token = token
    }

    public struct Answer: CustomStringConvertible {
        public var status: Int
        public var headers: [String: String]
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
        public var json: Any? { try? JSONSerialization.jsonObject(with: Data(body)) }
        public var description: String { "\(status) \(text.prefix(400))" }
    }

    /// Opens a connection (nil when it cannot).
    public func connect(timeout: Double = 10) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr(host)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// A request: `method path`, the headers (Host, Connection: close, the token, Content-Length for a body are
    /// added unless given), the body. Returns the answer, or nil when the server closed without one.
    public func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = [],
                        timeout: Double = 10) -> Answer? {
        var h = headers
        if h["Host"] == nil { h["Host"] = "\(host):\(port)" }
        if h["Connection"] == nil { h["Connection"] = "close" }
        if let token, h["Authorization"] == nil { h["Authorization"] = "Bearer \(token)" }
        if !body.isEmpty || method == "POST" || method == "PUT" { h["Content-Length"] = h["Content-Length"] ?? "\(body.count)" }
        if !body.isEmpty, h["Content-Type"] == nil { h["Content-Type"] = "application/json" }
        var head = "\(method) \(path) HTTP/1.1\r\n"
        for (k, v) in h.sorted(by: { $0.key < $1.key }) { head += "\(k): \(v)\r\n" }
        return raw(Array((head + "\r\n").utf8) + body, timeout: timeout)
    }

    public func get(_ path: String, headers: [String: String] = [:]) -> Answer? { request("GET", path, headers: headers) }

    /// `value` as a JSON body.
    public func send(_ method: String, _ path: String, json value: Any) -> Answer? {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])) ?? Data()
        return request(method, path, body: Array(data))
    }

    /// Sends `bytes` on a new connection and reads until the server closes (or `timeout`): the parsed answer.
    public func raw(_ bytes: [UInt8], timeout: Double = 10) -> Answer? {
        guard let fd = connect(timeout: timeout) else { return nil }
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return Self.parse(Self.readAll(fd))
    }

    public static func readAll(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    public static func parse(_ bytes: [UInt8]) -> Answer? {
        guard let end = find([13, 10, 13, 10], in: bytes) else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        guard let first = head.first, first.hasPrefix("HTTP/1.1 "), let status = Int(first.dropFirst(9).prefix(3)) else {
            return nil
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"] == "chunked" { body = dechunk(body) }
        return Answer(status: status, headers: headers, body: body)
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int = 0) -> Int? {
        guard hay.count >= needle.count else { return nil }
        var i = from
        while i <= hay.count - needle.count {
            if hay[i] == needle[0] && Array(hay[i..<i + needle.count]) == needle { return i }
            i += 1
        }
        return nil
    }

    static func dechunk(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while let lineEnd = find([13, 10], in: data, from: i) {
            let sizeText = String(decoding: data[i..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            guard start + size <= data.count else { break }
            out += data[start..<start + size]
            i = start + size + 2
        }
        return out
    }

    // MARK: WebSocket

    /// An open event stream: its socket and what was read after the handshake.
    public final class WebSocket {
        public let fd: Int32
        var pending: [UInt8]

        init(fd: Int32, pending: [UInt8]) {
            self.fd = fd
            self.pending = pending
        }

        deinit { close(fd) }

        /// The next text message (nil: closed, or none within the socket's timeout).
        public func next() -> String? {
            while true {
                if let (message, used) = Self.frame(pending) {
                    pending.removeFirst(used)
                    if let message { return message }
                    continue   // a ping or pong: skipped
                }
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return nil }
                pending += buffer[0..<n]
            }
        }

        /// Sends a close frame (status 1000, masked as a client must) and reads until the server ends the
        /// connection: whether the server's close frame came, and how many data frames came after it (a browser
        /// calls any such frame an error).
        public func closeAndDrain() -> (closeSeen: Bool, framesAfterClose: Int) {
            let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
            let payload: [UInt8] = [0x03, 0xE8]
            let frame: [UInt8] = [0x88, 0x80 | 2] + mask + payload.enumerated().map { $1 ^ mask[$0 % 4] }
            _ = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var closeSeen = false, after = 0
            while true {
                while let (_, used) = Self.frame(pending) {
                    let opcode = pending[0] & 0x0F
                    if closeSeen && opcode < 0x8 { after += 1 }
                    if opcode == 0x8 { closeSeen = true }
                    pending.removeFirst(used)
                }
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return (closeSeen, after) }
                pending += buffer[0..<n]
            }
        }

        /// The next message parsed as a JSON object.
        public func nextJSON() -> [String: Any]? {
            next().flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        /// One unmasked server frame from the start of `bytes`: its text (nil for a control frame) and its length;
        /// nil when more bytes are needed.
        static func frame(_ bytes: [UInt8]) -> (String?, Int)? {
            guard bytes.count >= 2 else { return nil }
            let opcode = bytes[0] & 0x0F
            var length = Int(bytes[1] & 0x7F), at = 2
            if length == 126 {
                guard bytes.count >= 4 else { return nil }
                length = Int(bytes[2]) << 8 | Int(bytes[3])
                at = 4
            } else if length == 127 {
                guard bytes.count >= 10 else { return nil }
                length = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
                at = 10
            }
            guard bytes.count >= at + length else { return nil }
            let payload = bytes[at..<at + length]
            if opcode == 0x8 { return ("", at + length) }   // close: an empty message, then nil
            return (opcode == 0x1 ? String(decoding: payload, as: UTF8.self) : nil, at + length)
        }
    }

    /// Opens `path` as a WebSocket; returns the stream, or the refusal's answer.
    public func webSocket(_ path: String, headers: [String: String] = [:], timeout: Double = 5) -> Result<WebSocket, AnswerError> {
        guard let fd = connect(timeout: timeout) else { return .failure(AnswerError(answer: nil)) }
        var h = ["Host": "\(host):\(port)", "Upgrade": "websocket", "Connection": "Upgrade",
                 "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"]
        if let token { h["Authorization"] = "Bearer \(token)" }
        for (k, v) in headers { h[k] = v }
        var head = "GET \(path) HTTP/1.1\r\n"
        for (k, v) in h.sorted(by: { $0.key < $1.key }) { head += "\(k): \(v)\r\n" }
        let bytes = Array((head + "\r\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Self.find([13, 10, 13, 10], in: got) == nil {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            got += buffer[0..<n]
        }
        guard let end = Self.find([13, 10, 13, 10], in: got), got.starts(with: Array("HTTP/1.1 101".utf8)) else {
            got += Self.readAll(fd)
            close(fd)
            return .failure(AnswerError(answer: Self.parse(got)))
        }
        return .success(WebSocket(fd: fd, pending: Array(got[(end + 4)...])))
    }

    public struct AnswerError: Error {
        public let answer: Answer?
    }
}
