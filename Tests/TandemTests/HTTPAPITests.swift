import Testing
import Foundation
import Engine
import Jack
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP and WebSocket API of a running session (docs/HTTP.md), against a real JACK server, the real binary and
/// a client on a plain socket: what it does (the graph, plugins in units, chain edits, takes with Range), what it
/// refuses (no token, a foreign origin or host, traversal, symlinks, unlisted files, a huge body, a slow client),
/// and that none of it costs the take a frame.
@Suite(.serialized) struct HTTPAPITests {
    static let egAmp = "http://lv2plug.in/plugins/eg-amp"
    static var hasPlugins: Bool {
        FileManager.default.fileExists(atPath: "/usr/lib/lv2/eg-amp.lv2") && RackTests.hasSWH
    }

    /// A session with a recorder (`channels`), a player looping a ramp, and a rack with eg-amp (a gain in dB).
    struct Rig {
        let server: JackServer
        let dir: URL
        let tandem: TandemProcess
        let client: HTTPTestClient
        let controlPort: Int

        func stop() {
            if tandem.process.isRunning {
                tandem.process.signal(SIGTERM)
                _ = tandem.process.wait(timeout: 15)
            }
            server.stop()
        }
    }

    static func start(_ label: String, http: String = "127.0.0.1:0", channels: Int = 2, period: Int = 256,
                      environment: [String: String] = [:], extra: String = "", isolate: Bool = false) throws -> Rig {
        let server = try TestEnvironment.server(label, period: period)
        let dir = TestEnvironment.temporaryDirectory(label)
        let ramp = dir.appendingPathComponent("ramp.wav").path
        try TestEnvironment.writeWAV((0..<48000 * channels).map { Float($0 % 48000) / 48000 - 0.5 }, channels: channels,
                                     path: ramp, sample: .float32)
        let controlPort = 20000 + Int.random(in: 0..<20000)
        let preset = dir.appendingPathComponent("rig.toml").path
        try """
            [session]
            name = "rig"
            directory = "\(dir.path)"
            control_port = \(controlPort)
            [recorder]
            client = "\(label)-rec"
            channels = \(channels)
            start = "armed"
            [player]
            client = "\(label)-play"
            channels = \(channels)
            queue = ["\(ramp)"]
            loop = "all"
            [[rack]]
            name = "fx"
            client = "\(label)-fx"
            isolate = \(isolate)
            inputs = 1
            [[rack.plugins]]
            uri = "\(egAmp)"
            name = "amp"
            \(extra)
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let tandem = try TandemProcess(["run", preset, "--no-view", "--http", http], server: server,
                                       extraEnvironment: environment, log: dir.appendingPathComponent("run.log").path)
        guard tandem.waitFor("HTTP API listening", timeout: 20),
              let line = tandem.output.split(separator: "\n").first(where: { $0.contains("HTTP API listening") }),
              let range = line.range(of: #":(\d+)/"#, options: .regularExpression),
              let port = Int(line[range].dropFirst().dropLast()) else {
            tandem.process.signal(SIGKILL)
            server.stop()
            throw RigError(description: "no HTTP server: \(tandem.output)")
        }
        return Rig(server: server, dir: dir, tandem: tandem, client: HTTPTestClient(port: port), controlPort: controlPort)
    }

    struct RigError: Error, CustomStringConvertible { let description: String }

    static func object(_ a: HTTPTestClient.Answer?) -> [String: Any] { a?.json as? [String: Any] ?? [:] }
    static func array(_ a: HTTPTestClient.Answer?) -> [[String: Any]] { a?.json as? [[String: Any]] ?? [] }

    // MARK: What it does

    @Test(.enabled(if: hasPlugins))
    func graphPluginsInUnitsChainEditsAndTakes() throws {
        let rig = try Self.start("httpapi")
        defer { rig.stop() }
        let c = rig.client

        // The index, the document, the status.
        #expect(Self.object(c.get("/api"))["openapi"] as? String == "/api/openapi.json")
        let doc = c.get("/api/openapi.json")
        #expect(doc?.status == 200 && (Self.object(doc)["openapi"] as? String)?.hasPrefix("3.") == true, "\(String(describing: doc))")
        let status = Self.object(c.get("/api/status"))
        #expect(status["recorder"] != nil && status["player"] != nil, "\(status)")

        // The graph: ports with type, direction, latency; connect and disconnect as a patchbay does.
        let graph = Self.array(c.get("/api/graph"))
        let out = try #require(graph.first { $0["name"] as? String == "httpapi-play:out_1" })
        #expect(out["type"] as? String == "audio" && out["direction"] as? String == "output", "\(out)")
        #expect(out["captureLatency"] != nil && out["playbackLatency"] != nil)
        let link = ["from": "httpapi-play:out_1", "to": "httpapi-fx:in_1"]
        #expect(c.send("POST", "/api/graph/connect", json: link)?.status == 200)
        var lsp = try TestEnvironment.run(["jack_lsp", "-s", rig.server.name, "-c", "httpapi-play:out_1"])
        #expect(lsp.output.contains("httpapi-fx:in_1"), "\(lsp.output)")
        #expect(c.send("POST", "/api/graph/disconnect", json: link)?.status == 200)
        lsp = try TestEnvironment.run(["jack_lsp", "-s", rig.server.name, "-c", "httpapi-play:out_1"])
        #expect(!lsp.output.contains("httpapi-fx:in_1"), "\(lsp.output)")
        let bad = c.send("POST", "/api/graph/connect", json: ["from": "nobody:out", "to": "httpapi-fx:in_1"])
        #expect(bad?.status == 404 && bad?.text.contains("nobody:out") == true, "\(String(describing: bad))")

        // Controls in units: "-7.5 dB" over HTTP, over OSC and the plain number give the same value.
        let path = "/api/engines/fx/plugins/amp/controls/gain"
        let viaText = c.send("PUT", path, json: ["value": "-7.5 dB"])
        #expect(viaText?.status == 200, "\(String(describing: viaText))")
        let httpValue = Self.object(viaText)["value"] as? Double
        #expect(Self.object(viaText)["text"] as? String == "-7.5 dB", "\(String(describing: viaText))")
        _ = c.send("PUT", path, json: ["value": 0])
        let osc = try CommandSurfacesTests.osc(rig.controlPort, "/tandem/plugin/set", [.text("fx"), .text("amp"), .text("gain"), .text("-7.5 dB")])
        #expect(osc.ok, "\(osc)")
        let oscValue = Self.object(c.get(path))["value"] as? Double
        _ = c.send("PUT", path, json: ["value": -7.5])
        let numberValue = Self.object(c.get(path))["value"] as? Double
        print("measured: gain set as \"-7.5 dB\" over HTTP \(String(describing: httpValue)), over OSC \(String(describing: oscValue)), as -7.5 \(String(describing: numberValue))")
        #expect(httpValue == -7.5 && oscValue == -7.5 && numberValue == -7.5)
        for (value, status) in [("-7.5 Hz", 400), ("loud", 400), ("1e30 dB", 400)] as [(String, Int)] {
            let r = c.send("PUT", path, json: ["value": value])
            #expect(r?.status == status, "\(value): \(String(describing: r))")
        }
        #expect(c.send("PUT", path, json: ["value": 1e300])?.status == 400)
        #expect(c.send("PUT", "/api/engines/fx/plugins/amp/controls/nope", json: ["value": 0])?.status == 404)
        #expect(c.send("PUT", "/api/engines/nope/plugins/amp/controls/gain", json: ["value": 0])?.status == 404)
        #expect(c.request("PUT", path, headers: ["Content-Type": "application/json"], body: Array("{\"value\":".utf8))?.status == 400)
        #expect(c.request("PUT", path, headers: ["Content-Type": "text/plain"], body: Array("{\"value\":1}".utf8))?.status == 415)

        // Every control says what it is: range, default, unit, hints, its value in its unit.
        let plugins = Self.array(c.get("/api/plugins?engine=fx"))
        let gain = try #require((plugins.first?["controls"] as? [[String: Any]])?.first { $0["symbol"] as? String == "gain" })
        #expect(gain["unit"] as? String == "db" && gain["text"] as? String == "-7.5 dB" && gain["logarithmic"] as? Bool == false,
                "\(gain)")
        #expect(plugins.first?["timing"] != nil, "per-plugin timing: \(String(describing: plugins.first))")

        // The chain edited live: add at the front, move, remove; a plugin that is not installed is refused.
        #expect(c.send("POST", "/api/engines/fx/plugins", json: ["uri": RackTests.amp, "at": 0])?.status == 200)
        var names = Self.array(c.get("/api/plugins?engine=fx")).compactMap { $0["name"] as? String }
        #expect(names == ["amp-2", "amp"] || names == ["amp", "amp-2"], "\(names)")
        #expect(c.send("POST", "/api/engines/fx/plugins/amp/move", json: ["to": 0])?.status == 200)
        names = Self.array(c.get("/api/plugins?engine=fx")).compactMap { $0["name"] as? String }
        #expect(names.first == "amp", "\(names)")
        #expect(c.request("DELETE", "/api/engines/fx/plugins/\(names.last ?? "")")?.status == 200)
        names = Self.array(c.get("/api/plugins?engine=fx")).compactMap { $0["name"] as? String }
        #expect(names == ["amp"], "\(names)")
        #expect(Self.object(c.get(path))["value"] as? Double == -7.5, "the edit kept the other plugin's value")
        let missing = c.send("POST", "/api/engines/fx/plugins", json: ["uri": "urn:nowhere:plugin"])
        #expect(missing?.status == 400 && missing?.text.contains("urn:nowhere:plugin") == true, "\(String(describing: missing))")
        #expect(c.send("POST", "/api/engines/fx/plugins/amp/move", json: ["to": 5])?.status == 400)

        // Favourites, kept in the session folder.
        let favs = [["engine": "fx", "plugin": "amp", "symbol": "gain"]]
        #expect(c.send("PUT", "/api/favourites", json: favs)?.status == 200)
        #expect(Self.array(c.get("/api/favourites")).count == 1)
        #expect(FileManager.default.fileExists(atPath: rig.dir.appendingPathComponent("tandem-favourites.json").path))

        // A take: recorded, listed, downloaded whole and by range, bit-exact.
        #expect(c.request("POST", "/api/recorder/start")?.status == 200)
        usleep(1_000_000)
        #expect(c.request("POST", "/api/recorder/stop")?.status == 200)
        var takes: [[String: Any]] = []
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            takes = Self.array(c.get("/api/takes"))
            return !takes.isEmpty
        })
        let id = try #require(takes.first?["id"] as? String)
        let file = try #require((takes.first?["files"] as? [String])?.first)
        let onDisk = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        let whole = try #require(c.get("/api/takes/\(id)/files/0"))
        #expect(whole.status == 200 && whole.body == onDisk, "download of \(onDisk.count) bytes: \(whole.status), \(whole.body.count) bytes")
        #expect(whole.headers["accept-ranges"] == "bytes" && whole.headers["content-type"] == "audio/wav")
        let part = c.get("/api/takes/\(id)/files/0", headers: ["Range": "bytes=100-1123"])
        #expect(part?.status == 206 && part?.body == Array(onDisk[100...1123]), "\(String(describing: part?.headers))")
        let tail = c.get("/api/takes/\(id)/files/0", headers: ["Range": "bytes=-10"])
        #expect(tail?.status == 206 && tail?.body == Array(onDisk.suffix(10)))
        #expect(c.get("/api/takes/\(id)/files/0", headers: ["Range": "bytes=999999999-"])?.status == 416)
        #expect(Self.object(c.get("/api/takes/\(id)"))["frames"] != nil)
        print("measured: take \(id) downloaded bit-exact, \(onDisk.count) bytes; range and suffix range exact")

        // The event stream: hello, then every control change with its sequence number.
        guard case .success(let ws) = c.webSocket("/api/events?meters=30") else {
            Issue.record("no event stream")
            return
        }
        let hello = try #require(ws.nextJSON())
        #expect(hello["type"] as? String == "hello", "\(hello)")
        let first = hello["sequence"] as? Int ?? -1
        _ = c.send("PUT", path, json: ["value": -3])
        var changed: [String: Any]?
        var meters = 0
        let began = Date()
        while Date().timeIntervalSince(began) < 2, let m = ws.nextJSON() {
            if m["type"] as? String == "event", m["kind"] as? String == "control-changed", changed == nil { changed = m }
            if m["type"] as? String == "meters" { meters += 1 }
        }
        #expect((changed?["sequence"] as? Int ?? 0) > first, "\(String(describing: changed))")
        #expect((changed?["text"] as? String)?.contains("fx amp gain -3") == true, "\(String(describing: changed))")
        print("measured: \(meters) meter frames in 2 s at ?meters=30")
        #expect(meters >= 40 && meters <= 70, "\(meters)")
        // The client closes while meters flow: the server answers with its close and sends nothing after it (a
        // browser calls a frame after the close an error and drops the socket as failed; the page did so).
        let closing = ws.closeAndDrain()
        #expect(closing.closeSeen && closing.framesAfterClose == 0, "\(closing)")

        // Metrics: the session's, the plugins', the server's own; Prometheus's checker passes them.
        let metrics = c.get("/metrics")
        #expect(metrics?.text.contains(#"tandem_plugin_cycle_cost_seconds{engine="fx",plugin="amp",stat="mean"}"#) == true,
                "\(String(describing: metrics?.text.prefix(300)))")
        if TestEnvironment.hasProgram("promtool"), let text = metrics?.text {
            let f = rig.dir.appendingPathComponent("metrics.txt").path
            try text.write(toFile: f, atomically: true, encoding: .utf8)
            let check = try TestEnvironment.run(["/bin/sh", "-c", "promtool check metrics < '\(f)'"])
            #expect(check.code == 0, "promtool: \(check.output)")
        }
        #expect(rig.tandem.process.isRunning)
    }

    /// A rack in its own process: its plugins are listed, read and set through the same routes (relayed to the
    /// rack's process from the request's own task), and its changes come back as events.
    @Test(.enabled(if: hasPlugins))
    func anIsolatedRacksPluginsAreReachedThroughItsProcess() throws {
        let rig = try Self.start("httpiso", isolate: true)
        defer { rig.stop() }
        let c = rig.client
        var listed: [[String: Any]] = []
        #expect(TestEnvironment.waitUntil(timeout: 20) {
            listed = Self.array(c.get("/api/plugins"))
            return listed.contains { $0["engine"] as? String == "fx" }
        }, "the isolated rack's plugins are in the list: \(listed)")
        guard case .success(let ws) = c.webSocket("/api/events") else {
            Issue.record("no event stream")
            return
        }
        _ = ws.nextJSON()
        let path = "/api/engines/fx/plugins/amp/controls/gain"
        let set = c.send("PUT", path, json: ["value": "-7.5 dB"])
        #expect(set?.status == 200 && Self.object(set)["text"] as? String == "-7.5 dB", "\(String(describing: set))")
        #expect(Self.object(c.get(path))["value"] as? Double == -7.5)
        #expect(c.send("PUT", path, json: ["value": "3 Hz"])?.status == 400)
        #expect(c.send("PUT", "/api/engines/fx/plugins/nope/controls/gain", json: ["value": 0])?.status == 404)
        var heard = false
        let began = Date()
        while !heard, Date().timeIntervalSince(began) < 5, let m = ws.nextJSON() {
            heard = m["kind"] as? String == "control-changed" && (m["text"] as? String)?.contains("fx amp gain -7.5") == true
        }
        #expect(heard, "the rack's change came back as an event")
    }

    // MARK: What it refuses

    @Test(.enabled(if: hasPlugins))
    func withoutTheTokenEverythingIs401AndForeignOriginsAndHostsAre403() throws {
        let config = TestEnvironment.temporaryDirectory("httptoken-config")
        let rig = try Self.start("httptoken", http: "0.0.0.0:0", environment: ["XDG_CONFIG_HOME": config.path])
        defer { rig.stop() }
        let tokenFile = config.appendingPathComponent("tandem/http-token").path
        var st = stat()
        #expect(stat(tokenFile, &st) == 0 && st.st_mode & 0o777 == 0o600, "the token file is the owner's only")
        let printed = try TestEnvironment.run([TestEnvironment.product("tandem"), "http-token"],
                                              environment: ["XDG_CONFIG_HOME": config.path])
        let token = printed.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 64, "\(printed.output)")

        let anonymous = rig.client
        let paths = ["/api", "/api/status", "/api/graph", "/api/engines", "/api/plugins", "/api/takes", "/api/presets",
                     "/api/maps", "/api/installed-plugins", "/api/favourites", "/api/openapi.json", "/metrics",
                     "/api/events", "/api/takes/x/files/0", "/api/nothing-here"]
        for p in paths {
            let a = anonymous.get(p)
            #expect(a?.status == 401 && a?.headers["www-authenticate"]?.hasPrefix("Bearer") == true, "\(p): \(String(describing: a))")
        }
        for (method, p) in [("POST", "/api/recorder/start"), ("PUT", "/api/engines/fx/plugins/amp/controls/gain"),
                            ("DELETE", "/api/maps"), ("POST", "/api/graph/connect")] {
            #expect(anonymous.request(method, p)?.status == 401, "\(method) \(p)")
        }
        // The page's own files load without it (they hold nothing of the session; the page then asks for the token).
        #expect(anonymous.get("/")?.status == 200 && anonymous.get("/page/main.js")?.status == 200)
        #expect(anonymous.get("/page/../api/status")?.status != 200)
        let wrong = HTTPTestClient(port: rig.client.port, token: String(repeating: "0", count: 64))
        #expect(wrong.get("/api/status")?.status == 401)
        if case .failure(let e) = anonymous.webSocket("/api/events") {
            #expect(e.answer?.status == 401, "\(String(describing: e.answer))")
        } else {
            Issue.record("a WebSocket without the token was let in")
        }
        let owner = HTTPTestClient(port: rig.client.port, token: token)
        #expect(owner.get("/api/status")?.status == 200)
        #expect(owner.get("/api/status?token=\(token)")?.status == 200)
        // The token in the query only where a browser cannot send a header (the event stream, a take download): a
        // read of the API needs the header (issue 44, item 3).
        #expect(HTTPTestClient(port: rig.client.port).get("/api/status?token=\(token)")?.status == 401, "token= in the query")
        switch HTTPTestClient(port: rig.client.port).webSocket("/api/events?token=\(token)") {
        case .success(let ws): _ = ws.closeAndDrain()
        case .failure(let e): Issue.record("the event stream refused token= in the query: \(String(describing: e.answer))")
        }
        guard case .success = owner.webSocket("/api/events") else {
            Issue.record("the owner's WebSocket was refused")
            return
        }
        // A foreign origin may read nothing it changes: commands and the event stream are refused.
        let foreign = ["Origin": "http://evil.example"]
        #expect(owner.request("POST", "/api/recorder/start", headers: foreign)?.status == 403)
        if case .failure(let e) = owner.webSocket("/api/events", headers: foreign) {
            #expect(e.answer?.status == 403, "\(String(describing: e.answer))")
        } else {
            Issue.record("a foreign origin opened the event stream")
        }
        // No CORS unless configured.
        #expect(owner.get("/api/status", headers: foreign)?.headers["access-control-allow-origin"] == nil)
    }

    @Test(.enabled(if: hasPlugins))
    func traversalSymlinksUnlistedFilesHugeBodiesSlowClientsAndFloodsAreRefused() throws {
        let rig = try Self.start("httphostile", extra: "")
        defer { rig.stop() }
        let c = rig.client
        #expect(c.request("POST", "/api/recorder/start")?.status == 200)
        defer { _ = c.request("POST", "/api/recorder/stop") }

        // DNS rebinding: a loopback server answers only to a loopback Host.
        #expect(c.get("/api/status", headers: ["Host": "evil.example:80"])?.status == 403)

        // Files: only what a report lists, inside the folder, never through a link.
        let outside = TestEnvironment.temporaryDirectory("httphostile-outside").appendingPathComponent("secret.wav").path
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside))
        let link = rig.dir.appendingPathComponent("link.wav").path
        symlink(outside, link)
        let listed = rig.dir.appendingPathComponent("forged.json").path
        try """
            {"take": 99, "files": ["\(outside)", "\(link)", "/etc/passwd"], "frames": 1, "sampleRate": 48000,
             "channels": 1, "ended": "stopped"}
            """.write(toFile: listed, atomically: true, encoding: .utf8)
        for p in ["/api/takes/..%2F..%2Fetc%2Fpasswd/files/0", "/api/takes/../../etc/passwd", "/api/takes/%2e%2e/files/0",
                  "/api/page/..%2F..%2Fetc%2Fpasswd", "/page/..%2Fopenapi.json", "/api/takes/nope/files/0",
                  "/api/takes/forged/files/-1", "/api/takes/forged/files/99999999999999999999"] {
            let a = c.get(p)
            #expect(a.map { [400, 403, 404].contains($0.status) } == true && a?.text.contains("root:") == false,
                    "\(p): \(String(describing: a))")
        }
        for i in 0..<3 {
            let a = c.get("/api/takes/forged/files/\(i)")
            #expect(a.map { [403, 404].contains($0.status) } == true && a?.text.contains("secret") == false
                    && a?.text.contains("root:") == false, "listed file \(i): \(String(describing: a))")
        }

        // A 100 MB body: refused by its length at once, the connection closed.
        var began = Date()
        let huge = c.request("POST", "/api/maps", headers: ["Content-Length": "104857600", "Content-Type": "application/json"],
                             body: Array(repeating: 0x20, count: 65536))
        let hugeSeconds = Date().timeIntervalSince(began)
        #expect(huge?.status == 413, "\(String(describing: huge))")
        // Chunked, so no length to refuse it by: cut when the limit is passed.
        began = Date()
        let chunked = chunkedFlood(c, megabytes: 100)
        let chunkedSeconds = Date().timeIntervalSince(began)
        #expect(chunked.status == 413 || chunked.status == 0, "chunked body: \(chunked)")
        #expect(chunked.sentMB < 100, "the server stopped reading: \(chunked.sentMB) MB sent")

        // A client sending its head a byte a second is cut off (10 s), as is one that sends nothing.
        began = Date()
        let slow = slowHeader(c, bytesPerSecond: 2)
        let slowSeconds = Date().timeIntervalSince(began)
        #expect(slow && slowSeconds < 15, "slow header cut after \(slowSeconds) s")

        // A flood of connections: 300 opened and held; the session records on, and answers again after.
        var held: [Int32] = []
        for _ in 0..<300 { if let fd = c.connect(timeout: 2) { held.append(fd) } }
        usleep(2_000_000)
        for fd in held { close(fd) }
        #expect(TestEnvironment.waitUntil(timeout: 15) { c.get("/api/status")?.status == 200 })
        let recorder = Self.object(c.get("/api/status"))["recorder"] as? [String: Any]
        #expect(recorder?["droppedFrames"] as? Int == 0 && recorder?["recording"] as? Bool == true, "\(String(describing: recorder))")
        print(String(format: "measured: 100 MB declared body refused in %.3f s; chunked body cut after %.1f MB in %.2f s; "
                     + "slow header cut after %.1f s; %d connections held 2 s, 0 frames dropped", hugeSeconds, chunked.sentMB,
                     chunkedSeconds, slowSeconds, held.count))
        #expect(rig.tandem.process.isRunning)
    }

    /// Sends a chunked body of `megabytes` as fast as the server takes it; the answer's status (0: closed without
    /// one) and how much went before the server stopped taking it.
    func chunkedFlood(_ c: HTTPTestClient, megabytes: Int) -> (status: Int, sentMB: Double) {
        guard let fd = c.connect(timeout: 5) else { return (-1, 0) }
        defer { close(fd) }
        let head = "POST /api/maps HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let chunk = Array("10000\r\n".utf8) + [UInt8](repeating: 0x20, count: 65536) + Array("\r\n".utf8)
        var sent = 0
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while sent < megabytes * 16 {
            let n = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += 1
        }
        let answer = HTTPTestClient.parse(HTTPTestClient.readAll(fd))
        return (answer?.status ?? 0, Double(sent) / 16)
    }

    /// Sends a request head `bytesPerSecond` bytes a second; true when the server closed the connection.
    func slowHeader(_ c: HTTPTestClient, bytesPerSecond: Int) -> Bool {
        guard let fd = c.connect(timeout: 1) else { return false }
        defer { close(fd) }
        let head = Array("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(String(repeating: "a", count: 200))\r\n\r\n".utf8)
        for byte in head {
            var b = byte
            if send(fd, &b, 1, Int32(MSG_NOSIGNAL)) <= 0 { return true }
            usleep(UInt32(1_000_000 / bytesPerSecond))
            var probe: UInt8 = 0
            if recv(fd, &probe, 1, Int32(MSG_DONTWAIT)) == 0 { return true }
        }
        return false
    }

    /// A client that opens the event stream and never reads is cut off and counted; the others go on.
    @Test(.enabled(if: hasPlugins))
    func aSlowEventClientIsCutOffAndCounted() throws {
        let rig = try Self.start("httpslow", channels: 16)
        defer { rig.stop() }
        let c = rig.client
        guard let fd = c.connect(timeout: 5) else {
            Issue.record("no connection")
            return
        }
        defer { close(fd) }
        var small: Int32 = 2048
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let head = "GET /api/events?meters=60 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard case .success(let reader) = c.webSocket("/api/events?meters=10") else {
            Issue.record("the second client was refused")
            return
        }
        let began = Date()
        var cut = 0.0
        #expect(TestEnvironment.waitUntil(timeout: 60) {
            cut = Self.metric(c.get("/metrics")?.text, "tandem_http_event_clients_cut_total") ?? 0
            return cut >= 1
        }, "the client that does not read is cut")
        print(String(format: "measured: a client that never reads cut after %.1f s", Date().timeIntervalSince(began)))
        var got = 0
        let t = Date()
        while Date().timeIntervalSince(t) < 1, reader.nextJSON() != nil { got += 1 }
        #expect(got > 3, "the reading client still gets its frames (\(got) in 1 s)")
    }

    static func metric(_ text: String?, _ name: String) -> Double? {
        guard let text else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") { return Double(line.dropFirst(name.count + 1)) }
        return nil
    }
}
