import Commands
import Control
import Coordinator
import Foundation
import Hummingbird

extension Routes {
    /// Favourites: controls pinned together on the page, kept in the session folder for every device.
    func favouriteRoutes(_ api: RouterGroup<BasicRequestContext>) {
        route(api, "/api", .get, "favourites") { _, _ in
            let f = try await favourites()
            return JSONResponse.encode(try await offPool { Result { try f.read() } }.get())
        }
        route(api, "/api", .put, "favourites") { request, context in
            let list = try await body(request, context, [Favourite].self)
            guard list.count <= Favourites.maxCount else {
                throw HTTPError(.badRequest, message: "at most \(Favourites.maxCount) favourites")
            }
            let missing = try await missingControls(list)
            guard missing.isEmpty else {
                throw HTTPError(.badRequest, message: "\(missing.count) favourite(s) name no control the session has: "
                                + missing.prefix(5).joined(separator: ", ") + (missing.count > 5 ? ", …" : ""))
            }
            let f = try await favourites()
            try await offPool { Result { try f.write(list) } }.get()
            _ = try? await server.gateway.run { session in session.announce(.favouritesChanged(source: "http")) }
            return JSONResponse.encode(list)
        }
    }

    /// The favourites of `list` whose control the session does not have ("engine/plugin/symbol"): asked of the
    /// session in one turn of its loop, of an isolated rack's process once per rack.
    func missingControls(_ list: [Favourite]) async throws -> [String] {
        if list.isEmpty { return [] }
        let (local, racks) = try await server.gateway.run { session -> ([String], [String: IsolatedRackTarget]) in
            var missing: [String] = []
            var racks: [String: IsolatedRackTarget] = [:]
            for f in list {
                if let target = IsolatedRackTarget(session, f.engine) {
                    racks[f.engine] = target
                } else if !session.execute(.pluginGet(engine: f.engine, plugin: f.plugin, symbol: f.symbol),
                                           context: CommandContext(source: "http")).ok {
                    missing.append("\(f.engine)/\(f.plugin)/\(f.symbol)")
                }
            }
            return (missing, racks)
        }
        var missing = local
        for (engine, target) in racks.sorted(by: { $0.key < $1.key }) {
            let r = await Self.relay(.pluginList(engine: engine), to: target)
            let plugins = r.ok ? (try? JSONSerialization.jsonObject(with: Data(r.detail.utf8)) as? [[String: Any]]) ?? [] : []
            for f in list where f.engine == engine {
                let controls = plugins.first { $0["name"] as? String == f.plugin }?["controls"] as? [[String: Any]] ?? []
                if !controls.contains(where: { $0["symbol"] as? String == f.symbol }) {
                    missing.append("\(f.engine)/\(f.plugin)/\(f.symbol)")
                }
            }
        }
        return missing
    }

    func favourites() async throws -> Favourites {
        let dir = try await server.gateway.run { session in session.preset?.session.directory ?? "" }
        guard !dir.isEmpty else { throw HTTPError(.conflict, message: "no session folder") }
        return Favourites(directory: dir)
    }
}
