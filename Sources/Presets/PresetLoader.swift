import Foundation

/// Reads and validates presets. Pure: touches no JACK server, only checks that named files and folders exist.
///
/// Every problem is collected (file, line, key, what is allowed); nothing stops at the first one.
public enum PresetLoader {
    /// Loads `path`, applies `overrides` ("recorder.format=flac", the command line's `--set`), validates.
    public static func load(path: String, overrides: [String] = []) -> (preset: Preset?, problems: [PresetProblem]) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            var isDir: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
            let why = !exists ? "no such file" : isDir.boolValue ? "is a directory" : "cannot be read as UTF-8 text"
            return (nil, [PresetProblem(file: path, line: nil, key: "", message: why)])
        }
        let absolute = path.hasPrefix("/") ? path
            : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
        let base = (((absolute as NSString).deletingLastPathComponent) as NSString).standardizingPath
        var result = parse(text, file: path, baseDirectory: base, overrides: overrides)
        result.preset?.path = path
        // The file's name names the session unless [session] gives a name (the word "name" elsewhere does not count).
        if result.preset != nil && result.preset?.session.name == "session" && !sessionNameGiven(text, overrides: overrides) {
            result.preset?.session.name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        }
        return result
    }

    /// Whether the preset (or an override) names the session itself.
    static func sessionNameGiven(_ text: String, overrides: [String]) -> Bool {
        if overrides.contains(where: { $0.split(separator: "=", maxSplits: 1).first?
            .trimmingCharacters(in: .whitespaces) == "session.name" }) { return true }
        guard let root = try? TOMLParser.parse(text), case .table(let session)? = root["session"] else { return false }
        return session["name"] != nil
    }

    /// Parses preset text. Relative paths are resolved against `baseDirectory`.
    public static func parse(_ text: String, file: String, baseDirectory: String,
                             overrides: [String] = []) -> (preset: Preset?, problems: [PresetProblem]) {
        var root: TOMLTable
        do {
            root = try TOMLParser.parse(text)
        } catch {
            return (nil, [PresetProblem(file: file, line: error.line, key: "", message: error.message)])
        }
        var problems: [PresetProblem] = []
        for o in overrides {
            if let p = applyOverride(o, to: &root) { problems.append(PresetProblem(file: "--set", line: nil, key: o, message: p)) }
        }
        var v = Validator(file: file, base: baseDirectory)
        let preset = v.preset(root)
        // A problem with a value `--set` gave is the option's, not the file's (it was blamed on the file's line 1).
        let overridden = Set(overrides.compactMap { o in
            o.firstIndex(of: "=").map { o[..<$0].trimmingCharacters(in: .whitespaces) }
        })
        problems += v.problems.map { p in
            overridden.contains(p.key) ? PresetProblem(file: "--set", line: nil, key: p.key, message: p.message) : p
        }
        return (problems.isEmpty ? preset : nil, problems)
    }

    /// Sets a dotted key from "a.b=value" (the value is read as TOML, or as a plain string).
    static func applyOverride(_ text: String, to root: inout TOMLTable) -> String? {
        guard let eq = text.firstIndex(of: "=") else { return "expected KEY=VALUE" }
        let key = String(text[..<eq]).trimmingCharacters(in: .whitespaces)
        let raw = String(text[text.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
        let path = key.split(separator: ".").map(String.init)
        guard path.count == 2 else { return "expected SECTION.KEY=VALUE, e.g. recorder.format=flac" }
        let value: TOMLValue
        if let parsed = try? TOMLParser.parse("v = \(raw)"), let v = parsed["v"] {
            value = v
        } else {
            value = .string(raw, line: 0)
        }
        var section: TOMLTable
        switch root[path[0]] {
        case .table(let t): section = t
        case nil: section = TOMLTable(line: 0)
        default: return "'\(path[0])' is not a table"
        }
        section.replace(path[1], value)
        root.replace(path[0], .table(section))
        return nil
    }
}

extension TOMLTable {
    /// Sets or replaces a key (for overrides).
    mutating func replace(_ key: String, _ value: TOMLValue) {
        set(key, value, line: keyLines[key] ?? 0, replacing: true)
    }
}

/// Walks the parsed tree, builds a `Preset` and collects every problem.
struct Validator {
    let file: String
    let base: String
    var problems: [PresetProblem] = []

    init(file: String, base: String) {
        self.file = file
        self.base = base
    }

    mutating func problem(_ key: String, _ line: Int?, _ message: String) {
        problems.append(PresetProblem(file: file, line: line == 0 ? nil : line, key: key, message: message))
    }

    /// Reports keys that are not in `known`, with the nearest known key as a suggestion.
    mutating func unknownKeys(_ t: TOMLTable, _ known: [String], section: String) {
        for k in t.keys where !known.contains(k) {
            let where_ = section.isEmpty ? "at the top level" : "in [\(section)]"
            var message = "unknown key '\(k)' \(where_)"
            if let near = Self.nearest(k, known) { message += " (did you mean '\(near)'?)" }
            message += "; known: " + known.joined(separator: ", ")
            problem(section.isEmpty ? k : "\(section).\(k)", t.keyLines[k], message)
        }
    }

    static func nearest(_ word: String, _ candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word.lowercased(), $0)) }.min { $0.1 < $1.1 }
        guard let (best, d) = scored, d <= max(2, word.count / 3) else { return nil }
        return best
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var prev = row[0]
            row[0] = i
            for j in 1...max(1, b.count) where !b.isEmpty {
                let old = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1))
                prev = old
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
}
