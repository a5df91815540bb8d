import Foundation
import Hummingbird

extension Routes {
    /// Session presets.
    func presetRoutes(_ api: RouterGroup<BasicRequestContext>) {
        route(api, "/api", .get, "presets") { _, _ in try await presets() }
        route(api, "/api", .post, "presets/apply") { request, context in
            try await act(.presetApply(path: try await body(request, context, PathBody.self).path))
        }
        route(api, "/api", .post, "presets/save") { request, context in
            try await act(try parsed("/tandem/preset/save", [.text(try await body(request, context, NameBody.self).name)]))
        }
    }

    /// Control maps.
    func mapRoutes(_ api: RouterGroup<BasicRequestContext>) {
        route(api, "/api", .get, "maps") { _, _ in try await query(.mapList) }
        route(api, "/api", .post, "maps") { request, context in try await act(.mapAdd(text: try await body(request, context, MapBody.self).map)) }
        route(api, "/api", .delete, "maps") { _, _ in try await act(.mapClear(index: nil)) }
        route(api, "/api", .delete, "maps/:index") { _, context in
            guard let i = context.parameters.get("index", as: Int.self) else { throw HTTPError(.badRequest, message: "a map index is a whole number") }
            return try await act(try parsed("/tandem/map/clear", [.number(Double(i))]))
        }
    }

    struct PresetEntry: Codable, Sendable {
        var name: String
        var path: String
    }

    func presets() async throws -> Response {
        let dir = try await server.gateway.run { session in session.preset?.session.directory ?? "" }
        let names = await offPool { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".toml") }.sorted() }
        return JSONResponse.encode(names.map { PresetEntry(name: ($0 as NSString).deletingPathExtension,
                                                           path: (dir as NSString).appendingPathComponent($0)) })
    }
}
