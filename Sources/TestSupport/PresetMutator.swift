/// Seeded mutations of preset text (TOML): characters and lines inserted, removed, replaced and duplicated, and
/// values swapped for ones that hurt (huge, negative, NaN, infinite, 1e15, empty, NUL-holding and megabyte strings,
/// system folders, wrong types, CRLF line endings). The same seed gives the same mutations.
public struct PresetMutator {
    public var random: SeededRandom
    /// Mostly one or two values replaced, seldom a character or line: presets that still parse, so that what the
    /// validator and the engine think of a value is what gets compared.
    public var valuesFirst: Bool

    public init(seed: UInt64, valuesFirst: Bool = false) {
        random = SeededRandom(seed: seed)
        self.valuesFirst = valuesFirst
    }

    static let alphabet = Array("[]{}=\"',.#\n \t0123456789abcdefghijklmnopqrstuvwxyz_-:/*\\é")

    /// Values put in place of a value (or in front of one).
    public static let hostileValues = [
        "99999", "-1", "\"\"", "[]", "{}", "1e400", "true", "0", "1e15", "-1e15", "1.9e14", "1e-300", "nan", "inf", "-inf",
        "9223372036854775807", "9223372036854775808", "-9223372036854775809", "0x7fffffff", "\"\\u0000\"", "\"a\\u0000b\"",
        "\"/proc\"", "\"/nonexistent\"", "\"..\"", "\"{take}\"", "\"{chunk:999999}\"",
        "\"a/b\"", "\" \"", "[\"\"]", "[1, \"a\"]", "{ a = 1 }", "\"http://example.org/no-such-plugin\"", "65536", "1023",
        "256", "257", "0.01", "601", "60.0001", "24.0001", "-120.0001", "\"" + String(repeating: "n", count: 30_000) + "\"",
    ]

    /// Numbers that are valid somewhere, at a limit, just past one, or absurd.
    public static let numbers = [
        "0", "1", "2", "-1", "0.5", "0.01", "0.1", "1e15", "-1e15", "1.9e14", "1e-300", "99999", "9223372036854775807",
        "9223372036854775808", "256", "257", "600", "601", "60.0001", "24", "24.0001", "-120", "-120.0001", "65535",
        "65536", "1023", "1024", "3600", "86400", "nan", "inf", "-inf", "1e400", "-0.0", "4.5", "32", "0x10",
    ]

    /// Strings that are valid somewhere, plausible elsewhere, or hostile.
    public static let strings = [
        "\"\"", "\" \"", "\"\\u0000\"", "\"a\\u0000b\"", "\"/proc\"", "\"/nonexistent\"", "\"..\"", "\"{take}\"",
        "\"{chunk:999999}\"", "\"{session}/{take}\"", "\"a/b\"", "\"pf-rec\"", "\"pf-play\"", "\"flac\"", "\"ogg\"",
        "\"opus\"", "\"mp3\"", "\"rf64\"", "\"int16\"", "\"int24\"", "\"all\"", "\"none\"", "\"item\"", "\"armed\"",
        "\"transport\"", "\"command\"", "\"with-recorder\"", "\"resume\"", "\"continue\"", "\"repair\"", "\"respect\"",
        "\"system:capture_*\"", "\"nothing:*\"", "\"500M\"", "\"1K\"", "\"64K\"", "\"23:59\"", "\"25:61\"", "\"very-high\"",
        "\"low\"", "\"http://example.org/no-such-plugin\"", "\"http://plugin.org.uk/swh-plugins/delay_n\"",
        "\"" + String(repeating: "n", count: 30_000) + "\"",
    ]

    /// One to four mutations of `text`.
    public mutating func mutate(_ text: String) -> String {
        var chars = Array(text)
        let rounds = valuesFirst ? (random.chance(0.7) ? 1 : 2) : 1 + random.below(4)
        for _ in 0..<rounds {
            if valuesFirst && random.chance(0.8) {
                chars = Array(replaceValue(String(chars)))
                continue
            }
            switch random.below(9) {
            case 0 where !chars.isEmpty: chars.remove(at: random.below(chars.count))
            case 1: chars.insert(random.pick(Self.alphabet), at: random.below(chars.count + 1))
            case 2 where !chars.isEmpty: chars[random.below(chars.count)] = random.pick(Self.alphabet)
            case 3:
                var lines = String(chars).split(separator: "\n", omittingEmptySubsequences: false)
                if !lines.isEmpty { lines.insert(lines[random.below(lines.count)], at: random.below(lines.count)) }
                chars = Array(lines.joined(separator: "\n"))
            case 4:
                var lines = String(chars).split(separator: "\n", omittingEmptySubsequences: false)
                if !lines.isEmpty { lines.remove(at: random.below(lines.count)) }
                chars = Array(lines.joined(separator: "\n"))
            case 5, 6, 7:
                chars = Array(replaceValue(String(chars)))
            default:
                if random.chance(0.5) {
                    chars = Array(String(chars).replacingOccurrences(of: "\n", with: "\r\n"))
                } else if let eq = chars.firstIndex(of: "=") {
                    chars.insert(contentsOf: Array(random.pick(Self.hostileValues)), at: min(chars.count, eq + 2))
                }
            }
        }
        return String(chars)
    }

    /// The value of one `key = value` line replaced by a hostile one.
    mutating func replaceValue(_ text: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let assignments = lines.indices.filter { lines[$0].contains(" = ") && !lines[$0].hasPrefix("#") }
        guard !assignments.isEmpty else { return text }
        let i = random.pick(assignments)
        let parts = lines[i].components(separatedBy: " = ")
        let key = parts[0]
        let old = parts.dropFirst().joined(separator: " = ")
        // Mostly a value of the same kind (so the preset still parses and the value itself is judged).
        let value: String
        if random.chance(0.8) && old.hasPrefix("\"") {
            value = random.pick(Self.strings)
        } else if random.chance(0.8) && old.first.map({ $0.isNumber || $0 == "-" }) == true {
            value = random.pick(Self.numbers)
        } else {
            value = random.pick(Self.hostileValues + Self.numbers + Self.strings)
        }
        lines[i] = key + " = " + value
        return lines.joined(separator: "\n")
    }
}
