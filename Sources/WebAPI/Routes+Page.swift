import Foundation
import Hummingbird
import NIOCore

extension Routes {
    /// The page (a client of this API like any other).
    func pageRoutes(_ router: Router<BasicRequestContext>) {
        route(router, "", .get, "") { _, _ in Self.resource("page/index.html", type: "text/html; charset=utf-8") }
        route(router, "", .get, "page/:file") { _, context in
            let file = try context.parameters.require("file")
            guard file.range(of: "^[a-z0-9-]+\\.(js|css|svg|html|png|webmanifest)$", options: .regularExpression) != nil else {
                throw HTTPError(.notFound)
            }
            let type = ["js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "svg": "image/svg+xml",
                        "html": "text/html; charset=utf-8", "png": "image/png", "webmanifest": "application/manifest+json"][
                String(file.split(separator: ".").last ?? "")] ?? "application/octet-stream"
            return Self.resource("page/" + file, type: type)
        }
    }

    /// `TANDEM_PAGE_DIR`: the page's files read from this folder instead of the built-in copy (for working on the
    /// page without rebuilding; docs/HTTP.md).
    static let pageDirectory = ProcessInfo.processInfo.environment["TANDEM_PAGE_DIR"].flatMap { $0.isEmpty ? nil : $0 }

    static func resource(_ name: String, type: String) -> Response {
        let url: URL?
        if let dir = pageDirectory, name.hasPrefix("page/") {
            url = URL(fileURLWithPath: dir).appendingPathComponent(String(name.dropFirst(5)))
        } else {
            url = Bundle.module.url(forResource: "Resources/" + name, withExtension: nil)
        }
        guard let url, let data = try? Data(contentsOf: url) else {
            return JSONResponse.error(.notFound, "no \(name)")
        }
        return Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
