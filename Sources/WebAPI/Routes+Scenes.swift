import Commands
import Foundation
import Hummingbird

// Scenes (issue 48, docs/PRESETS.md "Scenes"): every route is a scene command of the command model, parsed there so
// a name, a ramp or a position is refused with the words OSC and `tandem ctl` give.
extension Routes {
    func sceneRoutes(_ api: RouterGroup<BasicRequestContext>) {
        route(api, "/api", .get, "scenes") { _, _ in try await query(.sceneList) }
        route(api, "/api", .post, "scenes") { request, context in
            let b = try await body(request, context, SceneSaveBody.self)
            return try await act(try parsed("/tandem/scene/save", [.text(b.name)] + (b.paths ?? []).map { .text($0) }))
        }
        route(api, "/api", .put, "scenes/morph") { request, context in
            let b = try await body(request, context, MorphBody.self)
            return try await act(try parsed("/tandem/scene/morph", [.text(b.from), .text(b.to), .number(b.position)]))
        }
        // A scene may be called "morph": the literal segment above would take its paths from `:name`, so they are
        // given again here.
        for name in [":name", "morph"] {
            let literal: String? = name == "morph" ? "morph" : nil
            route(api, "/api", .post, "scenes/\(name)/recall") { request, context in
                let scene = try literal ?? param(context, "name")
                let ramp = try await optionalBody(request, context, RecallBody.self)?.rampMS
                return try await act(try parsed("/tandem/scene/recall", [.text(scene)] + (ramp.map { [.number($0)] } ?? [])))
            }
            route(api, "/api", .post, "scenes/\(name)/rename") { request, context in
                let scene = try literal ?? param(context, "name")
                let b = try await body(request, context, NameBody.self)
                return try await act(try parsed("/tandem/scene/rename", [.text(scene), .text(b.name)]))
            }
            route(api, "/api", .delete, "scenes/\(name)") { _, context in
                try await act(try parsed("/tandem/scene/delete", [.text(try literal ?? param(context, "name"))]))
            }
        }
    }
}

/// `{"name": "chorus", "paths": ["fx/amp/gain"]}`: no paths (or none given) captures every value of the rig.
struct SceneSaveBody: Codable, Sendable {
    var name: String
    var paths: [String]?
}

/// `{"ramp_ms": 200}`, or no body: the scene's own ramp.
struct RecallBody: Codable, Sendable {
    var rampMS: Double?
    enum CodingKeys: String, CodingKey { case rampMS = "ramp_ms" }
}

/// `{"from": "verse", "to": "chorus", "position": 0.25}`.
struct MorphBody: Codable, Sendable {
    var from: String
    var to: String
    var position: Double
}
