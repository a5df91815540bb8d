import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// The deadline of a kept-alive connection's next request: its head must have arrived within `seconds` of the end
/// of the last answer (Hummingbird's idle timeout alone is reset by every byte, so a head sent a byte at a time
/// would hold the connection for ever). None while a request is answered, however long that takes. The first
/// request of a connection is `ConnectionGuard`'s.
///
/// Threads: its channel's event loop.
// @unchecked Sendable: `deadline` is touched only on its channel's event loop, where NIO calls every handler method
// (the scheduled close captures the channel, not the handler).
final class NextRequestDeadline: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    private let seconds: Double
    private let table: ConnectionTable
    private var deadline: Scheduled<Void>?

    init(seconds: Double, table: ConnectionTable) {
        self.seconds = seconds
        self.table = table
    }

    func handlerRemoved(context: ChannelHandlerContext) { deadline?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            deadline?.cancel()
            deadline = nil
            table.busy(context.channel)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            table.idle(context.channel)
            deadline?.cancel()
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { channel.close(promise: nil) }
        }
        context.write(data, promise: promise)
    }
}

/// The first handler of every connection, on its bytes, for the connection's first request: its head must arrive
/// whole within `seconds` of the opening (a client that sends it a byte at a time, slowloris, or nothing, is
/// closed); a head that is not HTTP (a method that is not capital letters, a control character, a header name with a
/// space or a separator) is answered 400 at once, one over `maxHeadBytes` 431, both as JSON; a refused WebSocket
/// handshake's reason (401, 403, 404, 503, set by `refuse`) replaces the bare 400 the upgrade code would send. Later
/// requests of a kept-alive connection are the decoder's (`NextRequestDeadline`, `maxHeadBytes`). A 413 closes the
/// connection rather than read the rest of a body.
///
/// Threads: its channel's event loop; `refuse` from any.
// @unchecked Sendable: `refuse`, the one member called off the event loop (the WebSocket upgrade's task), touches
// only `refusal`, a Mutex; every other var is the event loop's, where NIO calls the handler methods.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let seconds: Double
    /// Header lines every refusal carries (`SecurityHeaders`).
    private let headerLines: String
    /// The server's connections: this one is idle there until its first head is in.
    private let table: ConnectionTable?
    private var deadline: Scheduled<Void>?
    /// Its place in the pipeline, while it is there (for `answerNow`).
    private var context: ChannelHandlerContext?
    private let refusal = Mutex<[UInt8]?>(nil)
    /// Whether the refusal went out (what the upgrade code writes after it is dropped).
    private var refused = false
    static let tooLarge = Array("HTTP/1.1 413 ".utf8)
    /// The longest request head read.
    static let maxHeadBytes = 16384
    /// The first head's bytes so far, and the last four (for its end, "\r\n\r\n"); done once it ended.
    private var headBytes = 0
    private var tail: UInt32 = 0
    private var headDone = false
    /// Where the current head line is: the request line, the start of a header line, in its name, past its colon.
    private var lineState = LineState.requestLine
    private enum LineState { case requestLine, lineStart, name, value }

    init(seconds: Double, headerLines: String, table: ConnectionTable? = nil) {
        self.seconds = seconds
        self.headerLines = headerLines
        self.table = table
    }

    /// Makes the connection's answer `status` with `message` (a refused handshake).
    func refuse(_ status: HTTPResponse.Status, _ message: String) {
        let body = JSONResponse.errorBytes(status, message)
        let head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json; charset=utf-8\r\n"
            + (status == .unauthorized ? "WWW-Authenticate: Bearer realm=\"tandem\"\r\n" : "") + headerLines
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        refusal.withLock { $0 = Array(head.utf8) + body }
    }

    /// Answers `status` with `message` now and closes, reading no more (a request `FramingCheck` refused). Event loop.
    func answerNow(_ status: HTTPResponse.Status, _ message: String) {
        guard let context, !refused else { return }
        answer(context, status, message)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let channel = context.channel
        table?.opened(channel)
        deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        self.context = nil
        table?.closed(context.channel)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        if !headDone {
            let buffer = unwrapInboundIn(data)
            for byte in buffer.readableBytesView {
                if headBytes == 0 && !(0x41...0x5A).contains(byte) {   // a method starts with a capital letter
                    return answer(context, .badRequest, "this is not an HTTP/1.1 request")
                }
                if let why = check(byte) { return answer(context, .badRequest, why) }
                headBytes += 1
                if headBytes > Self.maxHeadBytes {
                    return answer(context, .requestHeaderFieldsTooLarge, "the request head is over \(Self.maxHeadBytes) bytes")
                }
                tail = tail << 8 | UInt32(byte)
                if tail == 0x0D0A_0D0A {
                    headDone = true
                    table?.busy(context.channel)
                    deadline?.cancel()
                    deadline = nil
                    break
                }
            }
        }
        context.fireChannelRead(data)
    }

    /// What is wrong with one more byte of a head, as the request line and header lines go.
    private func check(_ byte: UInt8) -> String? {
        let control = byte < 0x20 && byte != 0x09 && byte != 0x0D && byte != 0x0A || byte == 0x7F
        if control { return "the request head holds a control character (\(byte))" }
        switch (lineState, byte) {
        case (_, 0x0A):
            lineState = .lineStart
        case (.lineStart, 0x0D):
            break
        case (.lineStart, _), (.name, _):
            if byte == 0x3A {
                guard lineState == .name else { return "a header line starts with ':'" }
                lineState = .value
            } else if byte == 0x20 || byte == 0x09 || byte == 0x0D || byte > 0x7E || "\"(),/;<=>?@[\\]{}".utf8.contains(byte) {
                return "a header name holds '\(byte > 0x7E ? "\\u{\(String(byte, radix: 16))}" : String(UnicodeScalar(byte)))'"
            } else {
                lineState = .name
            }
        case (.requestLine, _), (.value, _):
            break
        }
        return nil
    }

    /// Answers with a JSON error and closes, reading no more.
    private func answer(_ context: ChannelHandlerContext, _ status: HTTPResponse.Status, _ message: String) {
        refuse(status, message)
        refused = true
        deadline?.cancel()
        let bytes = refusal.withLock { $0 } ?? []
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes))).whenComplete { _ in context.close(promise: nil) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // A body refused for its size (413) is not read to its end: the connection closes once the answer is out.
        if unwrapOutboundIn(data).readableBytesView.starts(with: Self.tooLarge) {
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .milliseconds(50)) { channel.close(promise: nil) }
        }
        if let bytes = refusal.withLock({ $0 }) {
            if !refused {
                refused = true
                context.write(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: promise)
            } else {
                promise?.succeed()
            }
            return
        }
        context.write(data, promise: promise)
    }
}

