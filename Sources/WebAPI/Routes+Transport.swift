import Commands
import Hummingbird

extension Routes {
    /// The recorder and the player: every command the control protocol has.
    func transportRoutes(_ api: RouterGroup<BasicRequestContext>) {
        for (path, command) in [("start", Command.recordStart), ("stop", .recordStop), ("arm", .recordArm),
                                ("rotate", .recordRotate)] {
            route(api, "/api", .post, "recorder/\(path)") { _, _ in try await act(command) }
        }
        route(api, "/api", .post, "recorder/mark") { request, context in
            let b = try await optionalBody(request, context, MarkBody.self)
            return try await act(.recordMark(label: b?.label ?? ""))
        }
        for (path, command) in [("play", Command.play), ("pause", .pause), ("stop", .stop), ("next", .next)] {
            route(api, "/api", .post, "player/\(path)") { _, _ in try await act(command) }
        }
        route(api, "/api", .post, "player/seek") { request, context in
            try await act(try parsed("/tandem/play/seek", [.number(try await body(request, context, SeekBody.self).seconds)]))
        }
        route(api, "/api", .put, "player/gain") { request, context in
            try await act(try parsed("/tandem/play/gain", [.number(try await body(request, context, GainBody.self).gain)]))
        }
        route(api, "/api", .post, "player/load") { request, context in
            let b = try await body(request, context, LoadBody.self)
            return try await act(try parsed("/tandem/play/load", b.files.map { .text($0) }))
        }
    }
}
