import Coordinator
import Dispatch
import Engine
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import Presets
import NIOCore
import Realtime
import Synchronization
import Takes

/// Tandem's HTTP and WebSocket server (docs/HTTP.md): the API under `/api/`, the Prometheus metrics at `/metrics`,
/// the page at `/`. Built on Hummingbird 2 (swift-nio); its handlers parse, check and hand a command to the session
/// through `SessionGateway`, and own nothing of it.
///
/// Threads: `start`/`stop` from the control thread; `tick` from the control thread every turn of its loop; the
/// handlers on NIO's event loops and Swift tasks.
public final class HTTPServer: Sendable {
    public struct Configuration: Sendable {
        public var address: HTTPAddress
        public var access: HTTPAccess
        /// Connections open at once. When all are taken, a new one is accepted in place of the one idle the longest
        /// (no request under way); when none is idle, new ones wait in the kernel's backlog.
        public var maxConnections = 64
        /// The largest request body read; a larger one is refused (413) and its connection closed.
        public var maxBodyBytes = 1 << 20
        /// A connection whose request head has not come within this long (slow or stuck headers) is closed.
        public var headerSeconds = 10.0
        /// A connection idle this long is closed.
        public var idleSeconds = 60.0
        /// WebSocket clients at once.
        public var maxEventClients = 64

        public init(address: HTTPAddress, access: HTTPAccess) {
            self.address = address
            self.access = access
        }
    }

    public let configuration: Configuration
    public let gateway: SessionGateway
    let feed: LiveFeed
    let stats: ServerStats
    let routes = RouteTable()
    /// The connections open, and which are idle (see `ConnectionTable`).
    let connections: ConnectionTable
    let logger: Logger
    /// The metrics exposition, made on the control thread (see `metrics`).
    let metrics: MetricsSource?
    private let running = Mutex<(task: Task<Void, Never>?, port: Int?)>((nil, nil))

    /// `wake`: the control loop's wake-up; `journal`: the session's numbered events; `metrics`: what `/metrics`
    /// serves (nil: 404).
    public init(configuration: Configuration, wake: Wakeup?, journal: EventJournal, metrics: MetricsSource? = nil,
                logger: Logger = Logger(label: "tandem.http")) {
        self.configuration = configuration
        gateway = SessionGateway(wake: wake)
        feed = LiveFeed(journal: journal, maxListeners: configuration.maxEventClients)
        stats = ServerStats()
        connections = ConnectionTable(maxConnections: configuration.maxConnections)
        self.metrics = metrics
        self.logger = logger
    }

    /// The port listened on (the kernel's choice when 0 was asked), once started.
    public var port: Int? { running.withLock { $0.port } }

    /// Starts listening and returns the port; throws when the address cannot be had (in use, not this machine's).
    /// Control thread; waits at most 10 s for the listener.
    public func start() throws -> Int {
        let ready = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Int, any Error>?>(nil)
        let app = makeApplication { port in
            outcome.withLock { if $0 == nil { $0 = .success(port) } }
            ready.signal()
        }
        let task = Task {
            do {
                try await app.run()
            } catch {
                outcome.withLock { if $0 == nil { $0 = .failure(error) } }
                ready.signal()
            }
        }
        guard ready.wait(timeout: .now() + 10) == .success, let result = outcome.withLock({ $0 }) else {
            task.cancel()
            throw HTTPServerError("the HTTP server did not start within 10 s")
        }
        switch result {
        case .success(let port):
            running.withLock { $0 = (task, port) }
            logger.info("HTTP API listening", metadata: ["address": "http://\(HTTPAddress(host: configuration.address.host, port: port))/",
                                                        "token": "\(configuration.access.token == nil ? "none (loopback)" : "required")"])
            return port
        case .failure(let error):
            task.cancel()
            if let io = error as? IOError { throw HTTPServerError(Self.words(configuration.address, errno: io.errnoCode)) }
            throw HTTPServerError("the HTTP API cannot listen on \(configuration.address): \(error)")
        }
    }

