// `[[connect]]` (docs/PRESETS.md).
extension Validator {
    mutating func connection(_ t: TOMLTable) -> ConnectionRule? {
        let s = "connect"
        unknownKeys(t, ["from", "to", "mode"], section: s)
        var ok = true
        var patterns: [PortPattern] = []
        for key in ["from", "to"] {
            guard let (text, line) = string(t, key, s) else {
                if t[key] == nil { problem("connect.\(key)", t.line, "every [[connect]] needs '\(key)'") }
                ok = false
                continue
            }
            let pattern = PortPattern(text)
            if let why = pattern.problem {
                problem("connect.\(key)", line, why)
                ok = false
            }
            patterns.append(pattern)
        }
        let mode = choice(t, "mode", s, PairingMode.self) ?? .pairs
        guard ok, patterns.count == 2 else { return nil }
        return ConnectionRule(from: patterns[0], to: patterns[1], mode: mode, line: t.line)
    }
}
