extension Validator {
    /// `[[rack]]`: name, client, inputs/outputs (a count or port names), gain, mix, isolate, `[[rack.plugins]]`.
    mutating func rack(_ t: TOMLTable, index: Int) -> RackSection {
        let s = "rack"
        unknownKeys(t, ["name", "client", "inputs", "outputs", "midi_inputs", "midi_outputs", "gain", "mix", "isolate",
                        "plugins", "loudness"], section: s)
        var r = RackSection()
        r.line = t.line
        r.name = "rack\(index + 1)"
        if let (name, line) = string(t, "name", s) {
            if let why = Limits.nameProblem(name, what: "the rack name", bytes: Limits.clientNameBytes) {
                problem("rack.name", line, why)
            } else if name.contains(":") || name.contains(" ") {
                problem("rack.name", line, "the rack name must not contain ':' or spaces (OSC addresses name it)")
            }
            r.name = name
        }
        r.client = client(t, s, default: r.name)
        r.inputs = portCountOrNames(t, "inputs", s, prefix: "in", allowNone: true)
        r.outputs = portCountOrNames(t, "outputs", s, prefix: "out")
        r.midiInputs = portCountOrNames(t, "midi_inputs", s, prefix: "midi_in", allowNone: true).map(Self.midiNames)
        r.midiOutputs = portCountOrNames(t, "midi_outputs", s, prefix: "midi_out", allowNone: true).map(Self.midiNames)
        let audio = Set((r.inputs ?? []) + (r.outputs ?? []))
        for name in (r.midiInputs ?? []) + (r.midiOutputs ?? []) where audio.contains(name) {
            problem("rack.midi_inputs", t.line, "rack '\(r.name)': port '\(name)' is both an audio and a MIDI port")
        }
        if !Set(r.midiInputs ?? []).isDisjoint(with: r.midiOutputs ?? []) {
            problem("rack.midi_outputs", t.line, "rack '\(r.name)': a MIDI input and a MIDI output have the same name")
        }
        r.gainDB = number(t, "gain", s, Limits.gainDB, unit: " dB") ?? 0
        r.mix = number(t, "mix", s, Limits.mix) ?? 1
        r.isolate = bool(t, "isolate", s)
        switch bool(t, "loudness", s) {
        case true?: r.loudness = true
        case false?: r.loudnessOff = true
        case nil: break
        }
        (r.plugins, r.pluginSources) = plugins(t, s)
        if r.plugins.isEmpty {
            problem("rack.plugins", t.line, "rack '\(r.name)' has no [[rack.plugins]]: a rack runs a plugin chain")
        }
        return r
    }

    /// A single MIDI port given as a count is `midi_in` / `midi_out`, not `midi_in_1`.
    static func midiNames(_ names: [String]) -> [String] {
        names == ["midi_in_1"] ? ["midi_in"] : names == ["midi_out_1"] ? ["midi_out"] : names
    }

    /// A port list given as a count (`2`: `PREFIX_1`, `PREFIX_2`) or as names. `allowNone`: 0 and `[]` mean no
    /// port (a rack's audio inputs when its chain starts with an instrument; its MIDI ports).
    mutating func portCountOrNames(_ t: TOMLTable, _ key: String, _ section: String, prefix: String,
                                   allowNone: Bool = false) -> [String]? {
        guard let v = t[key] else { return nil }
        switch v {
        case .integer(0, _) where allowNone:
            return []
        case .integer(let n, let line):
            guard Limits.channels.contains(n) else {
                problem("\(section).\(key)", line, "\(n) ports is out of range (1 to \(Limits.channels.upperBound))")
                return nil
            }
            return (1...n).map { "\(prefix)_\($0)" }
        case .array:
            guard let (names, line) = strings(t, key, section) else { return nil }
            if names.isEmpty && !allowNone { problem("\(section).\(key)", line, "at least one port") }
            var seen = Set<String>()
            for n in names {
                if n.isEmpty || n.contains(":") || n.utf8.count > 200 {
                    problem("\(section).\(key)", line, "bad port name '\(n)' (empty, too long, or contains ':')")
                }
                if !seen.insert(n).inserted { problem("\(section).\(key)", line, "duplicate port '\(n)'") }
            }
            return names
        default:
            problem("\(section).\(key)", v.line, "expected a port count or an array of port names, found \(v.typeName)")
            return nil
        }
    }
}
