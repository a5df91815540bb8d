import Presets
import Testing

/// `[session] http` and `--http`: what an address may be, and what a reload cannot change.
struct HTTPAddressTests {
    @Test func addressesAreReadOrRefused() {
        #expect(HTTPAddress("127.0.0.1:8080") == HTTPAddress(host: "127.0.0.1", port: 8080))
        #expect(HTTPAddress("[::1]:8080") == HTTPAddress(host: "::1", port: 8080))
        #expect(HTTPAddress(":8080") == HTTPAddress(host: "0.0.0.0", port: 8080))
        #expect(HTTPAddress("studio.local:80")?.host == "studio.local")
        for bad in ["", ":", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:-1", "127.0.0.1:65536", "127.0.0.1:+80",
                    "127.0.0.1:８０", "::1:8080", "[::1]8080", "[::1", "a b:80", "127.0.0.1:99999999999999999999",
                    "[]:80", "[127.0.0.1]:80", "ho/st:80"] {
            #expect(HTTPAddress(bad) == nil, "accepted '\(bad)'")
        }
        #expect(HTTPAddress("127.0.0.1:8080")?.isLoopback == true)
        #expect(HTTPAddress("[::1]:1")?.isLoopback == true)
        #expect(HTTPAddress("localhost:1")?.isLoopback == true)
        #expect(HTTPAddress("0.0.0.0:1")?.isLoopback == false)
        #expect(HTTPAddress("192.168.1.2:1")?.isLoopback == false)
        #expect(HTTPAddress("[::1]:8080")?.description == "[::1]:8080")
    }

    @Test func originsAreSchemeHostAndPortOnly() {
        for good in ["http://studio.local:8080", "https://a.example", "http://192.168.1.2"] {
            #expect(HTTPAddress.isOrigin(good), "\(good)")
        }
        for bad in ["*", "studio.local", "http://a.b/", "http://a.b/x", "ftp://a.b", "http://a.b?x", "http://u@a.b", ""] {
            #expect(!HTTPAddress.isOrigin(bad), "\(bad)")
        }
    }

    @Test func aReloadNamesTheServerKeysItCannotChange() {
        var a = SessionSection()
        var b = a
        #expect(a.startOnlyKeysChanged(in: b).isEmpty)
        b.http = HTTPAddress("127.0.0.1:8080")
        b.controlPort = 9999
        b.httpOrigins = ["http://a.b"]
        #expect(a.startOnlyKeysChanged(in: b) == ["control_port", "http", "http_origins"])
        a.metricsPort = 9100
        #expect(a.startOnlyKeysChanged(in: b).contains("metrics_port"))
    }
}