/// Hummingbird's HTTP/1 channel with the WebSocket upgrade, with a `ConnectionGuard` first in every connection.
struct GuardedChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value
    let inner: HTTP1WebSocketUpgradeChannel
    let seconds: Double
    let headerLines: String
    let table: ConnectionTable

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(seconds: seconds, headerLines: headerLines, table: table),
                                                           position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Every request head through the framing rules, right after the decoder has read it.
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(FramingCheck(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// The routes the server has, by method and path pattern ("/api/engines/:engine/plugins"): what a request for a path
/// with the wrong method is told (405 with `Allow`), and how `HEAD` finds its `GET`.
///
/// Threads: filled before the server starts, read by every request.
final class RouteTable: Sendable {
    private let routes = Mutex<[(method: HTTPRequest.Method, parts: [Substring])]>([])

    func add(_ method: HTTPRequest.Method, _ path: String) {
        let parts = path.split(separator: "/")
        routes.withLock { $0.append((method, parts)) }
    }

    /// The methods some route has for `path`.
    func methods(for path: String) -> [HTTPRequest.Method] {
        let parts = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/") } ?? []
        return routes.withLock { table in
            table.filter { r in
                r.parts.count == parts.count && zip(r.parts, parts).allSatisfy { $0.hasPrefix(":") || $0 == $1 }
            }.map(\.method)
        }
    }
}

/// Every request through the access rules (`HTTPAccess`: token, origin) and the body limit, with a JSON error
/// naming what is wrong. CORS is `OriginCORSMiddleware`'s, before this.
struct LimitsMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let server: HTTPServer

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        let access = server.configuration.access
        let changes = request.method != .get && request.method != .head && request.method != .options
        switch access.check(request.head, changes: changes, tokenInQuery: HTTPAccess.isDownload(request.head)) {
        case .allowed: break
        case .unauthorized:
            server.stats.count("401")
            var r = JSONResponse.error(.unauthorized, HTTPAccess.unauthorizedMessage)
            r.headers[.wwwAuthenticate] = "Bearer realm=\"tandem\""
            return r
        case .forbidden(let why):
            server.stats.count("403")
            return JSONResponse.error(.forbidden, why)
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > server.configuration.maxBodyBytes {
            server.stats.count("413")
            var r = JSONResponse.error(.contentTooLarge, "the body has \(length) bytes; at most \(server.configuration.maxBodyBytes)")
            r.headers[.connection] = "close"
            return r
        }
        var response: Response
        let methods = server.routes.methods(for: request.uri.path)
        let allow = (methods.contains(.get) ? ["GET", "HEAD"] : []) + methods.filter { $0 != .get }.map(\.rawValue)
            + ["OPTIONS"]
        if request.method == .options, !methods.isEmpty {
            response = Response(status: .noContent, headers: [.allow: allow.joined(separator: ", ")])
        } else if !methods.isEmpty, !methods.contains(request.method), !(request.method == .head && methods.contains(.get)) {
            response = JSONResponse.error(.methodNotAllowed, "\(request.uri.path) takes \(allow.joined(separator: ", ")), not \(request.method)")
            response.headers[.allow] = allow.joined(separator: ", ")
        } else {
            do {
                response = try await next(request, context)
                // HEAD is GET without the body (the router's HEAD endpoint drops it after this): GET's length too.
                if request.method == .head, response.headers[.contentLength] == nil, let n = response.body.contentLength {
                    response.headers[.contentLength] = "\(n)"
                }
            } catch let e as HTTPError {
                let missing = e.status == .notFound && e.body == nil
                response = JSONResponse.error(e.status, missing
                    ? "no \(request.method) \(request.uri.path) here (GET /api lists the API, /api/openapi.json describes it)"
                    : e.body ?? "\(e.status)")
            }
        }
        if response.status.code >= 400 { server.stats.count("\(response.status.code)") }
        return response
    }
}

/// JSON bodies, and errors as `{"error": "…", "status": N}`.
enum JSONResponse {
    static func json(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
                 body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response { json(Data(text.utf8), status: status) }

    static func encode<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return json((try? e.encode(value)) ?? Data("{}".utf8), status: status)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        encode(ErrorBody(error: message, status: status.code), status: status)
    }

    static func errorBytes(_ status: HTTPResponse.Status, _ message: String) -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return Array((try? e.encode(ErrorBody(error: message, status: status.code))) ?? Data("{}".utf8))
    }

    struct ErrorBody: Codable {
        let error: String
        let status: Int
    }
}
