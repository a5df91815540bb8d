extension Validator {
    /// `[[SECTION.plugins]]`: uri, name, preset, bypass, controls = { symbol = value, ... }.
    mutating func plugins(_ t: TOMLTable, _ section: String) -> ([PluginSpec], [PluginSource]) {
        guard let v = t["plugins"] else { return ([], []) }
        let key = "\(section).plugins"
        guard case .array(let items, _) = v else {
            problem(key, v.line, "expected [[\(key)]] tables (an array of tables), found \(v.typeName)")
            return ([], [])
        }
        var out: [PluginSpec] = []
        var sources: [PluginSource] = []
        var names = Set<String>()
        if items.count > Limits.pluginsPerChain {
            problem(key, v.line, "\(items.count) plugins; a chain holds at most \(Limits.pluginsPerChain)")
        }
        for item in items {
            guard case .table(let p) = item else {
                problem(key, item.line, "expected [[\(key)]] tables, found \(item.typeName)")
                continue
            }
            unknownKeys(p, ["uri", "name", "preset", "bypass", "controls", "midi_channel", "configure"], section: key)
            guard let (uri, uriLine) = string(p, "uri", key) else {
                if p["uri"] == nil { problem("\(key).uri", p.line, "every [[\(key)]] needs 'uri' (see `tandem plugins`)") }
                continue
            }
            if !PluginSpec.isURI(uri) { problem("\(key).uri", uriLine, "'\(uri)' is not a URI") }
            var spec = PluginSpec(uri: uri)
            var source = PluginSource(key: key, line: p.line == 0 ? nil : p.line, uriLine: uriLine == 0 ? nil : uriLine)
            if let (name, line) = string(p, "name", key) {
                if PluginSpec.isName(name) { spec.name = name } else {
                    problem("\(key).name", line, "bad plugin name '\(name)' (1 to 64 letters, digits, - and _)")
                }
                if names.contains(name) { problem("\(key).name", line, "two plugins in one chain are named '\(name)'") }
            }
            spec.bypass = bool(p, "bypass", key) ?? false
            if let c = p["midi_channel"] {
                if case .integer(let n, _) = c, PluginSpec.midiChannels.contains(n) {
                    spec.midiChannel = n
                } else {
                    problem("\(key).midi_channel", c.line, "expected a MIDI channel, 1 to 16")
                }
            }
            if let (preset, line) = string(p, "preset", key) {
                if !PluginSpec.isURI(preset) { problem("\(key).preset", line, "'\(preset)' is not a preset URI") }
                spec.preset = preset
                source.presetLine = line == 0 ? nil : line
            }
            if let c = p["controls"] {
                if case .table(let controls) = c {
                    for symbol in controls.keys {
                        if let line = controls.keyLines[symbol] ?? (c.line == 0 ? nil : c.line) {
                            source.controlLines[symbol] = line
                        }
                        switch controls[symbol] {
                        case .integer(let i, _)?: spec.controls.append(.init(symbol: symbol, value: Double(i)))
                        case .float(let f, _)? where f.isFinite: spec.controls.append(.init(symbol: symbol, value: f))
                        case .bool(let b, _)?: spec.controls.append(.init(symbol: symbol, value: b ? 1 : 0))
                        default:
                            problem("\(key).controls.\(symbol)", controls.keyLines[symbol] ?? c.line,
                                    "expected a number for control '\(symbol)'")
                        }
                    }
                } else {
                    problem("\(key).controls", c.line, "expected a table of control values, e.g. controls = { gain = -6.0 }")
                }
            }
            if let c = p["configure"] {
                if case .table(let keys) = c {
                    for name in keys.keys {
                        guard case .string(let value, _)? = keys[name] else {
                            problem("\(key).configure.\(name)", keys.keyLines[name] ?? c.line,
                                    "expected a string for configure key '\(name)', e.g. configure = { polyphony = \"8\" }")
                            continue
                        }
                        if let why = PluginSpec.configureProblem(name, value) {
                            problem("\(key).configure.\(name)", keys.keyLines[name] ?? c.line, why)
                        } else {
                            spec.configure[name] = value
                            if let line = keys.keyLines[name] ?? (c.line == 0 ? nil : c.line) { source.configureLines[name] = line }
                        }
                    }
                } else {
                    problem("\(key).configure", c.line, "expected a table of DSSI configure keys, e.g. configure = { polyphony = \"8\" }")
                }
            }
            names.insert(spec.name)
            out.append(spec)
            sources.append(source)
        }
        return (PluginSpec.uniqueNames(out), sources)
    }
}
