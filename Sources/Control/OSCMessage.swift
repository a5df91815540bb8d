import CLo
import Foundation

/// One OSC argument.
public enum OSCValue: Equatable, Sendable, CustomStringConvertible {
    case int(Int32)
    case long(Int64)
    case float(Float)
    case double(Double)
    case string(String)
    /// A type Tandem does not use (its OSC type tag).
    case other(Character)

    public var description: String {
        switch self {
        case .int(let v): return String(v)
        case .long(let v): return String(v)
        case .float(let v): return String(v)
        case .double(let v): return String(v)
        case .string(let s): return "\"\(s)\""
        case .other(let c): return "<\(c)>"
        }
    }

    /// The value as a number, if it is one.
    public var number: Double? {
        switch self {
        case .int(let v): return Double(v)
        case .long(let v): return Double(v)
        case .float(let v): return Double(v)
        case .double(let v): return v
        default: return nil
        }
    }

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

/// An OSC message: an address and arguments. Encoded and decoded with liblo.
public struct OSCMessage: Equatable, Sendable {
    public var path: String
    public var arguments: [OSCValue]

    public init(_ path: String, _ arguments: [OSCValue] = []) {
        self.path = path
        self.arguments = arguments
    }

    /// Why a datagram is not an OSC message Tandem can read.
    public struct DecodeError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Decodes one datagram (liblo validates the whole packet, including padding and type tags).
    public static func decode(_ data: UnsafeRawBufferPointer) throws(DecodeError) -> OSCMessage {
        guard data.count >= 4, let base = data.baseAddress else { throw DecodeError(message: "empty or truncated packet") }
        if data.first == UInt8(ascii: "#") { throw DecodeError(message: "OSC bundles are not supported; send single messages") }
        var result: Int32 = 0
        guard let m = lo_message_deserialise(UnsafeMutableRawPointer(mutating: base), data.count, &result) else {
            throw DecodeError(message: "not a valid OSC message (liblo error \(result))")
        }
        defer { lo_message_free(m) }
        guard let rawPath = lo_get_path(UnsafeMutableRawPointer(mutating: base), data.count) else {
            throw DecodeError(message: "not a valid OSC message (no address)")
        }
        let path = String(cString: rawPath)
        let count = Int(lo_message_get_argc(m))
        let types = lo_message_get_types(m).map { Array(String(cString: $0)) } ?? []
        let argv = lo_message_get_argv(m)
        var args: [OSCValue] = []
        for i in 0..<count {
            guard let arg = argv?[i], i < types.count else { break }
            let raw = UnsafeRawPointer(arg)
            switch types[i] {
            case "i": args.append(.int(raw.loadUnaligned(as: Int32.self)))
            case "h": args.append(.long(raw.loadUnaligned(as: Int64.self)))
            case "f": args.append(.float(raw.loadUnaligned(as: Float.self)))
            case "d": args.append(.double(raw.loadUnaligned(as: Double.self)))
            case "s", "S": args.append(.string(String(cString: raw.assumingMemoryBound(to: CChar.self))))
            default: args.append(.other(types[i]))
            }
        }
        return OSCMessage(path, args)
    }

    /// Decodes a datagram held in an array.
    public static func decode(bytes: [UInt8]) -> Result<OSCMessage, DecodeError> {
        bytes.withUnsafeBytes { b in
            do throws(DecodeError) { return .success(try decode(b)) } catch { return .failure(error) }
        }
    }

    /// Encodes the message as one OSC packet.
    public func encode() -> [UInt8] {
        guard let m = lo_message_new() else { return [] }
        defer { lo_message_free(m) }
        for a in arguments {
            switch a {
            case .int(let v): lo_message_add_int32(m, v)
            case .long(let v): lo_message_add_int64(m, v)
            case .float(let v): lo_message_add_float(m, v)
            case .double(let v): lo_message_add_double(m, v)
            case .string(let s): lo_message_add_string(m, s)
            case .other: break
            }
        }
        var size = 0
        guard let bytes = lo_message_serialise(m, path, nil, &size) else { return [] }
        defer { free(bytes) }
        return Array(UnsafeRawBufferPointer(start: bytes, count: size))
    }
}
