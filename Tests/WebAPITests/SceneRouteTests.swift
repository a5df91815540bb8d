@testable import Coordinator
import Commands
import Foundation
import Presets
import Testing
import TestSupport
@testable import WebAPI

/// The scene routes (issue 48, docs/HTTP.md "Scenes") of a session that runs nothing: what each answers, the
/// statuses of what it refuses, names with spaces and beyond ASCII through the path, and the events a recall, a
/// morph and an edit send. (That a recall changes the sound is the page test's: scripts/page-test.py, "scenes".)
@Suite struct SceneRouteTests {
    static let chorus = "Chorus 2 ✓"

    /// Three scenes, one of them called "morph" (the morph route's own segment).
    static func harness() throws -> ServerHarness {
        try ServerHarness(events: true) { session in
            let gain = ScenePath.control(engine: "fx", plugin: "amp", symbol: "gain")!
            session.setScenes([Scene(name: "verse", values: [SceneValue(path: gain, value: .number(0))]),
                               Scene(name: chorus, values: [SceneValue(path: gain, value: .number(-20))], rampMS: 100),
                               Scene(name: "morph", values: [SceneValue(path: gain, value: .number(-6))])])
        }
    }

    static func object(_ a: HTTPTestClient.Answer?) -> [String: Any] { a?.json as? [String: Any] ?? [:] }
    static func error(_ a: HTTPTestClient.Answer?) -> String { object(a)["error"] as? String ?? "" }
    static func path(_ name: String) -> String {
        "/api/scenes/" + name.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    /// The next event of `kind` on the stream (nil: none before the socket's timeout).
    static func next(_ kind: String, on stream: HTTPTestClient.WebSocket) -> [String: Any]? {
        while let m = stream.nextJSON() {
            if m["type"] as? String == "event", m["kind"] as? String == kind { return m }
        }
        return nil
    }

    @Test func listRecallMorphSaveRenameDelete() throws {
        let h = try Self.harness()
        defer { h.stop() }
        let c = h.client
        let stream = try c.webSocket("/api/events").get()
        #expect(stream.nextJSON()?["type"] as? String == "hello")

        // The list, as the session gives it.
        let list = Self.object(c.get("/api/scenes"))
        let scenes = list["scenes"] as? [[String: Any]] ?? []
        #expect(scenes.map { $0["name"] as? String } == ["verse", Self.chorus, "morph"], "\(list)")
        #expect(scenes.first?["values"] as? [String: Double] == ["fx/amp/gain": 0], "\(list)")
        #expect(scenes.dropFirst().first?["rampMS"] as? Double == 100, "\(list)")
        #expect(list["current"] is NSNull || list["current"] == nil, "\(list)")

        // A recall by a percent-encoded name with a ramp; the rig here has no fx, so its value is reported unapplied.
        let recalled = c.send("POST", Self.path(Self.chorus) + "/recall", json: ["ramp_ms": 50])
        #expect(recalled?.status == 200 && (Self.object(recalled)["detail"] as? String)?.contains("recalled") == true,
                "\(String(describing: recalled))")
        #expect(Self.object(c.get("/api/scenes"))["current"] as? String == Self.chorus)
        let event = Self.next("scene-recalled", on: stream)
        #expect(event?["scene"] as? String == Self.chorus && event?["rampMS"] as? Double == 50
                && event?["source"] as? String == "http", "\(String(describing: event))")
        // No body: the scene's own ramp.
        #expect(c.request("POST", "/api/scenes/verse/recall")?.status == 200)
        #expect(Self.next("scene-recalled", on: stream)?["rampMS"] as? Double == Scene.defaultRampMS)
        #expect(Self.object(c.get("/api/scenes"))["current"] as? String == "verse")

