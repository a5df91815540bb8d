import Foundation
import HTTPTypes
import Hummingbird
import Takes

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
            let (take, identities) = try await findTakeWithIdentities(try param(context, "id"))
            guard let i = context.parameters.get("index", as: Int.self), take.files.indices.contains(i) else {
                throw HTTPError(.notFound, message: "take \(take.id) has \(take.files.count) file(s), numbered from 0")
            }
            return try await download(take.files[i], identity: identities[i], take: take, request: request, context: context)
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
        JSONResponse.encode(try await takes().map(\.entry))
    }

    /// The takes whose reports lie in the session folder, oldest first, each with what its report records of each
    /// file (`FileIdentity`, nil where nothing is recorded). Read on a thread of their own, never the session's loop
    /// (a folder of many long takes is many reports to decode); the loop only says where the folder is.
    func takes() async throws -> [(entry: TakeEntry, identities: [FileIdentity?])] {
        let dir = try await server.gateway.run { session in session.preset?.session.directory }
        guard let dir else { return [] }
        return await offPool { Self.readTakes(in: dir) }
    }

    static func readTakes(in dir: String) -> [(entry: TakeEntry, identities: [FileIdentity?])] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [] }
        return names.filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            let path = (dir as NSString).appendingPathComponent(name)
            guard let r = try? TakeReport.read(from: path) else { return nil }
            var identities: [FileIdentity?] = []
            for chunk in r.chunks {
                for j in chunk.files.indices {
                    identities.append(chunk.identity.flatMap { j < $0.count ? $0[j] : nil })
                }
            }
            let entry = TakeEntry(id: (name as NSString).deletingPathExtension, take: r.take, report: path, frames: r.frames,
                                  sampleRate: r.sampleRate, channels: r.channels, ended: r.ended.rawValue,
                                  files: r.chunks.flatMap(\.files))
            return (entry, identities)
        }
    }

    func findTake(_ id: String) async throws -> TakeEntry {
        try await findTakeWithIdentities(id).0
    }

    func findTakeWithIdentities(_ id: String) async throws -> (TakeEntry, [FileIdentity?]) {
        guard let t = try await takes().first(where: { $0.entry.id == id }) else {
            throw HTTPError(.notFound, message: "no take '\(id)' in the session folder (GET /api/takes lists them)")
        }
        return (t.entry, t.identities)
    }

    /// A file a take report lists, if it lies in the session folder, is a regular file there (no symlink out), and
    /// still is exactly the file the report recorded when its chunk closed (`FileIdentity`: device, inode, size,
    /// modification time, frames; as retention proves a file is Tandem's before deleting it): a report planted in
    /// the folder cannot make another file of it downloadable. With HTTP Range.
    func download(_ path: String, identity: FileIdentity?, take: TakeEntry, request: Request,
                  context: BasicRequestContext) async throws -> Response {
        let dir = try await server.gateway.run { session in session.preset?.session.directory ?? "" }
        let name = (path as NSString).lastPathComponent
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw HTTPError(.notFound, message: "'\(name)' is not a file (gone, or a link)")
        }
        let parent = URL(fileURLWithPath: (path as NSString).deletingLastPathComponent).resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: dir).resolvingSymlinksInPath().path
        guard !dir.isEmpty, parent == root else {
            throw HTTPError(.forbidden, message: "'\(name)' is not in the session folder")
        }
        guard let identity else {
            throw HTTPError(.conflict, message: "take \(take.id)'s report records no identity for '\(name)' (a chunk still "
                            + "being written, or a report of an older version): it is not served")
        }
        if let why = await offPool({ identity.mismatch(at: path) }) {
            throw HTTPError(.conflict, message: "'\(name)' is not the file take \(take.id)'s report recorded (\(why)): it is not served")
        }
        let size = Int(st.st_size)
        var headers: HTTPFields = [.contentType: Self.mediaType(path), .acceptRanges: "bytes",
                                   .contentDisposition: "attachment; filename=\"\(name)\""]
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
