import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1

/// Every request head of a connection, as the decoder read it, held to HTTP/1.1's framing rules before anything
/// routes it (RFC 9112 sections 3.2, 6.1-6.3): exactly one `Host`; a target in origin form, or in absolute form
/// naming that host over http; at most one `Content-Length`, digits only; `Transfer-Encoding` only as `chunked`
/// alone and never with a `Content-Length`; no control characters in any field. A request that breaks one, or one
/// the decoder cannot read at all (a negative length, a folded header, a NUL), is answered 400 at once by the
/// connection's guard and the connection closed: two readers of such a request (a reverse proxy in front, this
/// server) could frame it differently, which is how a request is smuggled past the proxy. It never reaches a route.
///
/// Sits right after the request decoder. It leaves the pipeline with the first request when that one asks for a
/// WebSocket (what follows is frames, not HTTP).
///
/// Threads: its channel's event loop.
// @unchecked Sendable: every member is touched only on its channel's event loop, where NIO calls the handler.
final class FramingCheck: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    /// Once refused, nothing more is read.
    private var refused = false
    private var first = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        guard case .head(let head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        if let why = Self.problem(head) { return refuse(context, why) }
        let upgrade = first && head.headers.contains(name: "upgrade")
        first = false
        context.fireChannelRead(data)
        if upgrade { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if refused { return }
        if let parse = error as? HTTPParserError {
            return refuse(context, "the request cannot be read as HTTP/1.1 (\(parse))")
        }
        context.fireErrorCaught(error)
    }

    private func refuse(_ context: ChannelHandlerContext, _ why: String) {
        refused = true
        if let guardHandler = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self) {
            guardHandler.answerNow(.badRequest, why)
        } else {
            context.close(promise: nil)
        }
    }

    /// What is wrong with a head's framing, in words; nil when nothing is.
    static func problem(_ head: HTTPRequestHead) -> String? {
        let hosts = head.headers["Host"]
        guard hosts.count == 1, let host = hosts.first else {
            return hosts.isEmpty ? "an HTTP/1.1 request needs a Host header" : "the request has \(hosts.count) Host headers"
        }
        for (name, value) in head.headers where value.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) {
            return "the \(name) header holds a control character"
        }
        if head.uri.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            return "the request target holds a control character or a space"
        }
        if !head.uri.hasPrefix("/") && !(head.method == .OPTIONS && head.uri == "*") {
            guard let url = URLComponents(string: head.uri), let scheme = url.scheme?.lowercased(),
                  let targetHost = url.host else {
                return "the request target is neither a path nor an absolute URL"
            }
            guard scheme == "http" else { return "the request target's scheme is \(scheme), not http" }
            let authority = url.port.map { "\(targetHost):\($0)" } ?? targetHost
            let bracketed = url.port.map { "[\(targetHost)]:\($0)" } ?? "[\(targetHost)]"
            guard authority.lowercased() == host.lowercased() || bracketed.lowercased() == host.lowercased() else {
                return "the request target names host '\(authority)', not this server's '\(host)'"
            }
        }
        let lengths = head.headers["Content-Length"]
        let codings = head.headers["Transfer-Encoding"]
        if lengths.count > 1 { return "the request has \(lengths.count) Content-Length headers" }
        if let length = lengths.first,
           length.isEmpty || length.count > 18 || !length.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            return "Content-Length '\(length.prefix(40))' is not a number of bytes"
        }
        if !codings.isEmpty {
            guard lengths.isEmpty else { return "the request has both Content-Length and Transfer-Encoding" }
            let list = codings.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard list == ["chunked"] else {
                return "Transfer-Encoding '\(codings.joined(separator: ", ").prefix(60))' is not chunked alone"
            }
        }
        return nil
    }
}
