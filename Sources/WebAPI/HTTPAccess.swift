import Foundation
import Hummingbird
import HummingbirdCore
import HTTPTypes
import Presets
#if canImport(Glibc)
import Glibc
#endif

/// Who may use the API and from where (docs/HTTP.md, "Security"): a server bound to loopback needs no token; one
/// bound to any other address needs the bearer token on every request (the `Authorization` header, or `token=` in
/// the query only for what a browser fetches by URL: the event stream's WebSocket, a take file's download or
/// `<audio>`); a WebSocket's handshake and any
/// request that changes something must come from the page's own origin or one configured; no CORS headers unless
/// origins are configured.
///
/// Pure, but for the token file. Any thread.
public struct HTTPAccess: Sendable {
    /// The token every request must carry (nil: none needed, loopback only).
    public var token: String?
    /// Origins (scheme://host:port) besides the server's own that may open the event stream and send commands, and
    /// that get CORS headers.
    public var origins: [String]

    public init(token: String?, origins: [String] = []) {
        self.token = token
        self.origins = origins
    }

    public enum Verdict: Equatable, Sendable {
        case allowed
        /// 401: no token, or the wrong one.
        case unauthorized
        /// 403: a foreign origin, or a Host that is not loopback on a server without a token.
        case forbidden(String)
    }

    static let unauthorizedMessage = "a bearer token is needed (Authorization: Bearer TOKEN, or token= in the query); "
        + "`tandem http-token` prints it"

    /// On a server without a token (bound to loopback), the `Host` a request names must be a loopback one: a page
    /// of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) names its own and is refused.
    public func hostAllowed(_ authority: String?) -> Bool {
        guard token == nil else { return true }
        guard let authority else { return false }
        var host = Substring(authority)
        if host.hasPrefix("[") {
            host = host.dropFirst().prefix { $0 != "]" }
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        return HTTPAddress(host: String(host).lowercased(), port: 0).isLoopback
    }

    /// Whether `request` may go on. `changes`: it changes something (or opens the event stream), so its origin counts;
    /// `tokenInQuery`: the browser cannot send a header with it (the event stream's upgrade, a download link), so
    /// `token=` in the query counts too. Nothing else takes the token from the query: a URL ends up in logs and
    /// histories, and a write must never be one link away.
    public func check(_ request: HTTPRequest, changes: Bool, tokenInQuery: Bool = false) -> Verdict {
        if let token, !Self.isPage(request) {
            let given = request.headerFields[.authorization].flatMap(Self.bearer)
                ?? (tokenInQuery ? Self.queryItem("token", in: request.path ?? "") : nil)
            guard let given, Self.equal(given, token) else { return .unauthorized }
        } else if !hostAllowed(request.authority) {
            return .forbidden("Host '\(request.authority ?? "")' is not loopback; without a token this server answers only "
                              + "to localhost, 127.0.0.1 and [::1]")
        }
        if changes, let origin = request.headerFields[.origin], !allows(origin: origin, host: request.authority) {
            return .forbidden("origin '\(origin)' may not use this API (its own page's may; others are set with http_origins)")
        }
        return .allowed
    }

    /// The credentials of an `Authorization: Bearer …` header; the scheme in any case (RFC 9110, 11.1).
    static func bearer(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credentials = parts[1].drop { $0 == " " }
        return credentials.isEmpty ? nil : String(credentials)
    }

    /// Whether a request is one a browser makes by URL, where it cannot add a header: a take file's download
    /// (`<a download>`, `<audio>`), GET or HEAD.
    public static func isDownload(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let path = (request.path ?? "").split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 6 && parts[0].isEmpty && parts[1] == "api" && parts[2] == "takes" && parts[4] == "files"
    }

    /// Whether `request` reads the page's own files (`/`, `/page/…`): static, holding nothing of the session, and
    /// served without the token so that the page can load and then ask for it.
    public static func isPage(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let path = (request.path ?? "").split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return path == "/" || path.hasPrefix("/page/")
    }

    /// The page's own origin (same host and port as the request's `Host`), or one configured.
    public func allows(origin: String, host: String?) -> Bool {
        if origins.contains(origin) { return true }
        guard let host, let url = URL(string: origin), let oh = url.host else { return false }
        let ours = url.port.map { "\(oh):\($0)" } ?? oh
        let bracketed = url.port.map { "[\(oh)]:\($0)" } ?? "[\(oh)]"
        return host == ours || host == bracketed
    }

    /// A query item's value from a request path (`/api/events?since=3&token=x`), decoded by Hummingbird's own URI
    /// parser (the event stream's upgrade and the access check see the raw request, not the router's).
    public static func queryItem(_ name: String, in path: String) -> String? {
        URI(path).queryParameters.get(name)
    }

    /// Compares in time that does not depend on where the strings differ.
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) { diff |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0) }
        return diff == 0
    }

    // MARK: The token file

    /// The file the token is kept in: `$XDG_CONFIG_HOME/tandem/http-token`, else `~/.config/tandem/http-token`.
    public static var tokenPath: String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (HomeFolder.path(environment: env) as NSString).appendingPathComponent(".config")
        return ((base as NSString).appendingPathComponent("tandem") as NSString).appendingPathComponent("http-token")
    }

    /// The token, made on first use: 32 random bytes as hex, in a file only its owner may read (created 0600 with
    /// O_EXCL; a file that others may read or write is refused, not used).
    public static func loadOrCreateToken(path: String = tokenPath) throws -> String {
        let dir = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFREG else { throw TokenError("\(path) is not a regular file") }
            guard st.st_mode & 0o077 == 0 else {
                throw TokenError("\(path) may be read by others (mode \(String(st.st_mode & 0o777, radix: 8))): chmod 600 it")
            }
            let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.count >= 16 else { throw TokenError("\(path) holds no token (at least 16 characters)") }
            return text
        }
        // The standard library's generator is the system's cryptographic one (getrandom on Linux).
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let token = bytes.map { String(format: "%02x", $0) }.joined()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw TokenError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let line = Array((token + "\n").utf8)
        guard write(fd, line, line.count) == line.count else { throw TokenError("cannot write \(path)") }
        return token
    }

    public struct TokenError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }
}
