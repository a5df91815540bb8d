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
            let f = try await favourites()
            try await offPool { Result { try f.write(list) } }.get()
            _ = try? await server.gateway.run { session in session.announce(.favouritesChanged(source: "http")) }
            return JSONResponse.encode(list)
        }
    }

    func favourites() async throws -> Favourites {
        let dir = try await server.gateway.run { session in session.preset?.session.directory ?? "" }
        guard !dir.isEmpty else { throw HTTPError(.conflict, message: "no session folder") }
        return Favourites(directory: dir)
    }
}
