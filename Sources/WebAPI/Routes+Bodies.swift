import Foundation
import Hummingbird
import NIOCore

// Reading a request: path parameters and JSON bodies, each refusal a 4xx in words.
extension Routes {
    /// A path parameter, percent-decoded ("f%78" is "fx"; a name with a space or beyond ASCII can be reached).
    func param(_ context: BasicRequestContext, _ name: String) throws -> String {
        let raw = try context.parameters.require(name)
        guard let decoded = raw.removingPercentEncoding else {
            throw HTTPError(.badRequest, message: "'\(raw)' is not a well-formed percent-encoded \(name)")
        }
        return decoded
    }

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