    /// Stops listening and closes every connection. Control thread.
    public func stop() {
        let task = running.withLock { r -> Task<Void, Never>? in
            defer { r = (nil, nil) }
            return r.task
        }
        task?.cancel()
        feed.close()
    }

    /// Each turn of the control loop: the waiting requests carried out, the live state published for the event
    /// streams. Control thread.
    public func tick(_ session: Session) {
        gateway.drain(session)
        if feed.hasListeners { feed.publish(session) }
    }

    /// Whether the loop should turn often (event streams are open, or requests wait).
    public var wantsFrequentTurns: Bool { feed.hasListeners || !gateway.isEmpty }

    /// The Hummingbird application: the router, the WebSocket upgrade, the limits.
    private func makeApplication(onRunning: @escaping @Sendable (Int) -> Void) -> some ApplicationProtocol {
        // HEAD wherever GET: the router makes the endpoints (it picks a route by method before any middleware runs).
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        let security = SecurityHeaders(origins: configuration.access.origins)
        router.add(middleware: SecurityMiddleware(headers: security))
        router.add(middleware: OriginCORSMiddleware(origins: Set(configuration.access.origins)))
        router.add(middleware: LimitsMiddleware(server: self))
        Routes(server: self).install(on: router)
        let headerSeconds = configuration.headerSeconds, idleSeconds = configuration.idleSeconds
        let connections = self.connections
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [NextRequestDeadline(seconds: idleSeconds, table: connections)],
            idleTimeout: .seconds(Int64(configuration.idleSeconds)),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: ConnectionGuard.maxHeadBytes,
                                            maxHeaderListSize: ConnectionGuard.maxHeadBytes, maxHeaderFieldCount: 200))
        let server = self
        let channel = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: http1, ws: .init(maxFrameSize: 1 << 16, autoPing: .enabled(timePeriod: .seconds(20))))
        let upgrade = HTTPServerBuilder { responder in
            GuardedChannel(inner: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: channel,
                                                               shouldUpgrade: { request, channel, _ in
                                                                   await server.shouldUpgrade(request, channel: channel)
                                                               }),
                           seconds: headerSeconds, headerLines: security.lines, table: connections)
        }
        var config = ApplicationConfiguration(address: .hostname(configuration.address.host, port: configuration.address.port),
                                              serverName: "Tandem/\(TandemVersion.string)")
        config.availableConnectionsDelegate = connections
        // Hummingbird's own log lines only when critical: a hostile client's malformed upgrade or a connection cut at
        // shutdown is logged at error level there, and is nothing the operator can act on (the metrics count refusals).
        var quiet = Logger(label: "tandem.http.server")
        quiet.logLevel = .critical
        return Application(router: router, server: upgrade, configuration: config,
                           onServerRunning: { channel in onRunning(channel.localAddress?.port ?? 0) },
                           logger: quiet)
    }
}

/// Where `/metrics` gets its text: made on the control thread, where the session lives.
public struct MetricsSource: Sendable {
    public let render: @Sendable (Session) -> [UInt8]
    public init(render: @escaping @Sendable (Session) -> [UInt8]) { self.render = render }
}

/// What the server counts, shown at `/metrics`: answers with an error status by status, event clients cut off as
/// slow ("slow").
final class ServerStats: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    func count(_ what: String) { counts.withLock { $0[what, default: 0] += 1 } }
    var snapshot: [String: Int] { counts.withLock { $0 } }

    /// The counts in the Prometheus text format (appended to the session's metrics).
    func exposition() -> [UInt8] {
        let s = snapshot
        var text = "# HELP tandem_http_errors_total HTTP answers with an error status, by status.\n"
            + "# TYPE tandem_http_errors_total counter\n"
        for (status, n) in s.sorted(by: { $0.key < $1.key }) where status != "slow" {
            text += "tandem_http_errors_total{status=\"\(status)\"} \(n)\n"
        }
        text += "# HELP tandem_http_event_clients_cut_total Event stream clients cut off for not keeping up.\n"
            + "# TYPE tandem_http_event_clients_cut_total counter\n"
            + "tandem_http_event_clients_cut_total \(s["slow"] ?? 0)\n"
        return Array(text.utf8)
    }
}

struct HTTPServerError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
