/// A TOML value with the line it was written on.
public indirect enum TOMLValue: Sendable, Equatable {
    case string(String, line: Int)
    case integer(Int, line: Int)
    case float(Double, line: Int)
    case bool(Bool, line: Int)
    case array([TOMLValue], line: Int)
    case table(TOMLTable)

    public var line: Int {
        switch self {
        case .string(_, let l), .integer(_, let l), .float(_, let l), .bool(_, let l), .array(_, let l): return l
        case .table(let t): return t.line
        }
    }

    /// The TOML type's name, for messages.
    public var typeName: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a number"
        case .bool: return "true or false"
        case .array: return "an array"
        case .table: return "a table"
        }
    }
}

/// A TOML table: keys in the order written, each with its value and line.
public struct TOMLTable: Sendable, Equatable {
    public var line: Int
    public private(set) var keys: [String] = []
    public private(set) var values: [String: TOMLValue] = [:]
    /// Lines of the keys (the value's own line may differ for multi-line arrays).
    public private(set) var keyLines: [String: Int] = [:]

    public init(line: Int) { self.line = line }

    public subscript(key: String) -> TOMLValue? { values[key] }

    mutating func set(_ key: String, _ value: TOMLValue, line: Int, replacing: Bool = true) {
        if values[key] == nil { keys.append(key) }
        values[key] = value
        keyLines[key] = line
    }
}

/// A syntax error, with its line.
public struct TOMLError: Error, Sendable, Equatable, CustomStringConvertible {
    public let line: Int
    public let message: String
    public var description: String { "line \(line): \(message)" }
}
