import Foundation

// Typed reads of a table's keys: each checks the type and range and reports a problem with the key and line.
extension Validator {
    mutating func string(_ t: TOMLTable, _ key: String, _ section: String) -> (String, Int)? {
        guard let v = t[key] else { return nil }
        if case .string(let s, let l) = v { return (s, l) }
        problem("\(section).\(key)", v.line, "expected a string, found \(v.typeName)")
        return nil
    }

    mutating func number(_ t: TOMLTable, _ key: String, _ section: String, _ range: ClosedRange<Double>,
                         unit: String = "") -> Double? {
        guard let v = t[key] else { return nil }
        let d: Double
        switch v {
        case .integer(let i, _): d = Double(i)
        case .float(let f, _): d = f
        default:
            problem("\(section).\(key)", v.line, "expected a number, found \(v.typeName)")
            return nil
        }
        guard range.contains(d) else {
            problem("\(section).\(key)", v.line, "\(Self.format(d)) is out of range (allowed: \(Self.format(range.lowerBound))"
                    + " to \(Self.format(range.upperBound))\(unit))")
            return nil
        }
        return d
    }

    static func format(_ d: Double) -> String { Limits.number(d) }

    mutating func integer(_ t: TOMLTable, _ key: String, _ section: String, _ range: ClosedRange<Int>) -> Int? {
        guard let v = t[key] else { return nil }
        guard case .integer(let i, _) = v else {
            problem("\(section).\(key)", v.line, "expected an integer, found \(v.typeName)")
            return nil
        }
        guard range.contains(i) else {
            problem("\(section).\(key)", v.line, "\(i) is out of range (allowed: \(range.lowerBound) to \(range.upperBound))")
            return nil
        }
        return i
    }

    mutating func bool(_ t: TOMLTable, _ key: String, _ section: String) -> Bool? {
        guard let v = t[key] else { return nil }
        guard case .bool(let b, _) = v else {
            problem("\(section).\(key)", v.line, "expected true or false, found \(v.typeName)")
            return nil
        }
        return b
    }

    mutating func choice<E: RawRepresentable & CaseIterable>(_ t: TOMLTable, _ key: String, _ section: String,
                                                             _ type: E.Type) -> E? where E.RawValue == String {
        guard let (s, line) = string(t, key, section) else { return nil }
        if let e = E(rawValue: s) { return e }
        let allowed = E.allCases.map(\.rawValue)
        var message = "'\(s)' is not allowed (allowed: \(allowed.joined(separator: ", ")))"
        if let near = Self.nearest(s, allowed) { message += "; did you mean '\(near)'?" }
        problem("\(section).\(key)", line, message)
        return nil
    }

    mutating func strings(_ t: TOMLTable, _ key: String, _ section: String) -> ([String], Int)? {
        guard let v = t[key] else { return nil }
        guard case .array(let items, let line) = v else {
            problem("\(section).\(key)", v.line, "expected an array of strings, found \(v.typeName)")
            return nil
        }
        var out: [String] = []
        for item in items {
            guard case .string(let s, _) = item else {
                problem("\(section).\(key)", item.line, "expected an array of strings, found \(item.typeName) in it")
                return nil
            }
            out.append(s)
        }
        return (out, line)
    }

    mutating func path(_ s: String) -> String {
        let expanded = HomeFolder.expand(s)
        return expanded.hasPrefix("/") ? expanded : ((base as NSString).appendingPathComponent(expanded) as NSString).standardizingPath
    }

    /// Ports from `channels = N` or `ports = [...]`.
    mutating func ports(_ t: TOMLTable, _ section: String, prefix: String, default defaultPorts: [String]) -> [String] {
        let channels = integer(t, "channels", section, Limits.channels)
        let list = strings(t, "ports", section)
        if t["channels"] != nil && t["ports"] != nil {
            problem("\(section).ports", t.keyLines["ports"], "give either 'channels' or 'ports', not both")
        }
        if let (names, line) = list {
            if names.isEmpty { problem("\(section).ports", line, "at least one port") }
            var seen = Set<String>()
            for n in names {
                if n.isEmpty || n.contains(":") || n.utf8.count > 200 {
                    problem("\(section).ports", line, "bad port name '\(n)' (empty, too long, or contains ':')")
                }
                if !seen.insert(n).inserted { problem("\(section).ports", line, "duplicate port '\(n)'") }
            }
            return names
        }
        if let channels { return (1...channels).map { "\(prefix)_\($0)" } }
        return defaultPorts
    }

    /// `midi_ports = [...]`: MIDI port names, unique and apart from the audio ports (at most 16).
    mutating func midiPorts(_ t: TOMLTable, _ section: String, audio: [String]) -> [String]? {
        guard let (names, line) = strings(t, "midi_ports", section) else { return nil }
        var seen = Set(audio)
        for n in names {
            if n.isEmpty || n.contains(":") || n.utf8.count > 200 {
                problem("\(section).midi_ports", line, "bad port name '\(n)' (empty, too long, or contains ':')")
            }
            if !seen.insert(n).inserted { problem("\(section).midi_ports", line, "duplicate port '\(n)'") }
        }
        if names.count > 16 { problem("\(section).midi_ports", line, "at most 16 MIDI ports") }
        return names
    }

    mutating func client(_ t: TOMLTable, _ section: String, default name: String) -> String {
        guard let (c, line) = string(t, "client", section) else { return name }
        if let why = Limits.nameProblem(c, what: "the client name", bytes: Limits.clientNameBytes) {
            problem("\(section).client", line, why)
        } else if c.contains(":") {
            problem("\(section).client", line, "the client name must not contain ':'")
        }
        return c
    }

    static func size(_ s: String) -> Int? {
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        let upper = s.uppercased().trimmingCharacters(in: .whitespaces)
        if let last = upper.last, let unit = units[last], let n = Double(upper.dropLast()), n > 0 {
            let bytes = n * Double(unit)
            return bytes.isFinite && bytes < 0x1p62 ? Int(bytes) : nil   // "1e300G" is not a size, not a trap
        }
        return Int(upper)
    }

    /// Seconds since midnight for "HH:MM" or "HH:MM:SS".
    static func clock(_ s: String) -> Int? {
        let fields = s.split(separator: ":", omittingEmptySubsequences: false)
        let parts = fields.compactMap { Int($0) }
        guard parts.count == fields.count, parts.count == 2 || parts.count == 3 else { return nil }
        let h = parts[0], m = parts[1], sec = parts.count == 3 ? parts[2] : 0
        guard (0..<24).contains(h), (0..<60).contains(m), (0..<60).contains(sec) else { return nil }
        return h * 3600 + m * 60 + sec
    }
}

public extension Preset {
    /// Seconds since local midnight of a "HH:MM[:SS]" string.
    static func secondsOfDay(_ clock: String) -> Int? { Validator.clock(clock) }
    /// Bytes of a size like "2G".
    static func bytes(_ size: String) -> Int? { Validator.size(size) }

    /// The next moment (today, or tomorrow if it has passed) that is `secondsOfDay` after local midnight.
    static func nextOccurrence(ofSecondsOfDay secondsOfDay: Int, after now: Date = Date()) -> Date {
        let today = Calendar.current.startOfDay(for: now).addingTimeInterval(Double(secondsOfDay))
        return today > now ? today : today.addingTimeInterval(86400)
    }
}
