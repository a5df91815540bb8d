import Commands
import Control
import Engine
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Plugins
import Presets

/// The routes of the API (docs/HTTP.md and `Resources/openapi.json`, which a test holds them to). Every route that
/// acts is a command of the command model carried out by the session (`Session.execute`) through the gateway;
/// every route that tells reads what the session gives on its own thread. A handler parses, checks and waits.
struct Routes {
    let server: HTTPServer

    func install(on router: Router<BasicRequestContext>) {
        let api = router.group("api")
        route(api, "/api", .get, "") { _, _ in JSONResponse.encode(Self.index) }
        route(api, "/api", .get, "openapi.json") { _, _ in Self.resource("openapi.json", type: "application/json") }

        // What the session is doing, the graph, the engines.
        route(api, "/api", .get, "status") { _, _ in try await query(.status) }
        route(api, "/api", .get, "engines") { _, _ in try await query(.engines) }
        route(api, "/api", .get, "graph") { _, _ in try await query(.graph) }
        route(api, "/api", .post, "graph/connect") { request, context in
            let b = try await body(request, context, Connection.self)
            return try await act(.connect(from: b.from, to: b.to))
        }
        route(api, "/api", .post, "graph/disconnect") { request, context in
            let b = try await body(request, context, Connection.self)
            return try await act(.disconnect(from: b.from, to: b.to))
        }

        // Plugins of the running chains.
        route(api, "/api", .get, "plugins") { request, _ in
            try await query(.pluginList(engine: request.uri.queryParameters.get("engine")))
        }
        route(api, "/api", .get, "engines/:engine/plugins") { _, context in
            try await query(.pluginList(engine: try param(context, "engine")))
        }
        route(api, "/api", .get, "engines/:engine/plugins/:plugin/controls/:symbol") { _, context in
            let (e, p, s) = try names(context)
            return try await control(e, p, s)
        }
        route(api, "/api", .put, "engines/:engine/plugins/:plugin/controls/:symbol") { request, context in
            let (e, p, s) = try names(context)
            let b = try await body(request, context, ControlBody.self)
            let setting: ControlSetting
            switch b.value {
            case .number(let d): setting = .number(d)
            case .text(let t): setting = .text(t)
            }
            let r = try await run(.pluginSet(engine: e, plugin: p, symbol: s, value: setting))
            guard r.ok else { return failure(r) }
            return try await control(e, p, s)
        }
        route(api, "/api", .put, "engines/:engine/plugins/:plugin/bypass") { request, context in
            let b = try await body(request, context, BypassBody.self)
            return try await act(.pluginBypass(engine: try param(context, "engine"),
                                               plugin: try param(context, "plugin"), on: b.bypassed))
        }
        route(api, "/api", .put, "engines/:engine/mix") { request, context in
            let b = try await body(request, context, MixBody.self)
            return try await act(try parsed("/tandem/plugin/mix", [.text(try param(context, "engine")), .number(b.mix)]))
        }
        route(api, "/api", .put, "engines/:engine/gain") { request, context in
            let b = try await body(request, context, GainBody.self)
            return try await act(try parsed("/tandem/plugin/gain", [.text(try param(context, "engine")), .number(b.gain)]))
        }
        route(api, "/api", .post, "engines/:engine/plugins/:plugin/preset") { request, context in
            let b = try await body(request, context, PresetBody.self)
            return try await act(.pluginPreset(engine: try param(context, "engine"),
                                               plugin: try param(context, "plugin"), uri: b.preset))
        }
        route(api, "/api", .post, "plugins/save") { _, _ in try await act(.pluginSave) }
        route(api, "/api", .post, "engines/:engine/plugins") { request, context in
            let b = try await body(request, context, AddBody.self)
            if let at = b.at, at < 0 { throw HTTPError(.badRequest, message: "'at' \(at) is not a position (0 first)") }
            guard !b.uri.contains(","), b.name?.contains(",") != true else {
                throw HTTPError(.badRequest, message: "a plugin URI or name with a comma cannot be added")
            }
            return try await act(.pluginAdd(engine: try param(context, "engine"), spec: b.uri + (b.name.map { ",name=\($0)" } ?? ""),
                                            at: b.at))
        }
        route(api, "/api", .delete, "engines/:engine/plugins/:plugin") { _, context in
            try await act(.pluginRemove(engine: try param(context, "engine"),
                                        plugin: try param(context, "plugin")))
        }
        route(api, "/api", .post, "engines/:engine/plugins/:plugin/move") { request, context in
            let b = try await body(request, context, MoveBody.self)
            guard b.to >= 0 else { throw HTTPError(.badRequest, message: "'to' \(b.to) is not a position (0 first)") }
            return try await act(.pluginMove(engine: try param(context, "engine"),
                                             plugin: try param(context, "plugin"), to: b.to))
        }

        // Favourites: controls pinned together on the page, kept in the session folder for every device.
        route(api, "/api", .get, "favourites") { _, _ in
            let f = try await favourites()
            return JSONResponse.encode(try await offPool { Result { try f.read() } }.get())
        }
        route(api, "/api", .put, "favourites") { request, context in
            let list = try await body(request, context, [Favourite].self)
            guard list.count <= Favourites.maxCount else {
                throw HTTPError(.badRequest, message: "at most \(Favourites.maxCount) favourites")
            }
            let f = try await favourites()
            try await offPool { Result { try f.write(list) } }.get()
            _ = try? await server.gateway.run { session in session.announce(.favouritesChanged(source: "http")) }
            return JSONResponse.encode(list)
        }

        // The recorder and the player: every command the control protocol has.
        for (path, command) in [("start", Command.recordStart), ("stop", .recordStop), ("arm", .recordArm),
                                ("rotate", .recordRotate)] {
            route(api, "/api", .post, "recorder/\(path)") { _, _ in try await act(command) }
        }
        route(api, "/api", .post, "recorder/mark") { request, context in
            let b = try await optionalBody(request, context, MarkBody.self)
            return try await act(.recordMark(label: b?.label ?? ""))
        }
        for (path, command) in [("play", Command.play), ("pause", .pause), ("stop", .stop), ("next", .next)] {
            route(api, "/api", .post, "player/\(path)") { _, _ in try await act(command) }
        }
        route(api, "/api", .post, "player/seek") { request, context in
            try await act(try parsed("/tandem/play/seek", [.number(try await body(request, context, SeekBody.self).seconds)]))
        }
        route(api, "/api", .put, "player/gain") { request, context in
            try await act(try parsed("/tandem/play/gain", [.number(try await body(request, context, GainBody.self).gain)]))
        }
        route(api, "/api", .post, "player/load") { request, context in
            let b = try await body(request, context, LoadBody.self)
            return try await act(try parsed("/tandem/play/load", b.files.map { .text($0) }))
        }

        // Takes, their reports and their files.
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

        // Session presets.
        route(api, "/api", .get, "presets") { _, _ in try await presets() }
        route(api, "/api", .post, "presets/apply") { request, context in
            try await act(.presetApply(path: try await body(request, context, PathBody.self).path))
        }
        route(api, "/api", .post, "presets/save") { request, context in
            try await act(.presetSave(name: try await body(request, context, NameBody.self).name))
        }

        // Control maps.
        route(api, "/api", .get, "maps") { _, _ in try await query(.mapList) }
        route(api, "/api", .post, "maps") { request, context in try await act(.mapAdd(text: try await body(request, context, MapBody.self).map)) }
        route(api, "/api", .delete, "maps") { _, _ in try await act(.mapClear(index: nil)) }
        route(api, "/api", .delete, "maps/:index") { _, context in
            guard let i = context.parameters.get("index", as: Int.self) else { throw HTTPError(.badRequest, message: "a map index is a whole number") }
            return try await act(try parsed("/tandem/map/clear", [.number(Double(i))]))
        }

        // Installed plugins (read here: lilv has its own lock; a long list never holds the session's loop).
        route(api, "/api", .get, "installed-plugins") { request, _ in
            let filter = request.uri.queryParameters.get("filter")?.lowercased().trimmingCharacters(in: .whitespaces)
            let all = await InstalledPlugins.shared.all()
            guard let filter, !filter.isEmpty else { return JSONResponse.encode(all) }
            return JSONResponse.encode(all.filter { $0.uri.lowercased().contains(filter) || $0.name.lowercased().contains(filter) })
        }
        route(api, "/api", .get, "installed-plugins/:uri") { _, context in
            let uri = try param(context, "uri")
            guard let info = await InstalledPlugins.shared.all().first(where: { $0.uri == uri }) else {
                throw HTTPError(.notFound, message: "no plugin <\(uri)> is installed")
            }
            return JSONResponse.encode(info)
        }

        // The event stream is a WebSocket (see `EventStream`); a plain GET is told so.
        route(api, "/api", .get, "events") { _, _ in
            JSONResponse.error(.upgradeRequired, "the event stream is a WebSocket: GET /api/events with an upgrade")
        }

        route(router, "", .get, "metrics") { _, _ in
            guard let m = server.metrics else { throw HTTPError(.notFound, message: "no metrics here") }
            let bytes = try await server.gateway.run { session in m.render(session) } + server.stats.exposition()
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }

        // The page (a client of this API like any other).
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

    /// Registers a route and records it in the server's table (for 405 and HEAD, see `RouteTable`).
    func route<M: RouterMethods>(_ group: M, _ prefix: String, _ method: HTTPRequest.Method, _ path: String,
                                 _ handler: @escaping @Sendable (Request, BasicRequestContext) async throws -> some ResponseGenerator)
        where M.Context == BasicRequestContext {
        group.on(RouterPath(path), method: method, use: handler)
        server.routes.add(method, prefix + "/" + path)
    }

    // MARK: Carrying out

    /// The command, carried out by the session; its reply as JSON or an error status.
    func act(_ command: Command) async throws -> Response {
        let r = try await run(command)
        return r.ok ? JSONResponse.encode(Reply(ok: true, detail: r.detail)) : failure(r)
    }

    /// A query: the session's JSON as it is.
    func query(_ command: Command) async throws -> Response {
        let r = try await run(command)
        return r.ok ? JSONResponse.json(r.detail) : failure(r)
    }

    func run(_ command: Command) async throws -> CommandReply {
        do {
            // A plugin command for an isolated rack goes to the rack's process, from this task: the session's loop
            // only says where (the relay never waits on the loop's thread).
            if ControlProtocol.rackRelayed.contains(command.address), let engine = command.engine,
               let target = try await server.gateway.run({ session in IsolatedRackTarget(session, engine) }) {
                return await Self.relay(command, to: target)
            }
            if command == .pluginList(engine: nil) { return try await allPlugins() }
            return try await server.gateway.run { session in session.execute(command, context: CommandContext(source: "http")) }
        } catch let busy as SessionGateway.Busy {
            throw HTTPError(.serviceUnavailable, message: busy.description)
        }
    }

    /// `command` carried out by an isolated rack's process, its reply as the session's would be.
    static func relay(_ command: Command, to target: IsolatedRackTarget) async -> CommandReply {
        let args: [OSCValue] = command.values.map { v in
            switch v {
            case .text(let t): return .string(t)
            case .number(let d): return .double(d)
            }
        }
        let reply = await withCheckedContinuation { (c: CheckedContinuation<[OSCValue], Never>) in
            DispatchQueue.global().async { c.resume(returning: ControlProtocol.relay(OSCMessage(command.address, args), to: target)) }
        }
        let strings = reply.map { $0.string ?? "" }
        let detail = strings.count > 2 ? strings[2] : ""
        return strings.first == "ok" ? .done(detail) : .refused(detail, ControlProtocol.refusal(strings.count > 3 ? strings[3] : nil))
    }

    /// Every chain's plugins: the session's own, and each isolated rack's from its process.
    func allPlugins() async throws -> CommandReply {
        let (local, racks) = try await server.gateway.run { session in
            (session.execute(.pluginList(engine: nil), context: CommandContext(source: "http")), IsolatedRackTarget.all(session))
        }
        guard local.ok, var all = try? JSONSerialization.jsonObject(with: Data(local.detail.utf8)) as? [Any] else { return local }
        for rack in racks {
            let r = await Self.relay(.pluginList(engine: rack.name), to: rack)
            if r.ok, let list = try? JSONSerialization.jsonObject(with: Data(r.detail.utf8)) as? [Any] { all += list }
        }
        let data = (try? JSONSerialization.data(withJSONObject: all, options: [.sortedKeys])) ?? Data("[]".utf8)
        return .done(String(decoding: data, as: UTF8.self))
    }

    /// A command from values, checked by the model (its words for a bad value: 400).
    func parsed(_ address: String, _ values: [CommandValue]) throws -> Command {
        switch Command.parse(address: address, values: values) {
        case .success(let c): return c
        case .failure(let e): throw HTTPError(.badRequest, message: e.message)
        }
    }

    /// A refusal's status, from the kind the session gave it: 404 for a name it does not have, 400 for a value it
    /// does not take, 409 when it is not in a state to do it.
    func failure(_ r: CommandReply) -> Response {
        let status: HTTPResponse.Status
        switch r.refusal ?? .conflict {
        case .notFound: status = .notFound
        case .badValue: status = .badRequest
        case .conflict: status = .conflict
        }
        return JSONResponse.error(status, r.detail)
    }

    /// A control as the API shows it: its number, and in its unit.
    func control(_ engine: String, _ plugin: String, _ symbol: String) async throws -> Response {
        if let target = try await server.gateway.run({ session in IsolatedRackTarget(session, engine) }) {
            // From the rack's own process: its plugin list holds the value and its text.
            let r = await Self.relay(.pluginList(engine: engine), to: target)
            guard r.ok else { return failure(r) }
            let list = (try? JSONSerialization.jsonObject(with: Data(r.detail.utf8)) as? [[String: Any]]) ?? []
            guard let p = list.first(where: { $0["name"] as? String == plugin }) else {
                return failure(.refused("the \(engine) has no plugin '\(plugin)'", .notFound))
            }
            guard let c = (p["controls"] as? [[String: Any]])?.first(where: { $0["symbol"] as? String == symbol }),
                  let value = c["value"] as? Double else {
                return failure(.refused("plugin \(plugin) has no control '\(symbol)'", .notFound))
            }
            return JSONResponse.encode(ControlValue(engine: engine, plugin: plugin, symbol: symbol, value: value,
                                                    text: c["text"] as? String ?? "\(value)"))
        }
        let result = try await server.gateway.run { session -> Result<ControlValue, PluginError> in
            guard session.hasEngine(engine) else {
                return .failure(PluginError(.unknownPlugin, plugin: plugin, "unknown engine '\(engine)' (recorder, player or a rack's name)"))
            }
            guard let chain = session.chain(ChainEngine(rawValue: engine)) else {
                return .failure(PluginError(.unknownPlugin, plugin: plugin, "the \(engine) has no plugin chain"))
            }
            do throws(PluginError) {
                let v = try chain.value(plugin, symbol)
                return .success(ControlValue(engine: engine, plugin: plugin, symbol: symbol, value: Double(v),
                                             text: try chain.formatted(plugin, symbol, v)))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let v): return JSONResponse.encode(v)
        case .failure(let e): return failure(.refused(e.description, e.code == .unknownPlugin || e.code == .unknownControl ? .notFound : .badValue))
        }
    }

    func names(_ context: BasicRequestContext) throws -> (String, String, String) {
        (try param(context, "engine"), try param(context, "plugin"), try param(context, "symbol"))
    }

    /// A path parameter, percent-decoded ("f%78" is "fx"; a name with a space or beyond ASCII can be reached).
    func param(_ context: BasicRequestContext, _ name: String) throws -> String {
        let raw = try context.parameters.require(name)
        guard let decoded = raw.removingPercentEncoding else {
            throw HTTPError(.badRequest, message: "'\(raw)' is not a well-formed percent-encoded \(name)")
        }
        return decoded
    }

    // MARK: Bodies

    func body<T: Decodable & Sendable>(_ request: Request, _ context: BasicRequestContext, _ type: T.Type) async throws -> T {
        guard let b = try await optionalBody(request, context, type) else {
            throw HTTPError(.badRequest, message: "a JSON body is needed")
        }
        return b
    }

    func optionalBody<T: Decodable & Sendable>(_ request: Request, _ context: BasicRequestContext, _ type: T.Type) async throws -> T? {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: server.configuration.maxBodyBytes)
        } catch {
            throw HTTPError(.contentTooLarge, message: "the body is over \(server.configuration.maxBodyBytes) bytes")
        }
        if buffer.readableBytes == 0 { return nil }
        if let type = request.headers[.contentType], !type.hasPrefix("application/json") {
            throw HTTPError(.unsupportedMediaType, message: "the body must be JSON (Content-Type: application/json), not \(type)")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer: buffer))
        } catch {
            throw HTTPError(.badRequest, message: "the body is not what this route takes: \(Self.describe(error))")
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "'\(key.stringValue)' is missing"
        case DecodingError.typeMismatch(_, let c): return "'\(c.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case DecodingError.valueNotFound(_, let c): return "'\(c.codingPath.map(\.stringValue).joined(separator: "."))' is null"
        case DecodingError.dataCorrupted(let c): return c.debugDescription
        default: return "\(error)"
        }
    }

    // MARK: Takes and files

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

    // MARK: Favourites

    func favourites() async throws -> Favourites {
        let dir = try await server.gateway.run { session in session.preset?.session.directory ?? "" }
        guard !dir.isEmpty else { throw HTTPError(.conflict, message: "no session folder") }
        return Favourites(directory: dir)
    }

    // MARK: Presets

    struct PresetEntry: Codable, Sendable {
        var name: String
        var path: String
    }

    func presets() async throws -> Response {
        let dir = try await server.gateway.run { session in session.preset?.session.directory ?? "" }
        let names = await offPool { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".toml") }.sorted() }
        return JSONResponse.encode(names.map { PresetEntry(name: ($0 as NSString).deletingPathExtension,
                                                           path: (dir as NSString).appendingPathComponent($0)) })
    }

    // MARK: Static

    /// Runs blocking work (a file read, a directory listing) off Swift's cooperative threads, so that a slow disk
    /// never stalls the other requests.
    func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in DispatchQueue.global().async { c.resume(returning: work()) } }
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

    static let index = Index(version: TandemVersion.string, openapi: "/api/openapi.json", events: "/api/events")

    struct Index: Codable, Sendable {
        var version: String
        var openapi: String
        var events: String
    }
}

