import Foundation
import HTTPTypes
import Presets
import Testing
@testable import WebAPI

/// The HTTP API's pure parts against hostile input: byte ranges, query strings, hosts, origins, tokens. Nothing a
/// client sends may trap (a `Range` header once did: "bytes=999999999-" made an inverted range).
struct WebAPIInputTests {
    @Test func byteRangesAreReadOrRefusedNeverTrapped() {
        #expect(Routes.byteRange("bytes=0-9", size: 100) == .some(0...9))
        #expect(Routes.byteRange("bytes=90-", size: 100) == .some(90...99))
        #expect(Routes.byteRange("bytes=-10", size: 100) == .some(90...99))
        #expect(Routes.byteRange("bytes=-1000", size: 100) == .some(0...99))
        #expect(Routes.byteRange("bytes=50-5000", size: 100) == .some(50...99))
        #expect(Routes.byteRange("bytes=100-", size: 100) == .some(nil))
        #expect(Routes.byteRange("bytes=999999999-", size: 100) == .some(nil))
        #expect(Routes.byteRange("bytes=-0", size: 100) == .some(nil))
        #expect(Routes.byteRange("bytes=0-0", size: 0) == .some(nil))
        for ignored in ["bytes=5-3", "bytes=0-1,5-6", "items=0-1", "bytes=-", "bytes=a-b", "bytes=1-2-3",
                        "bytes=99999999999999999999999-", "bytes=+1-2", "bytes= 1-2", "bytes=١-٢"] {
            #expect(Routes.byteRange(ignored, size: 100) == nil, "\(ignored)")
        }
        // Fuzzed: whatever comes, a range inside the file or none.
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("bytes=-0123456789,+ aé9") + ["9999999999999999999"].flatMap(Array.init)
        for _ in 0..<20000 {
            let header = String((0..<Int.random(in: 0...24, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let size = [0, 1, 100, Int.max].randomElement(using: &generator)!
            if case .some(.some(let r)) = Routes.byteRange(header, size: size) {
                #expect(r.lowerBound >= 0 && r.upperBound < size, "\(header) of \(size): \(r)")
            }
        }
    }

    @Test func hostsOriginsAndQueryItems() {
        let open = HTTPAccess(token: nil)
        for host in ["127.0.0.1:8080", "localhost", "localhost:80", "[::1]:8080", "127.1.2.3", "LOCALHOST:1"] {
            #expect(open.hostAllowed(host), "\(host)")
        }
        for host in ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "127.0.0.256", "127.evil.a.b", "127.0.0.1:80:80", "[::2]:80", "", "[", ":"] {
            #expect(!open.hostAllowed(host), "\(host)")
        }
        #expect(!open.hostAllowed(nil))
        #expect(HTTPAccess(token: "t").hostAllowed("anything"), "with a token, the token decides")
        let access = HTTPAccess(token: nil, origins: ["http://studio.local:8080"])
        #expect(access.allows(origin: "http://studio.local:8080", host: "127.0.0.1:9000"))
        #expect(access.allows(origin: "http://127.0.0.1:9000", host: "127.0.0.1:9000"))
        #expect(!access.allows(origin: "http://127.0.0.1:9001", host: "127.0.0.1:9000"))
        #expect(!access.allows(origin: "null", host: "127.0.0.1:9000"))
        #expect(HTTPAccess.queryItem("token", in: "/api/events?since=3&token=a%20b") == "a b")
        #expect(HTTPAccess.queryItem("token", in: "/api/events") == nil)
        #expect(HTTPAccess.queryItem("x", in: "/a?x") == "")
        #expect(HTTPAccess.equal("abc", "abc") && !HTTPAccess.equal("abc", "abd") && !HTTPAccess.equal("abc", "abcd"))
    }

    @Test func theTokenFileIsMadeOnceAndOnlyTheOwnersMayBeUsed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-token-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("tandem/http-token").path
        let token = try HTTPAccess.loadOrCreateToken(path: path)
        #expect(token.count == 64 && token.allSatisfy(\.isHexDigit))
        #expect(try HTTPAccess.loadOrCreateToken(path: path) == token, "the same token on every start")
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        chmod(path, 0o644)
        #expect(throws: HTTPAccess.TokenError.self) { try HTTPAccess.loadOrCreateToken(path: path) }
        chmod(path, 0o600)
        try "short\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: HTTPAccess.TokenError.self) { try HTTPAccess.loadOrCreateToken(path: path) }
    }
}
