import Engine
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Takes

/// The routes of the API (docs/HTTP.md and `Resources/openapi.json`, which a test holds them to). Every route that
/// acts is a command of the command model carried out by the session (`Session.execute`) through the gateway;
/// every route that tells reads what the session gives on its own thread. A handler parses, checks and waits.
struct Routes {
    let server: HTTPServer

    func install(on router: Router<BasicRequestContext>) {
        let api = router.group("api")
        route(api, "/api", .get, "") { _, _ in JSONResponse.encode(Self.index) }
        route(api, "/api", .get, "openapi.json") { _, _ in Self.resource("openapi.json", type: "application/json") }

        // What the session is doing, the graph, the engines.
        route(api, "/api", .get, "status") { _, _ in try await query(.status) }
        route(api, "/api", .get, "engines") { _, _ in try await query(.engines) }
        route(api, "/api", .get, "graph") { _, _ in try await query(.graph) }
        route(api, "/api", .post, "graph/connect") { request, context in
            let b = try await body(request, context, Connection.self)
            return try await act(.connect(from: b.from, to: b.to))
        }
        route(api, "/api", .post, "graph/disconnect") { request, context in
            let b = try await body(request, context, Connection.self)
            return try await act(.disconnect(from: b.from, to: b.to))
        }

        // The groups, in Routes+<Group>.swift, in this order (the route table keeps it for `Allow`).
        pluginRoutes(api)
        favouriteRoutes(api)
        transportRoutes(api)
        takeRoutes(api)
        presetRoutes(api)
        mapRoutes(api)
        sceneRoutes(api)
        installedPluginRoutes(api)

        // The event stream is a WebSocket (see `EventStream`); a plain GET is told so.
        route(api, "/api", .get, "events") { _, _ in
            JSONResponse.error(.upgradeRequired, "the event stream is a WebSocket: GET /api/events with an upgrade")
        }

        route(router, "", .get, "metrics") { _, _ in
            guard let m = server.metrics else { throw HTTPError(.notFound, message: "no metrics here") }
            let bytes = try await server.gateway.run { session in m.render(session) } + server.stats.exposition()
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }

        pageRoutes(router)
    }

    /// Registers a route and records it in the server's table (for 405 and HEAD, see `RouteTable`).
    func route<M: RouterMethods>(_ group: M, _ prefix: String, _ method: HTTPRequest.Method, _ path: String,
                                 _ handler: @escaping @Sendable (Request, BasicRequestContext) async throws -> some ResponseGenerator)
        where M.Context == BasicRequestContext {
        group.on(RouterPath(path), method: method, use: handler)
        server.routes.add(method, prefix + "/" + path)
    }

    /// Runs blocking work (a file read, a directory listing) off Swift's cooperative threads, so that a slow disk
    /// never stalls the other requests.
    func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in DispatchQueue.global().async { c.resume(returning: work()) } }
    }

    static let index = Index(version: TandemVersion.string, openapi: "/api/openapi.json", events: "/api/events")

    struct Index: Codable, Sendable {
        var version: String
        var openapi: String
        var events: String
    }
}
