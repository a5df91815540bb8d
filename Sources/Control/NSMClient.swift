import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// The client side of the Non Session Manager OSC protocol, API 1.1
/// (https://new-session-manager.jackaudio.org/api/): announce, then answer `open` and `save`, and tell the server
/// when the setup is dirty or clean, with status messages and progress.
///
/// Every message goes out from the one socket the announce was sent from (the server tells its clients apart by
/// their return address). The socket is connected to the server, so only the server's datagrams are read, and a
/// server that went away shows as ECONNREFUSED on the next receive after a send: logged once, and nothing is sent
/// again; the session goes on without a session manager. Malformed messages are logged and skipped.
///
/// Threads: one owner (the control thread polls it).
public final class NSMClient {
    /// What the server asked for.
    public enum Request: Equatable, Sendable {
        /// Open (or, with `:switch:`, switch to) the project at `path`; name JACK clients after `clientID`.
        case open(path: String, displayName: String, clientID: String)
        case save
        case sessionIsLoaded
    }

    /// NSM error codes (API 1.1, "Error Code Definitions").
    public enum ErrorCode: Int32, Sendable {
        case general = -1, incompatibleAPI = -2, blacklisted = -3, launchFailed = -4, noSuchFile = -5
        case noSessionOpen = -6, unsavedChanges = -7, notNow = -8, badProject = -9, createFailed = -10
    }

    public static let apiMajor: Int32 = 1
    public static let apiMinor: Int32 = 1
    /// What Tandem can do under a session manager.
    public static let capabilities = ":switch:dirty:message:progress:"

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public let url: String
    public let socket: UDPSocket
    private let server: sockaddr_in
    private let logger: Logger
    /// The server's answer to the announce: its name and capabilities (nil until it answered).
    public private(set) var serverName: String?
    public private(set) var serverCapabilities = ""
    /// Whether the server refused the announce (`/error "/nsm/server/announce"`).
    public private(set) var refused: String?
    /// Whether the server has gone away (its port closed): nothing is sent any more.
    public private(set) var gone = false
    private var lastDirty: Bool?
    private var lastProgress: Float?

