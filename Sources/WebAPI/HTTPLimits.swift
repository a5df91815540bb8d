import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Closes a connection whose next request head has not fully arrived within `seconds` of the end of its last request:
/// a client sending its headers a byte at a time (slowloris) on a kept-alive connection holds it no longer than
/// that, whatever the idle timeout (which each byte would reset). The first request of a connection is guarded by
/// `ConnectionGuard`.
///
/// Threads: its channel's event loop.
final class HeaderDeadline: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    private let seconds: Double
    private var deadline: Scheduled<Void>?

    init(seconds: Double) { self.seconds = seconds }

    func handlerRemoved(context: ChannelHandlerContext) { deadline?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            deadline = nil
        case .end:
            arm(context)
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    private func arm(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
            channel.close(promise: nil)
        }
    }
}

/// The first handler of every connection, on its bytes: closes a connection the server has not begun to answer
/// within `seconds` of its opening (a first request head sent a byte at a time, a body that never ends); answers a
/// first request that is not HTTP (400) or whose head passes `maxHeadBytes` (431) at once; and puts a refused
/// WebSocket handshake's reason (401, 403, 503 as JSON, set by `refuse`) in place of the bare 400 the upgrade code
/// would send.
///
/// Threads: its channel's event loop; `refuse` from any.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let seconds: Double
    private var deadline: Scheduled<Void>?
    private let refusal = Mutex<[UInt8]?>(nil)
    /// Whether the refusal went out (what the upgrade code writes after it is dropped).
    private var refused = false
    static let tooLarge = Array("HTTP/1.1 413 ".utf8)
    /// The longest first request head read.
    static let maxHeadBytes = 16384
    /// Bytes of the first request read while its head's end ("\r\n\r\n") was not seen, and the last four.
    private var headBytes = 0
    private var tail: UInt32 = 0
    private var headDone = false

    init(seconds: Double) { self.seconds = seconds }

    /// Makes the connection's answer `status` with `message` (a refused handshake).
    func refuse(_ status: HTTPResponse.Status, _ message: String) {
        let body = JSONResponse.errorBytes(status, message)
        let head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json; charset=utf-8\r\n"
            + (status == .unauthorized ? "WWW-Authenticate: Bearer realm=\"tandem\"\r\n" : "")
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        refusal.withLock { $0 = Array(head.utf8) + body }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) { deadline?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !headDone && !refused {
            let buffer = unwrapInboundIn(data)
            for byte in buffer.readableBytesView {
                if headBytes == 0 && !(0x41...0x5A).contains(byte) {   // a method starts with a capital letter
                    return answer(context, .badRequest, "this is not an HTTP/1.1 request")
                }
                headBytes += 1
                tail = tail << 8 | UInt32(byte)
                if tail == 0x0D0A_0D0A {
                    headDone = true
                    break
                }
            }
            if !headDone && headBytes > Self.maxHeadBytes {
                return answer(context, .requestHeaderFieldsTooLarge, "the request head is over \(Self.maxHeadBytes) bytes")
            }
        }
        context.fireChannelRead(data)
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
        deadline?.cancel()
        deadline = nil
        // A body refused for its size (413) is not read to its end: the connection closes once the answer is out.
        if unwrapOutboundIn(data).readableBytesView.starts(with: Self.tooLarge) {
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .milliseconds(200)) { channel.close(promise: nil) }
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

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(seconds: seconds), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Every request through the access rules (`HTTPAccess`: token, origin) and the body limit, with a JSON error
/// naming what is wrong; CORS headers only for configured origins.
struct LimitsMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let server: HTTPServer

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        let access = server.configuration.access
        let changes = request.method != .get && request.method != .head && request.method != .options
        switch access.check(request.head, changes: changes) {
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
        if request.method == .options {
            response = Response(status: .noContent)
        } else {
            do {
                response = try await next(request, context)
            } catch let e as HTTPError {
                let missing = e.status == .notFound && e.body == nil
                response = JSONResponse.error(e.status, missing
                    ? "no \(request.method) \(request.uri.path) here (GET /api lists the API, /api/openapi.json describes it)"
                    : e.body ?? "\(e.status)")
            }
        }
        if let origin = request.headers[.origin], access.origins.contains(origin) {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlAllowHeaders] = "Authorization, Content-Type"
            response.headers[.accessControlAllowMethods] = "GET, POST, PUT, DELETE"
            response.headers[.vary] = "Origin"
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