        // A morph half way: no scene is current, the morph is listed and sent.
        let morph = c.send("PUT", "/api/scenes/morph", json: ["from": "verse", "to": Self.chorus, "position": 0.5])
        #expect(morph?.status == 200, "\(String(describing: morph))")
        let listed = Self.object(c.get("/api/scenes"))
        #expect((listed["morph"] as? [String: Any])?["position"] as? Double == 0.5, "\(listed)")
        #expect(listed["current"] is NSNull || listed["current"] == nil, "\(listed)")
        let morphed = Self.next("scene-morphed", on: stream)
        #expect(morphed?["from"] as? String == "verse" && morphed?["to"] as? String == Self.chorus
                && morphed?["position"] as? Double == 0.5, "\(String(describing: morphed))")

        // Save (nothing to capture here: a scene of no values), rename, delete; each says scenes-changed.
        #expect(c.send("POST", "/api/scenes", json: ["name": "bridge é"])?.status == 200)
        #expect(Self.next("scenes-changed", on: stream)?["source"] as? String == "http")
        let renamed = c.send("POST", Self.path("bridge é") + "/rename", json: ["name": "Brücke"])
        #expect(renamed?.status == 200, "\(String(describing: renamed))")
        #expect(Self.next("scenes-changed", on: stream) != nil)
        #expect(c.request("DELETE", Self.path("Brücke"))?.status == 200)
        // The scene called "morph" is reached through the morph route's segment.
        #expect(c.send("POST", "/api/scenes/morph/recall", json: [String: Double]())?.status == 200)
        #expect(Self.object(c.get("/api/scenes"))["current"] as? String == "morph")
        #expect(c.send("POST", "/api/scenes/morph/rename", json: ["name": "morph 2"])?.status == 200)
        #expect(c.send("POST", "/api/scenes/morph%202/rename", json: ["name": "morph"])?.status == 200)
        #expect(c.request("DELETE", "/api/scenes/morph")?.status == 200)
        let names = (Self.object(c.get("/api/scenes"))["scenes"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names == ["verse", Self.chorus], "\(names)")
    }

    @Test func badInputIsRefusedWithItsStatus() throws {
        let h = try Self.harness()
        defer { h.stop() }
        let c = h.client
        let long = String(repeating: "é", count: Scene.nameLength.upperBound + 1)
        let cases: [(String, String, String, Any?, Int, String)] = [
            ("an unknown scene", "POST", "/api/scenes/nothing/recall", nil, 404, "no scene 'nothing'"),
            ("an unknown scene, deleted", "DELETE", "/api/scenes/nothing", nil, 404, "no scene 'nothing'"),
            ("an unknown scene, renamed", "POST", "/api/scenes/nothing/rename", ["name": "x"], 404, "no scene"),
            ("a negative ramp", "POST", "/api/scenes/verse/recall", ["ramp_ms": -1], 400, "out of range"),
            ("a ramp over 10 s", "POST", "/api/scenes/verse/recall", ["ramp_ms": 10_001], 400, "out of range"),
            ("a ramp in words", "POST", "/api/scenes/verse/recall", ["ramp_ms": "fast"], 400, "ramp_ms"),
            ("a position past 1", "PUT", "/api/scenes/morph", ["from": "verse", "to": Self.chorus, "position": 1.5], 400, "out of range"),
            ("a negative position", "PUT", "/api/scenes/morph", ["from": "verse", "to": Self.chorus, "position": -0.01], 400, "out of range"),
            ("a huge position", "PUT", "/api/scenes/morph", ["from": "verse", "to": Self.chorus, "position": 1e308], 400, "out of range"),
            ("a position in words", "PUT", "/api/scenes/morph", ["from": "verse", "to": Self.chorus, "position": "NaN"], 400, "position"),
            ("no position", "PUT", "/api/scenes/morph", ["from": "verse", "to": Self.chorus], 400, "'position' is missing"),
            ("a morph to itself", "PUT", "/api/scenes/morph", ["from": "verse", "to": "verse", "position": 0.5], 400, "two different"),
            ("a morph from nothing", "PUT", "/api/scenes/morph", ["from": "nothing", "to": "verse", "position": 0.5], 404, "no scene"),
            ("an empty name", "POST", "/api/scenes", ["name": ""], 400, "empty"),
            ("a name of 65 characters", "POST", "/api/scenes", ["name": long], 400, "at most 64"),
            ("a name starting with '-'", "POST", "/api/scenes", ["name": "-x"], 400, "'-'"),
            ("a name with a newline", "POST", "/api/scenes", ["name": "a\nb"], 400, "control character"),
            ("a path that is none", "POST", "/api/scenes", ["name": "x", "paths": ["fx"]], 400, "'fx'"),
            ("a path the rig lacks", "POST", "/api/scenes", ["name": "x", "paths": ["fx/amp/gain"]], 404, "fx"),
            ("a name that is no text", "POST", "/api/scenes", ["name": 5], 400, "'name' has the wrong type"),
            ("a rename to an empty name", "POST", "/api/scenes/verse/rename", ["name": ""], 400, "empty"),
            ("a rename to a name in use", "POST", "/api/scenes/verse/rename", ["name": Self.chorus], 400, "already"),
            ("a rename without a body", "POST", "/api/scenes/verse/rename", nil, 400, "a JSON body is needed"),
        ]
        for (what, method, path, body, status, words) in cases {
            let a = body.map { c.send(method, path, json: $0) } ?? c.request(method, path)
            #expect(a?.status == status && Self.error(a).contains(words), "\(what): \(String(describing: a))")
        }
        // Bodies that are not JSON, not JSON of the route's shape, not declared JSON.
        let json = ["Content-Type": "application/json"]
        for garbage in ["{", "[]", "null", "{\"ramp_ms\": 1e400}", "\u{0}\u{1}"] {
            let a = c.request("POST", "/api/scenes/verse/recall", headers: json, body: Array(garbage.utf8))
            #expect(a?.status == 400, "'\(garbage)': \(String(describing: a))")
        }
        let morph = c.request("PUT", "/api/scenes/morph", headers: json,
                              body: Array("{\"from\":\"verse\",\"to\":\"Chorus 2 ✓\",\"position\":1e999}".utf8))
        #expect(morph?.status == 400, "\(String(describing: morph))")
        let plain = c.request("POST", "/api/scenes", headers: ["Content-Type": "text/plain"], body: Array("{\"name\":\"x\"}".utf8))
        #expect(plain?.status == 415, "\(String(describing: plain))")
        // A name with a control character in the path; a malformed percent-encoding.
        #expect(c.request("POST", "/api/scenes/a%0Ab/recall")?.status == 400)
        #expect(c.request("POST", "/api/scenes/%E2%9C/recall")?.status == 400)
        // Nothing was changed by any of it.
        let list = Self.object(c.get("/api/scenes"))
        let names = (list["scenes"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names == ["verse", Self.chorus, "morph"] && (list["current"] == nil || list["current"] is NSNull), "\(list)")
    }

    /// The OpenAPI document's scene name is the model's: its pattern and length refuse what `Scene.nameProblem`
    /// refuses, name by name; its ramp and position ranges are the commands'.
    @Test func theDocumentsSceneConstraintsAreTheModels() throws {
        let url = HTTPServerTests.pageDirectory.deletingLastPathComponent().appendingPathComponent("openapi.json")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let schemas = try #require((doc["components"] as? [String: Any])?["schemas"] as? [String: Any])
        func property(_ schema: String, _ name: String) -> [String: Any] {
            ((schemas[schema] as? [String: Any])?["properties"] as? [String: Any])?[name] as? [String: Any] ?? [:]
        }
        let name = property("SceneSaveBody", "name")
        for (schema, key) in [("SceneNameBody", "name"), ("MorphBody", "from"), ("MorphBody", "to")] {
            #expect(property(schema, key)["pattern"] as? String == name["pattern"] as? String, "\(schema).\(key)")
        }
        #expect(name["minLength"] as? Int == Scene.nameLength.lowerBound && name["maxLength"] as? Int == Scene.nameLength.upperBound)
        let regex = try NSRegularExpression(pattern: try #require(name["pattern"] as? String))
        for n in ["verse", "Chorus 2 ✓", "a", "x-y", "1", "-x", " x", "x ", " ", "a\tb", "a\nb", "x\u{202E}y", "é\u{7}",
                  "Brücke", "morph", "a  b"] {
            let documented = regex.firstMatch(in: n, range: NSRange(n.startIndex..., in: n)) != nil
            let taken = Scene.nameProblem(n) == nil
            #expect(documented == taken, "'\(n)': the document says \(documented), the model \(taken)")
        }
        let ramp = property("RecallBody", "ramp_ms"), position = property("MorphBody", "position")
        #expect(ramp["minimum"] as? Double == Scene.rampRange.lowerBound && ramp["maximum"] as? Double == Scene.rampRange.upperBound)
        #expect(position["minimum"] as? Double == 0 && position["maximum"] as? Double == 1)
    }
}
