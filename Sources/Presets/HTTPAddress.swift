import Foundation

/// Where the HTTP and WebSocket API listens (`[session] http`, `--http`): "127.0.0.1:8080", "[::1]:8080",
/// "0.0.0.0:8080", ":8080" (every address). Any address but loopback needs the token (docs/HTTP.md).
///
/// Threads: pure; any thread.
public struct HTTPAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// nil when `text` is not HOST:PORT with a port 0...65535 (0: the kernel picks one, for tests).
    public init?(_ text: String) {
        var t = Substring(text)
        var host: Substring
        if t.hasPrefix("[") {
            guard let close = t.firstIndex(of: "]") else { return nil }
            host = t[t.index(after: t.startIndex)..<close]
            t = t[t.index(after: close)...]
            guard t.hasPrefix(":"), host.contains(":") else { return nil }
            t = t.dropFirst()
        } else {
            guard let colon = t.lastIndex(of: ":") else { return nil }
            host = t[..<colon]
            t = t[t.index(after: colon)...]
            if host.contains(":") { return nil }   // an IPv6 address goes in brackets
            if host.isEmpty { host = "0.0.0.0" }
        }
        guard !t.isEmpty, t.allSatisfy(\.isASCII), t.allSatisfy(\.isNumber), t.count <= 5, let port = Int(t),
              (0...65535).contains(port) else { return nil }
        guard host.count <= 253, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.:_%".contains($0)) }) else {
            return nil
        }
        self.host = String(host)
        self.port = port
    }

    /// Whether the address is loopback only (no token needed there): localhost, ::1, or an IPv4 address 127.x.y.z
    /// ("127.0.0.1.evil.example" is a name, not one).
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { p in !p.isEmpty && p.count <= 3 && p.allSatisfy { $0.isASCII && $0.isNumber } && Int(p)! <= 255 }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// What a bad value is told.
    public static let form = "HOST:PORT (127.0.0.1:8080, 0.0.0.0:8080, [::1]:8080)"

    /// Whether `origin` is one `http_origins` may hold: scheme://host[:port], nothing after.
    public static func isOrigin(_ origin: String) -> Bool {
        guard let url = URL(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty, url.path.isEmpty, url.query == nil, url.fragment == nil,
              url.user == nil else { return false }
        return origin == "\(scheme)://\(origin.dropFirst(scheme.count + 3))" && !origin.hasSuffix("/")
    }
}
