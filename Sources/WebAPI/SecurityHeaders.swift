import Foundation
import HTTPTypes
import Hummingbird

/// What every answer says about how a browser may use it (docs/HTTP.md, "Security"): the page's content policy (its
/// own scripts, styles, images and connections only; no inline script; no plugins; framed by no one, or by the
/// configured origins only), `X-Frame-Options: DENY` for browsers without `frame-ancestors`, `X-Content-Type-Options:
/// nosniff`. The same on the API's answers, errors and the connection guard's refusals, so that no answer of this
/// server can be framed or sniffed into something else.
///
/// Hummingbird's `ContentSecurityMiddleware` writes the same two of these headers, but takes `frame-ancestors` as a
/// variadic list fixed in the source (the configured origins are known only at start) and adds nothing to an answer
/// made from a thrown error; so the policy is written here and `SecurityMiddleware` puts it on every answer.
///
/// Pure; any thread.
struct SecurityHeaders: Sendable {
    let fields: HTTPFields

    /// `origins`: those configured; only well-formed ones (`http(s)://host[:port]`) may frame the page.
    init(origins: [String]) {
        let framers = origins.filter { $0.range(of: #"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$"#,
                                                 options: .regularExpression) != nil }
        let ancestors = framers.isEmpty ? "'none'" : framers.joined(separator: " ")
        let policy = ["default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
                      "connect-src 'self'", "media-src 'self'", "object-src 'none'", "base-uri 'none'",
                      "form-action 'self'", "frame-ancestors \(ancestors)"].joined(separator: "; ")
        fields = [.contentSecurityPolicy: policy, Self.xFrameOptions: "DENY", .xContentTypeOptions: "nosniff"]
    }

    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!

    /// The header lines, for an answer written as bytes (`ConnectionGuard`).
    var lines: String { fields.map { "\($0.name.canonicalName): \($0.value)\r\n" }.joined() }
}

/// The outermost middleware: every answer, whether a handler's, a refusal's or made from a thrown error, gets the
/// security headers (a thrown error would otherwise become Hummingbird's answer after every middleware had run).
struct SecurityMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let headers: SecurityHeaders

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let e as any HTTPResponseError {
            response = try e.response(from: request, context: context)
        }
        for field in headers.fields { response.headers[field.name] = field.value }
        return response
    }
}

/// CORS for the configured origins only (`HTTPAccess.origins`; none configured: no CORS headers at all), by
/// Hummingbird's `CORSMiddleware`, before the token check: a preflight (`OPTIONS`) carries no token, and the browser
/// sends `Authorization` only once the preflight allowed it. Other origins pass through untouched, to the access
/// rules. (`CORSMiddleware`'s own `.oneOf` takes its origins as a variadic list fixed in the source, so the list is
/// checked here and the middleware echoes the origin.)
struct OriginCORSMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let origins: Set<String>
    let cors = CORSMiddleware<BasicRequestContext>(
        allowOrigin: .originBased, allowHeaders: [.authorization, .contentType],
        allowMethods: [.get, .head, .post, .put, .delete, .options], maxAge: .seconds(600))

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin], origins.contains(origin) else { return try await next(request, context) }
        return try await cors.handle(request, context: context, next: next)
    }
}
