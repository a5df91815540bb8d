import Foundation
import Testing
import TestSupport
@testable import WebAPI

/// The server of a session that runs nothing, on a plain socket: what every answer carries, what it refuses before
/// any handler, how fast.
@Suite struct HTTPServerTests {
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