// MARK: Bodies and answers

struct Reply: Codable, Sendable {
    var ok: Bool
    var detail: String
}

struct ControlValue: Codable, Sendable {
    var engine: String
    var plugin: String
    var symbol: String
    var value: Double
    /// In the control's unit, or its label ("-7.5 dB", "Lowpass").
    var text: String
}

struct Connection: Codable, Sendable {
    var from: String
    var to: String
}

/// `{"value": -7.5}` or `{"value": "-7.5 dB"}`.
struct ControlBody: Decodable, Sendable {
    enum Value: Sendable {
        case number(Double)
        case text(String)
    }
    var value: Value

    enum Keys: String, CodingKey { case value }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        if let d = try? c.decode(Double.self, forKey: .value) {
            value = .number(d)
        } else {
            value = .text(try c.decode(String.self, forKey: .value))
        }
    }
}

struct BypassBody: Codable, Sendable { var bypassed: Bool }
struct AddBody: Codable, Sendable {
    var uri: String
    var at: Int?
    var name: String?
}
struct MoveBody: Codable, Sendable { var to: Int }
struct MixBody: Codable, Sendable { var mix: Double }
struct GainBody: Codable, Sendable { var gain: Double }
struct PresetBody: Codable, Sendable { var preset: String }
struct MarkBody: Codable, Sendable { var label: String? }
struct SeekBody: Codable, Sendable { var seconds: Double }
struct LoadBody: Codable, Sendable { var files: [String] }
struct PathBody: Codable, Sendable { var path: String }
struct NameBody: Codable, Sendable { var name: String }
struct MapBody: Codable, Sendable { var map: String }