    /// Parses `osc.udp://HOST:PORT/` (the form of `NSM_URL`) into an address of this machine: the host must
    /// resolve to an IPv4 address a socket here can bind (loopback, or one of this machine's own).
    public static func address(of url: String) -> Result<sockaddr_in, Failure> {
        guard url.hasPrefix("osc.udp://") else {
            return .failure(Failure(description: "NSM_URL '\(url)' is not an osc.udp:// URL (Tandem speaks OSC over UDP)"))
        }
        var rest = url.dropFirst("osc.udp://".count)
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port)
        else { return .failure(Failure(description: "NSM_URL '\(url)' has no valid port")) }
        var host = String(rest[..<colon])
        if host.hasPrefix("[") { return .failure(Failure(description: "NSM_URL '\(url)': IPv6 is not supported")) }
        if host.isEmpty { host = "127.0.0.1" }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &result)
        guard rc == 0, let first = result, let sa = first.pointee.ai_addr else {
            return .failure(Failure(description: "NSM_URL '\(url)': cannot resolve '\(host)': \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(result) }
        var a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        return .success(a)
    }

    /// Opens the socket (bound to the server's own address, so a server on another machine is refused: binding
    /// works only for this machine's addresses) and connects it to the server. Nothing is sent yet.
    public init(url: String, logger: Logger = Logger(label: "tandem.nsm")) throws(Failure) {
        self.url = url
        self.logger = logger
        let server: sockaddr_in
        switch Self.address(of: url) {
        case .success(let a): server = a
        case .failure(let f): throw f
        }
        self.server = server
        do {
            socket = try UDPSocket(port: 0, address: UDPSocket.isLoopback(server) ? nil : server.sin_addr)
            try socket.connect(to: server)
        } catch {
            throw Failure(description: "NSM_URL '\(url)': \(error) (Tandem talks only to a session manager on this machine)")
        }
    }

    /// The address replies come from, as the server sees it ("osc.udp://127.0.0.1:PORT/").
    public var ownURL: String { "osc.udp://127.0.0.1:\(socket.port)/" }

    /// Sends `/nsm/server/announce`.
    public func announce(applicationName: String, executable: String, pid: Int32 = getpid()) {
        send(OSCMessage("/nsm/server/announce", [.string(applicationName), .string(Self.capabilities), .string(executable),
                                                 .int(Self.apiMajor), .int(Self.apiMinor), .int(pid)]))
    }

    /// Reads every waiting message; returns the server's requests in order. Announce answers are recorded
    /// (`serverName`, `refused`); anything malformed or unknown is logged and skipped.
    public func poll() -> [Request] {
        var out: [Request] = []
        for _ in 0..<64 {
            guard let d = socket.receive(limit: 65536) else { break }
            guard !gone else { continue }
            if d.size > 65536 {
                logger.warning("NSM: a message of \(d.size) bytes was cut off; skipped")
                continue
            }
            switch OSCMessage.decode(bytes: d.bytes) {
            case .failure(let e):
                logger.warning("NSM: malformed message from the server skipped: \(e.message)")
            case .success(let m):
                if let r = handle(m) { out.append(r) }
            }
        }
        if !gone && socket.lastError == ECONNREFUSED { serverGone() }
        return out
    }

    private func handle(_ m: OSCMessage) -> Request? {
        let strings = m.arguments.compactMap(\.string)
        let allStrings = strings.count == m.arguments.count
        switch m.path {
        case "/nsm/client/open":
            guard m.arguments.count == 3, allStrings, !strings[0].isEmpty else {
                logger.warning("NSM: malformed /nsm/client/open skipped (want s:path s:display_name s:client_id, got \(Self.describe(m)))")
                send(OSCMessage("/error", [.string(m.path), .int(ErrorCode.general.rawValue),
                                           .string("malformed open: want s:path s:display_name s:client_id")]))
                return nil
            }
            return .open(path: strings[0], displayName: strings[1], clientID: strings[2])
        case "/nsm/client/save":
            return .save
        case "/nsm/client/session_is_loaded":
            return .sessionIsLoaded
        case "/reply":
            if m.arguments.first?.string == "/nsm/server/announce" {
                serverName = m.arguments.count > 2 ? m.arguments[2].string ?? "?" : "?"
                serverCapabilities = m.arguments.count > 3 ? m.arguments[3].string ?? "" : ""
                let welcome = m.arguments.count > 1 ? m.arguments[1].string ?? "" : ""
                logger.info("under session management: \(serverName ?? "?") (\(welcome))",
                            metadata: ["server": "\(url)", "capabilities": "\(serverCapabilities)"])
            } else {
                logger.debug("NSM: reply \(Self.describe(m))")
            }
            return nil
        case "/error":
            if m.arguments.first?.string == "/nsm/server/announce" {
                let why = m.arguments.last?.string ?? Self.describe(m)
                refused = why
                logger.error("NSM server refused the announce: \(why)", metadata: ["server": "\(url)"])
            } else {
                logger.warning("NSM: error \(Self.describe(m))")
            }
            return nil
        case "/nsm/client/show_optional_gui", "/nsm/client/hide_optional_gui":
            return nil   // no optional GUI announced
        default:
            logger.warning("NSM: unknown message \(m.path) skipped", metadata: ["arguments": "\(Self.describe(m))"])
            return nil
        }
    }

    static func describe(_ m: OSCMessage) -> String {
        m.path + " " + m.arguments.map(\.description).joined(separator: " ")
    }

    /// `/reply PATH MESSAGE`.
    public func reply(_ path: String, _ message: String) {
        send(OSCMessage("/reply", [.string(path), .string(message)]))
    }

    /// `/error PATH CODE MESSAGE`.
    public func error(_ path: String, _ code: ErrorCode, _ message: String) {
        send(OSCMessage("/error", [.string(path), .int(code.rawValue), .string(message)]))
    }

    /// `/nsm/client/is_dirty` or `is_clean`, sent only when it changed (or `force`).
    public func setDirty(_ dirty: Bool, force: Bool = false) {
        guard force || lastDirty != dirty else { return }
        lastDirty = dirty
        send(OSCMessage(dirty ? "/nsm/client/is_dirty" : "/nsm/client/is_clean"))
    }

    /// `/nsm/client/message PRIORITY TEXT` (0 chatter … 3 most important).
    public func message(priority: Int32, _ text: String) {
        send(OSCMessage("/nsm/client/message", [.int(min(3, max(0, priority))), .string(text)]))
    }

    /// `/nsm/client/progress F` (0…1).
    public func progress(_ value: Float) {
        let v = value.isFinite ? min(1, max(0, value)) : 0
        guard lastProgress != v else { return }
        lastProgress = v
        send(OSCMessage("/nsm/client/progress", [.float(v)]))
    }

    private func send(_ m: OSCMessage) {
        guard !gone else { return }
        if !socket.send(m.encode(), to: server), socket.lastError == ECONNREFUSED { serverGone() }
    }

    private func serverGone() {
        gone = true
        logger.error("NSM server at \(url) is gone (its port is closed); the session goes on without a session manager")
    }
}
