import Commands
import Foundation
import Testing
import Takes
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
@testable import WebAPI

/// The server of a session that runs nothing, on a plain socket: what every answer carries, what it refuses before
/// any handler, how fast.
@Suite struct HTTPServerTests {
    // MARK: Pre-auth lockout (issue 44, item 1)

    /// A thousand connections that send nothing cannot keep a request out: the status is answered within a second
    /// throughout, while a request already under way on a slow connection is never closed for them.
    @Test func idleConnectionsCannotLockOutARequest() throws {
        let wanted = 1000
        // Each connection is two descriptors in this process (the client's and the server's).
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(4 * wanted + 1024))
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        let idleCount = min(wanted, (Int(limit.rlim_cur) - 256) / 2)
        let h = try ServerHarness()
        defer { h.stop() }
        let host = "127.0.0.1:\(h.port)"

        // A request under way: its head in, its body half sent.
        let slow = try #require(h.client.connect(timeout: 5))
        defer { close(slow) }
        let head = "PUT /api/favourites HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n["
        _ = Array(head.utf8).withUnsafeBytes { send(slow, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }

        var idle: [Int32] = []
        defer { idle.forEach { close($0) } }
        var latencies: [Double] = []
        for i in 0..<idleCount {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { break }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(h.port).bigEndian)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            idle.append(fd)
            if i % 250 == 249 {   // a status poller meanwhile
                latencies.append(ServerHarness.time { #expect(h.client.get("/api/status")?.status == 200) })
            }
        }
        for _ in 0..<5 {
            var answer: HTTPTestClient.Answer?
            latencies.append(ServerHarness.time { answer = h.client.raw(Array("GET /api/status HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n".utf8), timeout: 3) })
            #expect(answer?.status == 200, "status with \(idle.count) idle connections: \(String(describing: answer))")
        }
        let slowest = latencies.max() ?? 0
        print("measured: status with \(idle.count) idle connections open: slowest \(String(format: "%.3f", slowest)) s of \(latencies.count); "
              + "\(h.server.connections.evictedCount) idle connections closed for newer ones")
        #expect(slowest < 1, "the status took \(slowest) s with \(idle.count) idle connections")

        // The request under way was not closed for them: its body's end gets its answer.
        _ = Array("]".utf8).withUnsafeBytes { send(slow, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let answer = HTTPTestClient.parse(HTTPTestClient.readAll(slow))
        #expect(answer?.status != nil, "the slow request was cut: \(String(describing: answer))")
    }

    // MARK: Clickjacking (issue 44, item 2)

    /// Every answer, the page's and the API's, errors and refusals by the connection's guard too, forbids framing
    /// (CSP frame-ancestors and X-Frame-Options), sniffing, and inline script.
    @Test func everyAnswerForbidsFramingSniffingAndInlineScript() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let c = h.client
        var answers: [(String, HTTPTestClient.Answer?)] = [
            ("page", c.get("/")), ("page file", c.get("/page/main.js")), ("status", c.get("/api/status")),
            ("404", c.get("/api/nothing")), ("405", c.request("DELETE", "/api/status")),
            ("400 body", c.request("POST", "/api/graph/connect", headers: ["Content-Type": "application/json"], body: Array("{".utf8))),
            ("guard 400", c.raw(Array("get / HTTP/1.1\r\n\r\n".utf8))),
            ("refused upgrade", (c.webSocket("/api/nowhere").failureAnswer)),
        ]
        answers.append(("options", c.request("OPTIONS", "/api/status")))
        for (what, a) in answers {
            let a = try #require(a, "\(what): no answer")
            let csp = a.headers["content-security-policy"] ?? ""
            #expect(csp.contains("frame-ancestors 'none'"), "\(what): \(a.headers)")
            #expect(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline") && csp.contains("object-src 'none'"),
                    "\(what): \(csp)")
            #expect(a.headers["x-frame-options"] == "DENY", "\(what): \(a.headers)")
            #expect(a.headers["x-content-type-options"] == "nosniff", "\(what): \(a.headers)")
        }
    }

    /// With origins configured, those (and only well-formed ones) may frame the page.
    @Test func configuredOriginsMayFrameThePage() throws {
        let h = try ServerHarness(origins: ["http://studio.local:8080", "https://desk.example", "http://x; script-src *"])
        defer { h.stop() }
        let csp = h.client.get("/")?.headers["content-security-policy"] ?? ""
        #expect(csp.contains("frame-ancestors http://studio.local:8080 https://desk.example;") || csp.hasSuffix("frame-ancestors http://studio.local:8080 https://desk.example"), "\(csp)")
        #expect(!csp.contains("script-src *"), "\(csp)")
    }

    /// The page holds nothing the policy forbids: no inline script or handler, no style attribute.
    @Test func thePageNeedsNoInlineScriptOrStyle() throws {
        let dir = Self.pageDirectory
        let html = try String(contentsOf: dir.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(html.range(of: #"<script(?![^>]*\bsrc=)[^>]*>"#, options: .regularExpression) == nil, "an inline <script>")
        #expect(html.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil, "an inline handler")
        #expect(html.range(of: #"\sstyle\s*="#, options: .regularExpression) == nil, "a style attribute")
        #expect(!html.contains("<style"), "an inline <style>")
        #expect(!html.contains("javascript:"))
        // h() sets a `style` through CSSOM (allowed), never as an attribute (refused by style-src 'self').
        let dom = try String(contentsOf: dir.appendingPathComponent("dom.js"), encoding: .utf8)
        #expect(dom.contains("el.style.cssText = value"), "dom.js's h() must not set style attributes")
        for file in try FileManager.default.contentsOfDirectory(atPath: dir.path) where file.hasSuffix(".js") {
            let js = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            #expect(js.range(of: #"setAttribute\(\s*["']style|\beval\(|new Function\(|\.on[a-z]+\s*=\s*["']"#,
                             options: .regularExpression) == nil, "\(file): what the content policy refuses")
        }
    }

    // MARK: CORS and the token (issue 44, item 3)

    static let origin = "http://studio.local:8080"
    static let token = "0123456789abcdef0123456789abcdef"

    /// A configured origin's preflight is answered before the token check, with the CORS headers that let the browser
    /// send `Authorization`; the request itself then works with the token in the header, `Bearer` in any case.
    @Test func aConfiguredOriginsPreflightIsAnsweredAndItsTokenWorks() throws {
        let h = try ServerHarness(token: Self.token, origins: [Self.origin])
        defer { h.stop() }
        var anonymous = h.client
        anonymous.token = nil
        let preflight = try #require(anonymous.request("OPTIONS", "/api/recorder/mark", headers: [
            "Origin": Self.origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type"]))
        #expect((200...204).contains(preflight.status), "\(preflight)")
        #expect(preflight.headers["access-control-allow-origin"] == Self.origin, "\(preflight.headers)")
        let allowed = (preflight.headers["access-control-allow-headers"] ?? "").lowercased()
        #expect(allowed.contains("authorization") && allowed.contains("content-type"), "\(preflight.headers)")
        let methods = preflight.headers["access-control-allow-methods"] ?? ""
        #expect(["GET", "POST", "PUT", "DELETE"].allSatisfy { methods.contains($0) }, "\(preflight.headers)")
        #expect(preflight.headers["vary"]?.contains("Origin") == true, "\(preflight.headers)")

        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let a = anonymous.get("/api/status", headers: ["Origin": Self.origin, "Authorization": "\(scheme) \(Self.token)"])
            #expect(a?.status == 200, "\(scheme): \(String(describing: a))")
            #expect(a?.headers["access-control-allow-origin"] == Self.origin, "\(scheme)")
        }
        // A refusal is readable by the configured origin's page (it can ask for the token).
        let refused = anonymous.get("/api/status", headers: ["Origin": Self.origin, "Authorization": "Bearer wrong"])
        #expect(refused?.status == 401 && refused?.headers["access-control-allow-origin"] == Self.origin,
                "\(String(describing: refused?.headers))")
        // Another origin gets no CORS headers, preflight or not.
        let foreign = anonymous.request("OPTIONS", "/api/recorder/mark", headers: [
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization"])
        #expect(foreign?.headers["access-control-allow-origin"] == nil, "\(String(describing: foreign?.headers))")
    }

    /// The token in the query only where a browser cannot send a header: the event stream's upgrade and a take
    /// file's download; never for a write, nor for a read that `fetch` can make with the header.
    @Test func theQueryTokenOnlyWhereNoHeaderCanBeSent() throws {
        let h = try ServerHarness(token: Self.token, origins: [Self.origin])
        defer { h.stop() }
        var anonymous = h.client
        anonymous.token = nil
        let q = "token=\(Self.token)"
        #expect(anonymous.request("POST", "/api/recorder/mark?\(q)")?.status == 401)
        #expect(anonymous.request("PUT", "/api/favourites?\(q)", body: Array("[]".utf8))?.status == 401)
        #expect(anonymous.request("DELETE", "/api/maps?\(q)")?.status == 401)
        #expect(anonymous.get("/api/status?\(q)")?.status == 401)
        let download = anonymous.get("/api/takes/none/files/0?\(q)")
        #expect(download?.status != 401, "a download link carries the token: \(String(describing: download))")
        guard case .success(let ws) = anonymous.webSocket("/api/events?\(q)") else {
            Issue.record("the event stream with token= in the query was refused")
            return
        }
        #expect(ws.nextJSON()?["type"] as? String == "hello")
        _ = ws.closeAndDrain()
        #expect(anonymous.webSocket("/api/events").failureAnswer?.status == 401)
    }

    // MARK: Malformed framing (issue 44, item 4)

    /// Requests whose framing a proxy in front and this server could read differently (request smuggling), or that
    /// HTTP/1.1 forbids: each is answered 400 at once and reaches no handler, on a connection's first request and on
    /// a kept-alive one's next. Each would write the favourites (PUT), so a handler reached leaves the file behind.
    @Test func malformedFramingIsAnswered400AtOnceAndReachesNoHandler() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-framing-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let h = try ServerHarness(sessionDirectory: dir.path)
        defer { h.stop() }
        let host = "127.0.0.1:\(h.port)"
        let favourites = dir.appendingPathComponent("tandem-favourites.json").path
        func put(_ headers: String, _ body: String = "[]", target: String = "/api/favourites") -> [UInt8] {
            Array("PUT \(target) HTTP/1.1\r\n\(headers)Content-Type: application/json\r\n\r\n\(body)".utf8)
        }
        let cases: [(String, [UInt8])] = [
            ("negative length", put("Host: \(host)\r\nContent-Length: -1\r\n")),
            ("length with chunked", put("Host: \(host)\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n", "2\r\n[]\r\n0\r\n\r\n")),
            ("chunked with length", put("Host: \(host)\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n", "2\r\n[]\r\n0\r\n\r\n")),
            ("duplicate length", put("Host: \(host)\r\nContent-Length: 2\r\nContent-Length: 2\r\n")),
            ("differing lengths", put("Host: \(host)\r\nContent-Length: 2\r\nContent-Length: 3\r\n")),
            ("length list", put("Host: \(host)\r\nContent-Length: 2, 2\r\n")),
            ("signed length", put("Host: \(host)\r\nContent-Length: +2\r\n")),
            ("a coding other than chunked", put("Host: \(host)\r\nTransfer-Encoding: gzip, chunked\r\n", "2\r\n[]\r\n0\r\n\r\n")),
            ("two Hosts", put("Host: \(host)\r\nHost: evil.example\r\nContent-Length: 2\r\n")),
            ("no Host", put("Content-Length: 2\r\n")),
            ("absolute-form, another host", put("Host: \(host)\r\nContent-Length: 2\r\n", target: "http://evil.example/api/favourites")),
            ("absolute-form, another scheme", put("Host: \(host)\r\nContent-Length: 2\r\n", target: "ftp://\(host)/api/favourites")),
            ("header folding", put("Host: \(host)\r\nX-Note: a\r\n b\r\nContent-Length: 2\r\n")),
            ("NUL in a value", put("Host: \(host)\r\nX-Note: a\u{0}b\r\nContent-Length: 2\r\n")),
            ("NUL in the target", put("Host: \(host)\r\nContent-Length: 2\r\n", target: "/api/favourites\u{0}")),
        ]
        let first = Array("GET /api HTTP/1.1\r\nHost: \(host)\r\n\r\n".utf8)
        var slowest = 0.0
        for (what, bytes) in cases {
            for kept in [false, true] {
                var text = ""
                let seconds = ServerHarness.time {
                    guard let fd = h.client.connect(timeout: 3) else { return }
                    defer { close(fd) }
                    if kept {
                        _ = first.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        text = String(decoding: Self.readOneAnswer(fd), as: UTF8.self)
                    }
                    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    text += String(decoding: HTTPTestClient.readAll(fd), as: UTF8.self)
                }
                slowest = max(slowest, seconds)
                let label = "\(what)\(kept ? " (kept-alive)" : "")"
                let answers = text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
                #expect(answers == (kept ? ["200", "400"] : ["400"]), "\(label): \(text.prefix(300))")
                #expect(seconds < 1, "\(label): answered and closed after \(seconds) s")
            }
        }
        print("measured: \(cases.count * 2) malformed requests, each answered 400 and closed; slowest \(String(format: "%.3f", slowest)) s")
        #expect(!FileManager.default.fileExists(atPath: favourites), "a malformed request reached the favourites handler")

        // Well-formed framing still works: chunked alone, absolute-form naming this server.
        let chunked = h.client.raw(put("Host: \(host)\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n", "2\r\n[]\r\n0\r\n\r\n"), timeout: 3)
        #expect(chunked?.status == 200, "\(String(describing: chunked))")
        let absolute = h.client.raw(Array("GET http://\(host)/api HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n".utf8), timeout: 3)
        #expect(absolute?.status == 200, "\(String(describing: absolute))")
    }

    // MARK: HEAD (issue 44, item 5)

    /// HEAD answers wherever GET does, with GET's status and headers (its length too) and no body: the page, its
    /// files, the API's reads, the document, the metrics.
    @Test func headAnswersWhereverGetDoes() throws {
        let h = try ServerHarness(metrics: MetricsSource { _ in Array("tandem_test 1\n".utf8) })
        defer { h.stop() }
        for path in ["/", "/page/main.js", "/page/style.css", "/api", "/api/openapi.json", "/api/status", "/api/engines",
                     "/metrics", "/api/nothing"] {
            let get = try #require(h.client.get(path), "GET \(path)")
            let head = try #require(h.client.request("HEAD", path), "HEAD \(path)")
            #expect(head.status == get.status, "HEAD \(path): \(head.status), GET \(get.status)")
            #expect(head.body.isEmpty, "HEAD \(path) has a body")
            #expect(head.headers["content-type"] == get.headers["content-type"], "HEAD \(path): \(head.headers)")
            if get.status == 200 {
                #expect(head.headers["content-length"] == "\(get.body.count)", "HEAD \(path): \(head.headers), GET has \(get.body.count) bytes")
            }
        }
        // A route without GET still says which methods it takes.
        let mark = h.client.request("HEAD", "/api/recorder/mark")
        #expect(mark?.status == 405 && mark?.headers["allow"]?.contains("POST") == true, "\(String(describing: mark))")
    }

    // MARK: Event stream slots and the cut count (issue 44, item 6)

    /// Ten clients that close their stream cleanly are not counted as cut; and clients that ask for the stream and
    /// leave before its answer give their slots back, so the stream is open to the next.
    @Test func cleanClosesAreNotCutAndFailedUpgradesLeakNoSlot() throws {
        let h = try ServerHarness(metrics: MetricsSource { _ in [] }) { $0.maxEventClients = 3 }
        defer { h.stop() }
        for i in 0..<10 {
            guard case .success(let ws) = h.client.webSocket("/api/events") else {
                Issue.record("stream \(i) refused")
                return
            }
            #expect(ws.nextJSON()?["type"] as? String == "hello")
            let (closeSeen, _) = ws.closeAndDrain()
            #expect(closeSeen, "stream \(i): the server answered the close")
            #expect(TestEnvironment.waitUntil(timeout: 5) { !h.server.feed.hasListeners }, "stream \(i) still listed")
        }
        let metrics = h.client.get("/metrics")?.text ?? ""
        #expect(metrics.contains("tandem_http_event_clients_cut_total 0"), "\(metrics)")

        // Handshakes whose client leaves at once, many more than the slots.
        let key = "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(h.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        for _ in 0..<30 {
            guard let fd = h.client.connect(timeout: 3) else { continue }
            _ = Array(key.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var linger = linger(l_onoff: 1, l_linger: 0)   // a reset: the client is gone before any answer
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            close(fd)
        }
        #expect(TestEnvironment.waitUntil(timeout: 5) { !h.server.feed.hasListeners }, "slots still taken after the clients left")
        // All three slots free: three streams at once.
        var open: [HTTPTestClient.WebSocket] = []
        defer { for ws in open { _ = ws.closeAndDrain() } }
        for i in 0..<3 {
            var answer: HTTPTestClient.Answer?
            let joined = TestEnvironment.waitUntil(timeout: 5) {
                switch h.client.webSocket("/api/events") {
                case .success(let ws): open.append(ws); return true
                case .failure(let e): answer = e.answer; return false
                }
            }
            #expect(joined, "stream \(i) after the failed handshakes: \(String(describing: answer))")
        }
    }

    // MARK: Log forging (issue 44, item 7)

    /// A label, a name, a port, a path or a control's words with a newline, an escape or a bidi override, or without
    /// bound, is refused 400 in words before the session sees it, over HTTP as over OSC and `tandem ctl` (the
    /// command model checks every text).
    @Test func textsWithControlCharactersOrWithoutBoundAreRefused() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let c = h.client
        let forged = "take 1\n2026-01-01T00:00:00+0000 error tandem.rec: \u{1B}[31mdisk failed\u{1B}[0m"
        let huge = String(repeating: "x", count: 100_000)
        let cases: [(String, String, String, Any)] = [
            ("marker label with a newline", "POST", "/api/recorder/mark", ["label": forged]),
            ("marker label of 100,000 characters", "POST", "/api/recorder/mark", ["label": huge]),
            ("marker label with a bidi override", "POST", "/api/recorder/mark", ["label": "ok \u{202E}rorre"]),
            ("port with a NUL", "POST", "/api/graph/connect", ["from": "a\u{0}b", "to": "c"]),
            ("preset name with a bell", "POST", "/api/presets/save", ["name": "x\u{7}"]),
            ("player path of 100,000 bytes", "POST", "/api/player/load", ["files": [huge]]),
            ("map line with a carriage return", "POST", "/api/maps", ["map": "cc 1 7 -> fx:amp:gain\r"]),
            ("control value with a newline", "PUT", "/api/engines/fx/plugins/amp/controls/gain", ["value": "1\n2"]),
            ("plugin name with an escape", "POST", "/api/engines/fx/plugins", ["uri": "urn:x", "name": "a\u{1B}b"]),
        ]
        for (what, method, path, body) in cases {
            let a = c.send(method, path, json: body)
            #expect(a?.status == 400, "\(what): \(String(describing: a))")
            let error = (a?.json as? [String: Any])?["error"] as? String ?? ""
            #expect(error.contains("control character") || error.contains("bytes; at most"), "\(what): \(error)")
        }
        // A path parameter too (percent-decoded into a name).
        let escaped = c.send("PUT", "/api/engines/fx%0Aerror/plugins/amp/controls/gain", json: ["value": 0])
        #expect(escaped?.status == 400, "\(String(describing: escaped))")
        // Text of one printable line within bounds still goes on to the session (which has no recorder here: 409).
        #expect(c.send("POST", "/api/recorder/mark", json: ["label": "Verse 2 — take «B» ✓"])?.status == 409)

        // The other surfaces parse through the same model.
        if case .success = Command.parse(address: "/tandem/record/mark", values: [.text(forged)]) { Issue.record("OSC took a forged label") }
        if case .success = Command.parse(words: ["record", "mark", huge]) { Issue.record("ctl took a 100,000-character label") }
        if case .success = Command.parse(address: "/tandem/map/learn", values: [.text("fx"), .text("amp\n"), .text("gain")]) {
            Issue.record("map learn took a newline")
        }
        if case .failure(let e) = Command.parse(words: ["record", "mark", "Chorus"]) { Issue.record("a plain label refused: \(e)") }
    }

