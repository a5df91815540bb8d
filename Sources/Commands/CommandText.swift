/// What every text a command carries (a name, a label, a path, a port, a map's line, a control's value in words) must
/// be, on every surface (OSC, `tandem ctl`, HTTP, control maps): one line of printable text, of bounded length.
/// Such a text ends up in log lines, reports, event messages and file names; a newline or an escape sequence in it
/// would let whoever sends it write a line of their own into the log (log forging), and a text without bound would
/// swell every report it is kept in.
///
/// Pure; any thread.
public enum CommandText {
    /// The most bytes (UTF-8) of a name or a value's words.
    public static let maxBytes = 1024
    /// The most bytes of a path (Linux's PATH_MAX).
    public static let maxPathBytes = 4096
    /// The most bytes of a marker's label.
    public static let maxLabelBytes = 256

    /// What is wrong with `text` as `what` ("LABEL"), in words; nil when nothing is. Refused: control characters
    /// (C0, DEL, C1: newlines, escapes, NUL), the line and paragraph separators, and the bidirectional overrides
    /// and isolates (which make a log line read otherwise than it is written); more than `maxBytes` bytes.
    public static func problem(_ text: String, what: String, maxBytes: Int = maxBytes) -> String? {
        let bytes = text.utf8.count
        if bytes > maxBytes { return "\(what) has \(bytes) bytes; at most \(maxBytes)" }
        for scalar in text.unicodeScalars where isRefused(scalar) {
            return "\(what) holds the control character U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(4)); "
                + "names, labels and paths are one line of printable text"
        }
        return nil
    }

    /// What is wrong with `name` as a preset's name (the file NAME.toml in the session folder); nil when nothing is.
    /// Refused besides what `problem` refuses: a blank name, one that starts or ends with a space, `.` and `..`, one
    /// that starts with a dot (a hidden file, or `..toml`), one with a `/`.
    public static func presetNameProblem(_ name: String) -> String? {
        if let why = problem(name, what: "NAME") { return why }
        let stem = name.hasSuffix(".toml") ? String(name.dropLast(5)) : name
        if stem.allSatisfy(\.isWhitespace) { return "the preset name '\(name)' is blank" }
        if stem.first?.isWhitespace == true || stem.last?.isWhitespace == true {
            return "the preset name '\(name)' starts or ends with a space"
        }
        if name.hasPrefix(".") { return "the preset name '\(name)' starts with a dot (a hidden file, or a folder's name)" }
        if name.contains("/") { return "the preset name '\(name)' holds a '/' (it names a file in the session folder)" }
        return nil
    }

    static func isRefused(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

extension Command {
    /// The first text of this command that breaks `CommandText`'s rules, as the error every surface gives; nil when
    /// none does. `parse` checks every text already; a surface that builds a command itself (HTTP, from a JSON body)
    /// checks here.
    public var textProblem: CommandError? {
        guard let spec = CommandSpec.named[address], !spec.parameters.isEmpty else { return nil }
        for (i, value) in values.enumerated() {
            guard case .text(let text) = value else { continue }
            let p = spec.parameters[min(i, spec.parameters.count - 1)]
            if let why = CommandText.problem(text, what: p.name, maxBytes: p.maxBytes) { return CommandError(why) }
        }
        return nil
    }
}

private extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
