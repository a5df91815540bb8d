import Foundation
import HTTPTypes
import Hummingbird

extension Routes {
    /// Takes, their reports and their files.
    func takeRoutes(_ api: RouterGroup<BasicRequestContext>) {
        route(api, "/api", .get, "takes") { _, _ in try await takesList() }
        route(api, "/api", .get, "takes/:id") { _, context in
            let take = try await findTake(try param(context, "id"))
            guard let data = await offPool({ try? Data(contentsOf: URL(fileURLWithPath: take.report)) }) else {
                throw HTTPError(.notFound, message: "take \(take.id)'s report cannot be read (gone?)")
            }
            return JSONResponse.json(data)
        }
        route(api, "/api", .get, "takes/:id/files/:index") { request, context in
            let take = try await findTake(try param(context, "id"))
            guard let i = context.parameters.get("index", as: Int.self), take.files.indices.contains(i) else {
                throw HTTPError(.notFound, message: "take \(take.id) has \(take.files.count) file(s), numbered from 0")
            }
            return try await download(take.files[i], request: request, context: context)
        }
    }

    struct TakeEntry: Codable, Sendable {
        var id: String
        var take: Int
        var report: String
        var frames: Int
        var sampleRate: Int
        var channels: Int
        var ended: String
        var files: [String]
    }

    func takesList() async throws -> Response {
        JSONResponse.encode(try await takes())
    }

    func takes() async throws -> [TakeEntry] {
        try await server.gateway.run { session in
            session.describeTakes().map { t in
                TakeEntry(id: ((t.report as NSString).lastPathComponent as NSString).deletingPathExtension, take: t.take,
                          report: t.report, frames: t.frames, sampleRate: t.sampleRate, channels: t.channels, ended: t.ended,
                          files: t.files)
            }
        }
    }

    func findTake(_ id: String) async throws -> TakeEntry {
        guard let t = try await takes().first(where: { $0.id == id }) else {
            throw HTTPError(.notFound, message: "no take '\(id)' in the session folder (GET /api/takes lists them)")
        }
        return t
    }

    /// A file a take report lists, if it lies in the session folder and is a regular file there (no symlink out),
    /// with HTTP Range.
    func download(_ path: String, request: Request, context: BasicRequestContext) async throws -> Response {
        let dir = try await server.gateway.run { session in session.preset?.session.directory ?? "" }
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw HTTPError(.notFound, message: "'\((path as NSString).lastPathComponent)' is not a file (gone, or a link)")
        }
        let parent = URL(fileURLWithPath: (path as NSString).deletingLastPathComponent).resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: dir).resolvingSymlinksInPath().path
        guard !dir.isEmpty, parent == root else {
            throw HTTPError(.forbidden, message: "'\((path as NSString).lastPathComponent)' is not in the session folder")
        }
        let size = Int(st.st_size)
        var headers: HTTPFields = [.contentType: Self.mediaType(path), .acceptRanges: "bytes",
                                   .contentDisposition: "attachment; filename=\"\((path as NSString).lastPathComponent)\""]
        if let range = request.headers[.range], let r = Self.byteRange(range, size: size) {
            guard let r else {
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound)/\(size)"
            headers[.contentLength] = "\(r.count)"
            return Response(status: .partialContent, headers: headers,
                            body: try await FileIO().loadFile(path: path, range: r, context: context))
        }
        headers[.contentLength] = "\(size)"
        return Response(status: .ok, headers: headers, body: try await FileIO().loadFile(path: path, context: context))
    }

    /// "bytes=A-B", "bytes=A-", "bytes=-N": the range, nil inside when it cannot be satisfied, nil when it is no
    /// single byte range (the whole file is sent). Bounds are compared as numbers before any range is made, so no
    /// header can trap.
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>?? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2, spec.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else { return nil }
        let first = spec[0].isEmpty ? nil : Int(spec[0]), last = spec[1].isEmpty ? nil : Int(spec[1])
        if !spec[0].isEmpty && first == nil || !spec[1].isEmpty && last == nil { return nil }   // too many digits
        let lower: Int, upper: Int
        switch (first, last) {
        case (let a?, let b?):
            guard a <= b else { return nil }   // invalid: ignored, as RFC 9110 says
            (lower, upper) = (a, b)
        case (let a?, nil): (lower, upper) = (a, Int.max)
        case (nil, let n?):
            guard n > 0 else { return .some(nil) }
            (lower, upper) = (max(0, size - n), Int.max)
        case (nil, nil): return nil
        }
        guard size > 0, lower < size else { return .some(nil) }
        return .some(lower...min(upper, size - 1))
    }

    static func mediaType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "wav", "rf64": return "audio/wav"
        case "flac": return "audio/flac"
        case "ogg", "opus": return "audio/ogg"
        case "mp3": return "audio/mpeg"
        case "mid": return "audio/midi"
        case "json": return "application/json"
        default: return "application/octet-stream"
        }
    }
}
