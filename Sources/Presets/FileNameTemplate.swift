import Foundation

/// Turns a template such as `{session}-{take:03}-{date}-{time}` into file names.
///
/// Placeholders: `{session}`, `{take}` (optionally zero-padded: `{take:03}`), `{date}` (YYYYMMDD), `{time}` (HHMMSS),
/// `{channel}` (the port's short name, for stems), `{chunk}` (optionally padded, for rotation). Rotation adds
/// `-{chunk:03}` and stems add `-{channel}` when the template lacks them. The extension comes from the format.
public struct FileNameTemplate: Sendable, Equatable {
    public static let defaultTemplate = "{session}-{take:03}-{date}-{time}"
    public static let placeholders = ["session", "take", "date", "time", "channel", "chunk"]
    public let text: String

    public init(_ text: String) { self.text = text }

    /// Problems with the template (unknown placeholders, unbalanced braces, path separators).
    public func problems() -> [String] {
        var out: [String] = []
        if text.isEmpty { out.append("file template is empty") }
        if text.contains("/") { out.append("file template must not contain '/' (set the directory instead)") }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            out.append("file template contains a control character (NUL, newline, ...)")
        }
        if text.utf8.count > Limits.fileNameBytes { out.append("file template is longer than \(Limits.fileNameBytes) bytes") }
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else {
                out.append("file template has an unclosed '{'")
                break
            }
            let inner = rest[rest.index(after: open)..<close]
            let name = inner.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            if inner.contains(":"), let w = inner.split(separator: ":", maxSplits: 1).last,
               !(Int(w).map { Self.widths.contains($0) } ?? false) {
                out.append("placeholder {\(inner)} has a bad width (a number \(Self.widths.lowerBound) to \(Self.widths.upperBound))")
            }
            if !Self.placeholders.contains(name) {
                out.append("unknown placeholder {\(inner)} in file template (known: "
                           + Self.placeholders.map { "{\($0)}" }.joined(separator: ", ") + ")")
            }
            rest = rest[rest.index(after: close)...]
        }
        return out
    }

    /// Whether the names differ from take to take (the template has `{take}`); without it, a take whose names are
    /// taken gets a `+N` suffix (see `TakeFiles.freeTakeName`).
    public var namesTakes: Bool { text.contains("{take}") || text.contains("{take:") }

    /// Zero-padding widths a placeholder may ask for.
    public static let widths: ClosedRange<Int> = 0...12

    /// A problem when the longest name this template can make (session `session`, the longest of `channels`, take
    /// 99999, chunk 99999) is longer than a file system takes; nil when it fits.
    public func lengthProblem(session: String, channels: [String], fileExtension: String = "rf64") -> String? {
        let longest = channels.max(by: { $0.utf8.count < $1.utf8.count })
        let name = render(Values(session: session, take: 99_999, date: Date(), channel: longest, chunk: 99_999),
                          fileExtension: fileExtension)
        guard name.utf8.count > Limits.fileNameBytes else { return nil }
        return "file names would be \(name.utf8.count) bytes long (at most \(Limits.fileNameBytes)): shorten the "
            + "session name or the template"
    }

    /// The values of one file's name.
    public struct Values: Sendable {
        public var session: String
        public var take: Int
        public var date: Date
        public var channel: String?
        public var chunk: Int?
        public init(session: String, take: Int, date: Date, channel: String? = nil, chunk: Int? = nil) {
            self.session = session
            self.take = take
            self.date = date
            self.channel = channel
            self.chunk = chunk
        }
    }

    /// The file name (no directory) for `values`, with `fileExtension`.
    public func render(_ values: Values, fileExtension: String) -> String {
        var t = text
        if values.channel != nil && !t.contains("{channel") { t += "-{channel}" }
        if values.chunk != nil && !t.contains("{chunk") { t += "-{chunk:03}" }
        var out = ""
        var rest = Substring(t)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += Self.sanitize(String(rest[..<open]))
            let parts = rest[rest.index(after: open)..<close].split(separator: ":", maxSplits: 1)
            let name = parts.first.map(String.init) ?? ""
            let width = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            switch name {
            case "session": out += Self.sanitize(values.session)
            case "take": out += Self.pad(values.take, width)
            case "date": out += Self.stamp(values.date, "yyyyMMdd")
            case "time": out += Self.stamp(values.date, "HHmmss")
            case "channel": out += Self.sanitize(values.channel ?? "")
            case "chunk": out += values.chunk.map { Self.pad($0, width) } ?? ""
            default: out += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        out += Self.sanitize(String(rest))
        return out + "." + fileExtension
    }

    static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        let w = min(width, widths.upperBound)
        return s.count >= w ? s : String(repeating: "0", count: w - s.count) + s
    }

    static func stamp(_ date: Date, _ format: String) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone.current
        f.dateFormat = format
        return f.string(from: date)
    }

    /// Keeps names portable: path separators and control characters become '_'.
    static func sanitize(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { $0 == "/" || $0.value < 0x20 || $0.value == 0x7F ? "_" : $0 }))
    }
}