    // MARK: Downloads, preset names, favourites (issue 44, item 8)

    /// A take file is served only while it is exactly the file its report recorded (its identity, as retention
    /// proves it): a report planted in the folder makes no other file downloadable, and a recorded file replaced or
    /// edited since is not served either.
    @Test func takeDownloadsProveTheFileIsTheOneRecorded() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-downloads-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let wav = dir.appendingPathComponent("take-1.wav").path
        try TestEnvironment.writeWAV((0..<4800).map { Float($0 % 100) / 100 }, channels: 1, path: wav, sample: .float32)
        let secret = dir.appendingPathComponent("secret.wav").path
        try TestEnvironment.writeWAV([0.5, 0.25], channels: 1, path: secret, sample: .float32)
        let identity = try #require(FileIdentity.of(path: wav))
        func report(_ name: String, files: [String], identity: [FileIdentity?]?) throws {
            var chunk: [String: Any] = ["files": files, "startFrame": 0, "frames": 4800]
            if let identity {
                chunk["identity"] = try identity.map { id -> Any in
                    guard let id else { return NSNull() }
                    return try JSONSerialization.jsonObject(with: JSONEncoder().encode(id))
                }
            }
            let doc: [String: Any] = [
                "tandemVersion": "test", "session": "session", "take": 1, "sampleRate": 48000, "channels": 1,
                "format": "wav", "sampleFormat": "float32", "stems": false, "startedAt": "2026-01-01T00:00:00Z",
                "startFrameTime": 0, "streamStart": 0, "prerollFrames": 0, "ports": [], "chunks": [chunk],
                "frames": 4800, "xruns": 0, "droppedFrames": 0, "drops": [], "ended": "stopped"]
            try JSONSerialization.data(withJSONObject: doc).write(to: dir.appendingPathComponent(name))
        }
        try report("take-1.json", files: [wav], identity: [identity])
        try report("planted.json", files: [secret], identity: nil)
        try report("forged.json", files: [secret], identity: [identity])
        let h = try ServerHarness(sessionDirectory: dir.path)
        defer { h.stop() }
        let c = h.client
        let ids = (c.get("/api/takes")?.json as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(Set(ids) == ["take-1", "planted", "forged"], "\(ids)")

        let whole = c.get("/api/takes/take-1/files/0")
        let onDisk = [UInt8](try Data(contentsOf: URL(fileURLWithPath: wav)))
        #expect(whole?.status == 200 && whole?.body == onDisk,
                "\(String(describing: whole?.status))")
        let head = c.request("HEAD", "/api/takes/take-1/files/0")
        #expect(head?.status == 200 && head?.headers["content-length"] == whole?.headers["content-length"])
        for id in ["planted", "forged"] {
            let a = c.get("/api/takes/\(id)/files/0")
            #expect(a?.status == 409 && a?.body.count ?? 0 < 1000, "\(id): \(String(describing: a))")
        }
        // The recorded file, edited since: no longer the one recorded.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: wav))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0, 0, 0, 0]))
        try handle.close()
        let edited = c.get("/api/takes/take-1/files/0")
        #expect(edited?.status == 409 && edited?.text.contains("not the file") == true, "\(String(describing: edited))")
    }

    /// Preset names that are no file of their own (`.`, `..`, blank, hidden) are refused in words, over HTTP as by
    /// the command model; favourites that name controls the session does not have are refused.
    @Test func presetNamesAndFavouritesAreChecked() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-names-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let h = try ServerHarness(sessionDirectory: dir.path)
        defer { h.stop() }
        let c = h.client
        for name in [".", "..", " ", "   ", ".hidden", "..toml", " x", "x ", "a/b", ".toml"] {
            let a = c.send("POST", "/api/presets/save", json: ["name": name])
            #expect(a?.status == 400, "'\(name)': \(String(describing: a))")
            if case .success = Command.parse(words: ["preset", "save", name]) { Issue.record("ctl took the preset name '\(name)'") }
        }
        if case .failure(let e) = Command.parse(words: ["preset", "save", "Live set 2"]) { Issue.record("a plain name refused: \(e)") }

        let ghost = c.send("PUT", "/api/favourites", json: [["engine": "fx", "plugin": "amp", "symbol": "nothing"]])
        let ghostError = (ghost?.json as? [String: Any])?["error"] as? String ?? ""
        #expect(ghost?.status == 400 && ghostError.contains("fx/amp/nothing"), "\(String(describing: ghost))")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("tandem-favourites.json").path))
        #expect(c.send("PUT", "/api/favourites", json: [[String: String]]())?.status == 200, "an empty list is fine")
    }

    // MARK: Take reports off the loop (issue 44, item 9)

    /// Listing the takes, finding one and downloading its file read the reports on a thread of their own: the
    /// session's loop is held no longer by a folder of thousands of reports than by an empty one.
    @Test func takeReportsAreReadOffTheSessionsLoop() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-reports-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let count = 1500
        let files = (0..<8).map { dir.appendingPathComponent("take-\($0).wav").path }
        let chunks = files.map { ["files": [$0], "startFrame": 0, "frames": 48000] as [String: Any] }
        for i in 0..<count {
            let doc: [String: Any] = [
                "tandemVersion": "test", "session": "session", "take": i, "sampleRate": 48000, "channels": 1,
                "format": "wav", "sampleFormat": "float32", "stems": false, "startedAt": "2026-01-01T00:00:00Z",
                "startFrameTime": 0, "streamStart": 0, "prerollFrames": 0, "ports": [], "chunks": chunks,
                "frames": 384000, "xruns": 0, "droppedFrames": 0, "drops": [], "ended": "stopped",
                "notes": Array(repeating: "a note of some length, as reports have", count: 8)]
            try JSONSerialization.data(withJSONObject: doc).write(to: dir.appendingPathComponent(String(format: "take-%05d.json", i)))
        }
        let h = try ServerHarness(sessionDirectory: dir.path)
        defer { h.stop() }
        h.resetLongestTurn()
        var listed = 0
        let seconds = ServerHarness.time {
            listed = (h.client.get("/api/takes")?.json as? [Any])?.count ?? 0
            _ = h.client.get("/api/takes/take-01499")
            _ = h.client.get("/api/takes/take-01499/files/0")
        }
        let turn = h.longestTurn
        print("measured: \(count) reports listed, found and a file asked for in \(String(format: "%.3f", seconds)) s; "
              + "the control thread's longest turn meanwhile \(String(format: "%.4f", turn)) s")
        #expect(listed == count)
        #expect(turn < 0.05 && turn < seconds / 5, "the control thread was held \(turn) s of \(seconds) s")
    }

    // MARK: The document's constraints are the handlers'

    /// The OpenAPI document says what the server enforces: the texts' bounds and patterns are the command model's,
    /// a preset name's pattern refuses exactly what the model refuses, and the query token is offered only where the
    /// server takes it.
    @Test func theDocumentsConstraintsAreTheHandlers() throws {
        let url = Self.pageDirectory.deletingLastPathComponent().appendingPathComponent("openapi.json")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let components = try #require(doc["components"] as? [String: Any])
        let schemas = try #require(components["schemas"] as? [String: Any])
        func property(_ schema: String, _ name: String) -> [String: Any] {
            ((schemas[schema] as? [String: Any])?["properties"] as? [String: Any])?[name] as? [String: Any] ?? [:]
        }
        #expect(property("MarkBody", "label")["maxLength"] as? Int == CommandText.maxLabelBytes)
        #expect(property("PathBody", "path")["maxLength"] as? Int == CommandText.maxPathBytes)
        #expect((property("LoadBody", "files")["items"] as? [String: Any])?["maxLength"] as? Int == CommandText.maxPathBytes)
        for (schema, name) in [("Connection", "from"), ("Connection", "to"), ("MapBody", "map"), ("PresetBody", "preset"),
                               ("AddPluginBody", "uri"), ("AddPluginBody", "name")] {
            #expect(property(schema, name)["maxLength"] as? Int == CommandText.maxBytes, "\(schema).\(name)")
            #expect(property(schema, name)["pattern"] != nil, "\(schema).\(name)")
        }
        // The preset name's pattern (ECMA, read here by ICU) against the command model, name by name.
        let pattern = try #require(property("NameBody", "name")["pattern"] as? String)
        let regex = try NSRegularExpression(pattern: pattern)
        for name in [".", "..", " ", "   ", ".hidden", "..toml", " x", "x ", "a/b", "x\u{7}", "x\u{202E}y",
                     "snapshot", "Live set 2", "évening", "a", "a.b"] {
            let documented = regex.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) != nil
            let taken = CommandText.presetNameProblem(name) == nil
            #expect(documented == taken, "'\(name)': the document says \(documented), the model \(taken)")
        }
        // Query token: only the event stream and a take file's download.
        let global = doc["security"] as? [[String: Any]] ?? []
        #expect(!global.contains { $0["queryToken"] != nil }, "the query token is not global")
        let paths = try #require(doc["paths"] as? [String: Any])
        var offered: [String] = []
        for (path, ops) in paths {
            for (method, op) in ops as? [String: Any] ?? [:] {
                let security = (op as? [String: Any])?["security"] as? [[String: Any]] ?? []
                if security.contains(where: { $0["queryToken"] != nil }) { offered.append("\(method.uppercased()) \(path)") }
            }
        }
        #expect(Set(offered) == ["GET /api/events", "GET /api/takes/{id}/files/{index}"], "\(offered)")
    }

    /// One answer with a Content-Length, read from a kept-alive connection (the connection stays open).
    static func readOneAnswer(_ fd: Int32) -> [UInt8] {
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let end = got.indices.dropLast(3).first(where: { got[$0...$0 + 3].elementsEqual([13, 10, 13, 10]) }) {
                let head = String(decoding: got[..<end], as: UTF8.self).lowercased()
                let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
                if got.count >= end + 4 + length { return got }
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return got }
            got += buffer[0..<n]
        }
    }

    static var pageDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/WebAPI/Resources/page")
            .standardized
    }
}

extension Result where Failure == HTTPTestClient.AnswerError {
    var failureAnswer: HTTPTestClient.Answer? {
        if case .failure(let e) = self { return e.answer }
        return nil
    }
}
