import Control
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Test fixture: the server side of the Non Session Manager API 1.1, written from the published API text
/// (https://new-session-manager.jackaudio.org/api/), for tests that run Tandem as an NSM client without nsmd
/// (Debian 12 has no package of it).
///
/// It does what nsmd does towards one client: listens on 127.0.0.1 (its `url` is what the client gets as
/// `NSM_URL`), answers `/nsm/server/announce` with `/reply`, sends `/nsm/client/open` (again for a switch) and
/// `/nsm/client/save` and waits for their `/reply` or `/error`, and keeps every message the client sent, with the
/// address it came from, so a test can check that everything came from the announcing socket.
///
/// Threads: one owner (the test).
public final class NSMServerFixture {
    public let socket: UDPSocket
    public var url: String { "osc.udp://127.0.0.1:\(socket.port)/" }

    /// One message from a client, and where it came from ("IP:PORT").
    public struct Received: Sendable, CustomStringConvertible {
        public var message: OSCMessage
        public var source: String
        public var at: Date
        public var description: String {
            "\(source) \(message.path) " + message.arguments.map(\.description).joined(separator: " ")
        }
    }

    /// What the client announced.
    public struct Announce: Sendable {
        public var applicationName: String
        public var capabilities: String
        public var executable: String
        public var apiMajor: Int32
        public var apiMinor: Int32
        public var pid: Int32
        public var source: String
    }

    /// Every message received, in order.
    public private(set) var received: [Received] = []
    /// Datagrams that were not OSC.
    public private(set) var malformed = 0
    public private(set) var announce: Announce?
    private var client: sockaddr_in?

    public init() throws {
        socket = try UDPSocket(port: 0)
    }

    static func text(_ a: sockaddr_in) -> String {
        "\(UDPSocket.text(a.sin_addr)):\(UInt16(bigEndian: a.sin_port))"
    }

    /// Reads what has arrived, waiting up to `seconds` for the first datagram. Announces are answered at once.
    public func pump(seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        repeat {
            _ = socket.wait(seconds: max(0, min(0.05, end.timeIntervalSinceNow)))
            while let d = socket.receive(limit: 65536) {
                guard case .success(let m) = OSCMessage.decode(bytes: d.bytes) else { malformed += 1; continue }
                received.append(Received(message: m, source: Self.text(d.source), at: Date()))
                if m.path == "/nsm/server/announce" { answerAnnounce(m, from: d.source) }
            }
        } while Date() < end
    }

    private func answerAnnounce(_ m: OSCMessage, from source: sockaddr_in) {
        let a = m.arguments
        guard a.count == 6, let name = a[0].string, let caps = a[1].string, let exe = a[2].string,
              case .int(let major) = a[3], case .int(let minor) = a[4], case .int(let pid) = a[5] else {
            send(OSCMessage("/error", [.string("/nsm/server/announce"), .int(-1), .string("malformed announce")]), to: source)
            return
        }
        guard major == 1 else {
            send(OSCMessage("/error", [.string("/nsm/server/announce"), .int(-2), .string("incompatible API")]), to: source)
            return
        }
        announce = Announce(applicationName: name, capabilities: caps, executable: exe, apiMajor: major, apiMinor: minor,
                            pid: pid, source: Self.text(source))
        client = source
        send(OSCMessage("/reply", [.string("/nsm/server/announce"), .string("Howdy, what took you so long?"),
                                   .string("Tandem test NSM server fixture"), .string(":server-control:broadcast:optional-gui:")]),
             to: source)
    }

    /// Sends a message to the announced client (or to `address`).
    public func send(_ m: OSCMessage, to address: sockaddr_in? = nil) {
        guard let to = address ?? client else { return }
        socket.send(m.encode(), to: to)
    }

    /// Sends raw bytes to the announced client (for malformed-input tests).
    public func sendRaw(_ bytes: [UInt8]) {
        guard let client else { return }
        socket.send(bytes, to: client)
    }

    /// Waits for the client's announce.
    public func waitForAnnounce(timeout: Double) -> Announce? {
        let end = Date().addingTimeInterval(timeout)
        while announce == nil && Date() < end { pump(seconds: 0.1) }
        return announce
    }

    /// Waits for a message whose address is `path` (and, for `/reply` and `/error`, whose first argument is
    /// `about`) after index `from` of `received`; returns it.
    public func waitFor(_ path: String, about: String? = nil, after from: Int = 0, timeout: Double) -> Received? {
        let end = Date().addingTimeInterval(timeout)
        while true {
            if let r = received[min(from, received.count)...].first(where: {
                $0.message.path == path && (about == nil || $0.message.arguments.first?.string == about)
            }) { return r }
            if Date() >= end { return nil }
            pump(seconds: 0.05)
        }
    }

    /// The answer (`/reply` or `/error`) to a request sent when `received` had `from` entries.
    public func waitForAnswer(to request: String, after from: Int, timeout: Double) -> Received? {
        let end = Date().addingTimeInterval(timeout)
        while true {
            if let r = received[min(from, received.count)...].first(where: {
                ($0.message.path == "/reply" || $0.message.path == "/error") && $0.message.arguments.first?.string == request
            }) { return r }
            if Date() >= end { return nil }
            pump(seconds: 0.05)
        }
    }

    /// `/nsm/client/open` as nsmd sends it (`client_id` is APPLICATION.nXXXX); returns the answer.
    public func open(path: String, displayName: String, clientID: String, timeout: Double = 20) -> Received? {
        let mark = received.count
        send(OSCMessage("/nsm/client/open", [.string(path), .string(displayName), .string(clientID)]))
        return waitForAnswer(to: "/nsm/client/open", after: mark, timeout: timeout)
    }

    /// `/nsm/client/save`; returns the answer.
    public func save(timeout: Double = 20) -> Received? {
        let mark = received.count
        send(OSCMessage("/nsm/client/save"))
        return waitForAnswer(to: "/nsm/client/save", after: mark, timeout: timeout)
    }

    /// Sources of every message received that are not the announcing one.
    public var foreignSources: [String] {
        guard let a = announce?.source else { return received.map(\.source) }
        return received.map(\.source).filter { $0 != a }
    }
}
