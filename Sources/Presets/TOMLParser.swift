/// Parses the TOML this project's presets use: tables, arrays of tables, dotted keys, basic and literal strings,
/// integers (decimal, hexadecimal, octal, binary) and floats as TOML 1.0 writes them, booleans, arrays (over several
/// lines) and inline tables. Every value keeps its line number, so validation can point at the exact place. Dates,
/// multi-line strings, `inf` and `nan` are refused with a clear message.
public struct TOMLParser {
    private let chars: [Character]
    private var i = 0
    private var line = 1

    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        // Swift reads "\r\n" as one Character, which no newline check would match: CRLF files become LF first.
        var p = TOMLParser(chars: Array(text.contains("\r\n") ? text.replacingOccurrences(of: "\r\n", with: "\n") : text))
        return try p.document()
    }

    private init(chars: [Character]) { self.chars = chars }

    private func fail(_ message: String) -> TOMLError { TOMLError(line: line, message: message) }

    private var atEnd: Bool { i >= chars.count }
    private var peek: Character? { atEnd ? nil : chars[i] }

    private mutating func advance() {
        if chars[i] == "\n" { line += 1 }
        i += 1
    }

    private mutating func skipSpaces() {
        while let c = peek, c == " " || c == "\t" { advance() }
    }

    /// Spaces, newlines and comments (inside arrays).
    private mutating func skipBlank() {
        while let c = peek {
            if c == " " || c == "\t" || c == "\n" || c == "\r" { advance() } else if c == "#" { skipComment() } else { break }
        }
    }

    private mutating func skipComment() {
        while let c = peek, c != "\n" { advance() }
    }

    /// After a statement: spaces, an optional comment, then a newline or the end.
    private mutating func endOfLine() throws(TOMLError) {
        skipSpaces()
        if peek == "#" { skipComment() }
        if peek == "\r" { advance() }
        if let c = peek {
            if c != "\n" { throw fail("unexpected '\(c)' after a value (one key = value per line)") }
            advance()
        }
    }

    private mutating func document() throws(TOMLError) -> TOMLTable {
        var root = TOMLTable(line: 1)
        var path: [String] = []
        var arrayPath = false
        var defined = Set<String>()
        while true {
            skipBlank()
            guard let c = peek else { break }
            if c == "[" {
                let headerLine = line
                advance()
                let isArray = peek == "["
                if isArray { advance() }
                skipSpaces()
                let keys = try keyPath()
                skipSpaces()
                guard peek == "]" else { throw fail("a table header must end with ']'") }
                advance()
                if isArray {
                    guard peek == "]" else { throw fail("an array-of-tables header must end with ']]'") }
                    advance()
                }
                try endOfLine()
                path = keys
                arrayPath = isArray
                let joined = keys.joined(separator: ".")
                if isArray {
                    // A new element: the tables under the array are its own again (`[[scene]]`, `[scene.values]`).
                    defined = defined.filter { !$0.hasPrefix(joined + ".") }
                    try Self.appendTable(&root, keys, line: headerLine)
                } else {
                    if defined.contains(joined) { throw TOMLError(line: headerLine, message: "table [\(joined)] is defined twice") }
                    defined.insert(joined)
                    try Self.ensureTable(&root, keys, line: headerLine)
                }
            } else {
                let keyLine = line
                let keys = try keyPath()
                skipSpaces()
                guard peek == "=" else { throw fail("expected '=' after the key '\(keys.joined(separator: "."))'") }
                advance()
                skipSpaces()
                let value = try parseValue()
                try endOfLine()
                try Self.insert(&root, path: path, inArray: arrayPath, keys: keys, value: value, line: keyLine)
            }
        }
        return root
    }

    private mutating func keyPath() throws(TOMLError) -> [String] {
        var keys: [String] = []
        while true {
            skipSpaces()
            keys.append(try key())
            skipSpaces()
            if peek == "." { advance() } else { break }
        }
        return keys
    }

    private mutating func key() throws(TOMLError) -> String {
        guard let c = peek else { throw fail("expected a key") }
        if c == "\"" { return try basicString() }
        if c == "'" { return try literalString() }
        var s = ""
        while let c = peek, c.isLetter || c.isNumber || c == "_" || c == "-" {
            s.append(c)
            advance()
        }
        if s.isEmpty { throw fail("expected a key, found '\(c)'") }
        return s
    }

    private mutating func parseValue() throws(TOMLError) -> TOMLValue {
        let valueLine = line
        guard let c = peek else { throw fail("expected a value") }
        switch c {
        case "\"":
            if i + 2 < chars.count && chars[i + 1] == "\"" && chars[i + 2] == "\"" {
                throw fail("multi-line strings are not supported in presets")
            }
            return .string(try basicString(), line: valueLine)
        case "'":
            return .string(try literalString(), line: valueLine)
        case "[":
            advance()
            var items: [TOMLValue] = []
            while true {
                skipBlank()
                if peek == "]" {
                    advance()
                    break
                }
                items.append(try parseValue())
                skipBlank()
                if peek == "," { advance(); continue }
                skipBlank()
                guard peek == "]" else { throw fail("expected ',' or ']' in an array") }
                advance()
                break
            }
            return .array(items, line: valueLine)
        case "{":
            advance()
            var table = TOMLTable(line: valueLine)
            skipSpaces()
            if peek == "}" {
                advance()
                return .table(table)
            }
            while true {
                skipSpaces()
                let keyLine = line
                let keys = try keyPath()
                skipSpaces()
                guard peek == "=" else { throw fail("expected '=' in an inline table") }
                advance()
                skipSpaces()
                let v = try parseValue()
                try Self.insert(&table, path: [], inArray: false, keys: keys, value: v, line: keyLine)
                skipSpaces()
                if peek == "," { advance(); continue }
                guard peek == "}" else { throw fail("expected ',' or '}' in an inline table") }
                advance()
                break
            }
            return .table(table)
        case "t", "f":
            for (word, value) in [("true", true), ("false", false)] where matches(word) {
                i += word.count
                return .bool(value, line: valueLine)
            }
            throw fail("expected a value; strings need quotes")
        default:
            return try number(valueLine)
        }
    }

    private func matches(_ word: String) -> Bool {
        let w = Array(word)
        guard i + w.count <= chars.count, Array(chars[i..<(i + w.count)]) == w else { return false }
        if i + w.count < chars.count {
            let next = chars[i + w.count]
            if next.isLetter || next.isNumber || next == "_" { return false }
        }
        return true
    }

    /// A number as TOML 1.0 writes it: decimal integers (no leading zeros), `0x`, `0o` and `0b` integers (no sign),
    /// floats with a fraction and/or an exponent; an underscore only between two digits. `inf` and `nan` are TOML
    /// floats, refused here in words: no preset value takes them.
    private mutating func number(_ valueLine: Int) throws(TOMLError) -> TOMLValue {
        var s = ""
        while let c = peek, c.isNumber || "+-_.eE".contains(c) || c.isLetter || c == ":" {
            s.append(c)
            advance()
        }
        if s.isEmpty { throw fail("expected a value; strings need quotes") }
        if s.contains(":") || (s.count >= 10 && s.dropFirst(4).first == "-" && s.first?.isNumber == true) {
            throw TOMLError(line: valueLine, message: "dates and times are not supported; write them as strings")
        }
        func problem(_ why: String) -> TOMLError { TOMLError(line: valueLine, message: "'\(s)' is not a number: \(why)") }
        let tooLarge = TOMLError(line: valueLine, message: "'\(s)' is too large for an integer (at most \(Int.max))")
        let signed = s.first == "+" || s.first == "-"
        let unsigned = signed ? s.dropFirst() : Substring(s)
        guard let first = unsigned.first, first.isASCII && first.isNumber || unsigned == "inf" || unsigned == "nan" else {
            throw TOMLError(line: valueLine, message: "'\(s)' is not a value (strings need quotes)")
        }
        if unsigned == "inf" || unsigned == "nan" {
            throw TOMLError(line: valueLine, message: "'\(s)' is a TOML float, but a preset takes finite numbers only")
        }
        // Digits of one kind, an underscore only between two of them.
        func digits(_ t: Substring, _ isDigit: (Character) -> Bool) throws(TOMLError) -> String {
            guard let a = t.first, let z = t.last else { throw problem("digits are missing") }
            if a == "_" || z == "_" || t.contains("__") { throw problem("an underscore goes between two digits") }
            guard t.allSatisfy({ $0 == "_" || isDigit($0) }) else { throw problem("'\(t)' holds something other than digits") }
            return String(t.filter { $0 != "_" })
        }
        let decimal: (Character) -> Bool = { $0.isASCII && $0.isNumber }
        for (prefix, radix, name) in [("0x", 16, "a hexadecimal"), ("0o", 8, "an octal"), ("0b", 2, "a binary")]
        where unsigned.hasPrefix(prefix) {
            if signed { throw problem("\(name) integer takes no sign") }
            let body = try digits(unsigned.dropFirst(2)) { c in c.isASCII && c.hexDigitValue.map { $0 < radix } == true }
            guard let v = Int(body, radix: radix) else { throw tooLarge }
            return .integer(v, line: valueLine)
        }
        // Decimal: an integer part, then a fraction and/or an exponent for a float.
        let end = unsigned.firstIndex { $0 == "." || $0 == "e" || $0 == "E" } ?? unsigned.endIndex
        let whole = try digits(unsigned[..<end], decimal)
        if whole.count > 1 && whole.first == "0" { throw problem("a decimal number has no leading zeros") }
        var rest = unsigned[end...]
        if rest.isEmpty {
            guard let v = Int((s.first == "-" ? "-" : "") + whole) else { throw tooLarge }
            return .integer(v, line: valueLine)
        }
        var text = (s.first == "-" ? "-" : "") + whole
        if rest.first == "." {
            rest = rest.dropFirst()
            let stop = rest.firstIndex { $0 == "e" || $0 == "E" } ?? rest.endIndex
            let fraction = try digits(rest[..<stop], decimal)
            text += "." + fraction
            rest = rest[stop...]
        }
        if let e = rest.first, e == "e" || e == "E" {
            rest = rest.dropFirst()
            var sign = ""
            if let c = rest.first, c == "+" || c == "-" {
                sign = String(c)
                rest = rest.dropFirst()
            }
            let exponent = try digits(rest, decimal)
            text += "e" + sign + exponent
            rest = rest[rest.endIndex...]
        }
        guard rest.isEmpty, let v = Double(text) else { throw problem("a float is digits, a fraction (.5) and/or an exponent (e3)") }
        guard v.isFinite else { throw TOMLError(line: valueLine, message: "'\(s)' is too large for a number") }
        return .float(v, line: valueLine)
    }

    private mutating func basicString() throws(TOMLError) -> String {
        advance()   // opening quote
        var s = ""
        while true {
            guard let c = peek, c != "\n" else { throw fail("unterminated string") }
            advance()
            if c == "\"" { return s }
            if c == "\\" {
                guard let e = peek else { throw fail("unterminated string") }
                advance()
                switch e {
                case "n": s.append("\n")
                case "t": s.append("\t")
                case "r": s.append("\r")
                case "\\": s.append("\\")
                case "\"": s.append("\"")
                case "u", "U":
                    let n = e == "u" ? 4 : 8
                    var hex = ""
                    for _ in 0..<n {
                        guard let h = peek, h.isHexDigit else { throw fail("bad \\\(e) escape in a string") }
                        hex.append(h)
                        advance()
                    }
                    guard let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else {
                        throw fail("bad unicode escape in a string")
                    }
                    s.unicodeScalars.append(scalar)
                default: throw fail("unknown escape '\\\(e)' in a string (use '...' for regular expressions)")
                }
            } else {
                s.append(c)
            }
        }
    }

    private mutating func literalString() throws(TOMLError) -> String {
        advance()
        var s = ""
        while true {
            guard let c = peek, c != "\n" else { throw fail("unterminated string") }
            advance()
            if c == "'" { return s }
            s.append(c)
        }
    }
}
