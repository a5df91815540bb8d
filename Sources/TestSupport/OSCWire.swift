/// One OSC argument as it goes on the wire: any OSC 1.0 type, including ones Tandem never uses.
public enum OSCArgument: CustomStringConvertible, Sendable {
    case int(Int32)
    case long(Int64)
    case float(Float)
    case double(Double)
    case string(String)
    case symbol(String)
    case blob([UInt8])
    case char(UInt8)
    case timetag(UInt64)
    case midi(UInt32)
    case `true`, `false`, `nil`, infinitum

    public var tag: Character {
        switch self {
        case .int: "i"
        case .long: "h"
        case .float: "f"
        case .double: "d"
        case .string: "s"
        case .symbol: "S"
        case .blob: "b"
        case .char: "c"
        case .timetag: "t"
        case .midi: "m"
        case .true: "T"
        case .false: "F"
        case .nil: "N"
        case .infinitum: "I"
        }
    }

    public var description: String {
        func short(_ s: String) -> String {
            let escaped = s.unicodeScalars.map { $0.value < 32 || $0.value > 126 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
                .joined()
            return escaped.count > 60 ? "\"\(escaped.prefix(40))…\" (\(s.utf8.count) bytes)" : "\"\(escaped)\""
        }
        switch self {
        case .int(let v): return "i:\(v)"
        case .long(let v): return "h:\(v)"
        case .float(let v): return "f:\(v)"
        case .double(let v): return "d:\(v)"
        case .string(let s): return "s:" + short(s)
        case .symbol(let s): return "S:" + short(s)
        case .blob(let b): return "b:[\(b.count) bytes]"
        case .char(let c): return "c:\(c)"
        case .timetag(let t): return "t:\(t)"
        case .midi(let m): return "m:\(m)"
        case .true: return "T"
        case .false: return "F"
        case .nil: return "N"
        case .infinitum: return "I"
        }
    }
}

/// Raw OSC 1.0 encoding, written out here (not with liblo) so that the fuzzer can also build what liblo refuses to:
/// strings with NUL inside, tags that disagree with the data, truncated and oversized packets.
public enum OSCWire {
    /// A string with its terminating NUL, padded to a multiple of 4 bytes.
    public static func padded(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        out.append(0)
        while out.count % 4 != 0 { out.append(0) }
        return out
    }

    static func bigEndian<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
        withUnsafeBytes(of: v.bigEndian) { Array($0) }
    }

    /// Encodes one message. `tags` overrides the type tag string (without it: the arguments' own, with a comma).
    public static func message(_ address: String, _ arguments: [OSCArgument], tags: String? = nil) -> [UInt8] {
        var out = padded(Array(address.utf8))
        out += padded(Array((tags ?? ("," + String(arguments.map(\.tag)))).utf8))
        for a in arguments {
            switch a {
            case .int(let v): out += bigEndian(v)
            case .long(let v): out += bigEndian(v)
            case .float(let v): out += bigEndian(v.bitPattern)
            case .double(let v): out += bigEndian(v.bitPattern)
            case .string(let s), .symbol(let s): out += padded(Array(s.utf8))
            case .blob(let b):
                out += bigEndian(Int32(truncatingIfNeeded: b.count)) + b
                while out.count % 4 != 0 { out.append(0) }
            case .char(let c): out += [0, 0, 0, c]
            case .timetag(let t): out += bigEndian(t)
            case .midi(let m): out += bigEndian(m)
            case .true, .false, .nil, .infinitum: break
            }
        }
        return out
    }

    /// The address and string arguments of a reply, read leniently (nil when it is not an OSC message).
    public static func decodeStrings(_ bytes: [UInt8]) -> (address: String, strings: [String])? {
        var i = 0
        func readString() -> String? {
            guard i < bytes.count, let end = bytes[i...].firstIndex(of: 0) else { return nil }
            let s = String(decoding: bytes[i..<end], as: UTF8.self)
            i = (end + 4) & ~3
            return s
        }
        guard let address = readString(), address.hasPrefix("/"), let tags = readString(), tags.hasPrefix(",") else {
            return nil
        }
        var strings: [String] = []
        for t in tags.dropFirst() {
            switch t {
            case "s", "S": guard let s = readString() else { return (address, strings) }; strings.append(s)
            case "i", "f", "c", "m", "r": i += 4
            case "h", "d", "t": i += 8
            case "b":
                guard i + 4 <= bytes.count else { return (address, strings) }
                let n = Int(UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3]))
                i = (i + 4 + n + 3) & ~3
            default: break
            }
        }
        return (address, strings)
    }
}
