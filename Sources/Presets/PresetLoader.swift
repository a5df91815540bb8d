import Foundation
import SoundFile

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
        problems += v.problems
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

    // MARK: Typed reads

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
        let expanded = (s as NSString).expandingTildeInPath
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

    /// Why no file can be made in `directory` (nil: one can). A real probe: a file is created and removed, because
    /// `access(W_OK)` says yes to root in folders such as /proc where no file can be made.
    static func cannotWrite(in directory: String) -> String? {
        let probe = (directory as NSString).appendingPathComponent(".tandem-check-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        close(fd)
        unlink(probe)
        return nil
    }

    // MARK: Sections

    mutating func preset(_ root: TOMLTable) -> Preset {
        unknownKeys(root, ["session", "recorder", "player", "rack", "connect", "map", "render"], section: "")
        var p = Preset()
        if let v = root["session"] {
            if case .table(let t) = v { p.session = session(t) } else {
                problem("session", v.line, "expected a table [session], found \(v.typeName)")
            }
        }
        if let v = root["recorder"] {
            if case .table(let t) = v { p.recorder = recorder(t) } else {
                problem("recorder", v.line, "expected a table [recorder], found \(v.typeName)")
            }
        }
        if let v = root["player"] {
            if case .table(let t) = v { p.player = player(t) } else {
                problem("player", v.line, "expected a table [player], found \(v.typeName)")
            }
        }
        if let v = root["rack"] {
            if case .array(let items, _) = v {
                for item in items {
                    guard case .table(let t) = item else {
                        problem("rack", item.line, "expected [[rack]] tables, found \(item.typeName)")
                        continue
                    }
                    p.racks.append(rack(t, index: p.racks.count))
                }
            } else {
                problem("rack", v.line, "expected [[rack]] tables (an array of tables), found \(v.typeName)")
            }
        }
        if let v = root["connect"] {
            if case .array(let items, _) = v {
                for item in items {
                    guard case .table(let t) = item else {
                        problem("connect", item.line, "expected [[connect]] tables, found \(item.typeName)")
                        continue
                    }
                    if let rule = connection(t) { p.connections.append(rule) }
                }
            } else {
                problem("connect", v.line, "expected [[connect]] tables (an array of tables), found \(v.typeName)")
            }
        }
        if p.recorder == nil && p.player == nil && p.racks.isEmpty && root["recorder"] == nil && root["player"] == nil
            && root["rack"] == nil {
            problem("", nil, "a preset needs a [recorder] table, a [player] table or a [[rack]] table")
        }
        checkEngineNames(p)
        if let v = root["map"] {
            p.maps = maps(v, preset: p)
            p.giveMappedRacksMIDIInputs()
        }
        if let v = root["render"] {
            if case .table(let t) = v { p.render = render(t, preset: p) } else {
                problem("render", v.line, "expected a table [render], found \(v.typeName)")
            }
        }
        if let r = p.recorder, let why = FileNameTemplate(r.template).lengthProblem(session: p.session.name, channels: r.ports) {
            problem("recorder.template", nil, why)
        }
        if let r = p.recorder, let pl = p.player, r.client == pl.client {
            problem("player.client", nil, "the recorder and the player need different client names (both '\(r.client)')")
        }
        if p.session.exitAfter == .take && p.recorder == nil {
            problem("session.exit_after", nil, "'take' needs a [recorder] table")
        }
        if p.session.exitAfter == .playback && p.player == nil {
            problem("session.exit_after", nil, "'playback' needs a [player] table")
        }
        if p.player?.start == .withRecorder {
            if let r = p.recorder {
                // A level-triggered take begins before the moment it is decided (its pre-roll), and a scheduled
                // one at a window's frame the session does not start the player on: no player can start with them.
                if r.start == .level {
                    problem("player.start", nil, "'with-recorder' cannot follow a recorder with start = \"level\" (a"
                            + " take begins its pre-roll before the trigger decides it); use start = \"immediately\","
                            + " \"armed\" or \"transport\" for the recorder, or another start for the player")
                } else if r.schedule != nil {
                    problem("player.start", nil, "'with-recorder' cannot follow a recorder with a schedule; use"
                            + " another start for the player")
                }
            } else {
                problem("player.start", nil, "'with-recorder' needs a [recorder] table")
            }
        }
        return p
    }

    /// `[[rack]]`: name, client, inputs/outputs (a count or port names), gain, mix, isolate, `[[rack.plugins]]`.
    mutating func rack(_ t: TOMLTable, index: Int) -> RackSection {
        let s = "rack"
        unknownKeys(t, ["name", "client", "inputs", "outputs", "midi_inputs", "midi_outputs", "gain", "mix", "isolate",
                        "plugins"], section: s)
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

    /// Client and rack names must differ across the engines (each is its own JACK client).
    mutating func checkEngineNames(_ p: Preset) {
        var clients: [String: String] = [:]
        if let r = p.recorder { clients[r.client] = "the recorder" }
        if let pl = p.player, clients[pl.client] == nil { clients[pl.client] = "the player" }
        var names = Set<String>()
        for rack in p.racks {
            if !names.insert(rack.name).inserted {
                problem("rack.name", rack.line, "two racks are named '\(rack.name)'")
            }
            if let other = clients[rack.client] {
                problem("rack.client", rack.line, "rack '\(rack.name)' and \(other) need different client names (both '\(rack.client)')")
            } else {
                clients[rack.client] = "rack '\(rack.name)'"
            }
        }
    }

    mutating func session(_ t: TOMLTable) -> SessionSection {
        let s = "session"
        unknownKeys(t, ["name", "server", "directory", "create_directory", "on_server_loss", "on_disk_error", "on_manual_disconnect",
                        "control_port", "metrics_port", "http", "http_origins", "restore_plugins", "save_plugins", "server_wait", "on_plugin_error",
                        "exit_after", "tempo", "meter"], section: s)
        var out = SessionSection()
        out.tempo = number(t, "tempo", s, SessionSection.tempos, unit: " beats per minute")
        if let (text, line) = string(t, "meter", s) {
            if let m = SessionSection.Meter(text) { out.meter = m } else {
                problem("session.meter", line, "'\(text)' is not a meter (beats/unit, e.g. \"4/4\", \"6/8\")")
            }
        }
        if let (name, line) = string(t, "name", s) {
            if let why = Limits.nameProblem(name, what: "the session name", bytes: Limits.sessionNameBytes) {
                problem("session.name", line, why)
            }
            out.name = name
        }
        if let (server, line) = string(t, "server", s) {
            if server.isEmpty { problem("session.server", line, "must not be empty (leave it out for the default server)") }
            else if let why = Limits.nameProblem(server, what: "the server name", bytes: Limits.serverNameBytes) {
                problem("session.server", line, why)
            }
            out.server = server
        }
        out.createDirectory = bool(t, "create_directory", s) ?? false
        if let (dir, line) = string(t, "directory", s) {
            let resolved = path(dir)
            var isDir: ObjCBool = false
            if !FileManager.default.fileExists(atPath: resolved, isDirectory: &isDir) {
                if out.createDirectory {
                    var ancestor = (resolved as NSString).deletingLastPathComponent
                    while !ancestor.isEmpty && ancestor != "/" && !FileManager.default.fileExists(atPath: ancestor) {
                        ancestor = (ancestor as NSString).deletingLastPathComponent
                    }
                    if let why = Self.cannotWrite(in: ancestor.isEmpty ? "/" : ancestor) {
                        problem("session.directory", line, "'\(resolved)' cannot be created in '\(ancestor)': \(why)")
                    }
                } else {
                    problem("session.directory", line, "'\(resolved)' does not exist (create it, or set create_directory = true)")
                }
            } else if !isDir.boolValue {
                problem("session.directory", line, "'\(resolved)' is not a directory")
            } else if let why = Self.cannotWrite(in: resolved) {
                problem("session.directory", line, "'\(resolved)' cannot hold takes: \(why)")
            }
            out.directory = resolved
        } else {
            out.directory = base
        }
        out.onServerLoss = choice(t, "on_server_loss", s, ServerLossPolicy.self) ?? .resume
        out.onDiskError = choice(t, "on_disk_error", s, DiskErrorPolicy.self) ?? .stop
        out.onManualDisconnect = choice(t, "on_manual_disconnect", s, DisconnectPolicy.self) ?? .respect
        out.controlPort = integer(t, "control_port", s, Limits.controlPort)
        out.metricsPort = integer(t, "metrics_port", s, Limits.controlPort)
        if let (text, line) = string(t, "http", s) {
            if let address = HTTPAddress(text) { out.http = address } else {
                problem("session.http", line, "'\(text)' is not \(HTTPAddress.form)")
            }
        }
        if let (origins, line) = strings(t, "http_origins", s) {
            for o in origins where !HTTPAddress.isOrigin(o) {
                problem("session.http_origins", line, "'\(o)' is not an origin (scheme://host[:port], e.g. \"http://studio.local:8080\")")
            }
            if out.http == nil && problems.allSatisfy({ $0.key != "session.http" }) {
                problem("session.http_origins", line, "origins need the HTTP API: set session.http too")
            }
            out.httpOrigins = origins
        }
        out.restorePlugins = bool(t, "restore_plugins", s) ?? true
        out.savePlugins = bool(t, "save_plugins", s) ?? true
        out.serverWaitSeconds = number(t, "server_wait", s, Limits.serverWaitSeconds, unit: " seconds") ?? 60
        if t["server_wait"] != nil && out.onServerLoss == .stop {
            problem("session.server_wait", t.keyLines["server_wait"], "waiting for the server needs on_server_loss = \"resume\"")
        }
        out.onPluginError = choice(t, "on_plugin_error", s, PluginErrorPolicy.self) ?? .fail
        out.exitAfter = choice(t, "exit_after", s, SessionExit.self)
        return out
    }

    mutating func recorder(_ t: TOMLTable) -> RecorderSection {
        let s = "recorder"
        unknownKeys(t, ["client", "channels", "ports", "format", "sample", "quality", "template", "stems", "rotate",
                        "rotate_size", "preroll", "duration", "stop_at", "start", "ring", "plugins", "dry",
                        "trigger", "schedule", "rotate_on_clock", "retention", "midi_ports"],
                    section: s)
        var r = RecorderSection()
        r.client = client(t, s, default: r.client)
        r.ports = ports(t, s, prefix: "in", default: r.ports)
        r.midiPorts = midiPorts(t, s, audio: r.ports) ?? []
        r.format.container = choice(t, "format", s, Container.self) ?? .wav
        r.format.sample = choice(t, "sample", s, SampleFormat.self) ?? .float32
        r.format.quality = number(t, "quality", s, Limits.quality)
        if r.format.container == .flac && r.format.sample == .float32 && t["format"] != nil {
            problem("recorder.sample", t.keyLines["sample"] ?? t.keyLines["format"],
                    "FLAC stores integers only: use int24 or int16")
        }
        if let (template, line) = string(t, "template", s) {
            for p in FileNameTemplate(template).problems() { problem("recorder.template", line, p) }
            r.template = template
        }
        r.stems = bool(t, "stems", s) ?? false
        r.rotateSeconds = number(t, "rotate", s, Limits.rotateSeconds, unit: " seconds")
        if let v = t["rotate_size"] {
            switch v {
            case .integer(let i, let line):
                if !Limits.rotateBytes.contains(i) { problem("recorder.rotate_size", line, "\(i) bytes is out of range (\(Limits.describeSize(Limits.rotateBytes)))") }
                r.rotateBytes = i
            case .string(let text, let line):
                if let bytes = Self.size(text), Limits.rotateBytes.contains(bytes) { r.rotateBytes = bytes } else {
                    problem("recorder.rotate_size", line, "'\(text)' is not a size of \(Limits.describeSize(Limits.rotateBytes)) (e.g. \"500M\", \"2G\")")
                }
            default: problem("recorder.rotate_size", v.line, "expected a size like \"2G\" or a byte count, found \(v.typeName)")
            }
        }
        r.prerollSeconds = number(t, "preroll", s, Limits.prerollSeconds, unit: " seconds") ?? 0
        r.maxDurationSeconds = number(t, "duration", s, Limits.durationSeconds, unit: " seconds")
        if let (stop, line) = string(t, "stop_at", s) {
            if Self.clock(stop) == nil { problem("recorder.stop_at", line, "'\(stop)' is not a time of day (HH:MM or HH:MM:SS)") }
            r.stopAt = stop
        }
        r.start = choice(t, "start", s, RecorderStart.self) ?? .immediately
        r.ringSeconds = number(t, "ring", s, Limits.recorderRingSeconds, unit: " seconds") ?? 4
        (r.plugins, r.pluginSources) = plugins(t, s)
        r.recordDry = bool(t, "dry", s) ?? false
        if r.recordDry && r.plugins.isEmpty {
            problem("recorder.dry", t.keyLines["dry"], "'dry' records the input beside the plugin chain's output: it needs [[recorder.plugins]]")
        }
        trigger(t, &r)
        schedule(t, &r)
        rotateOnClock(t, &r)
        retention(t, &r)
        return r
    }

    mutating func player(_ t: TOMLTable) -> PlayerSection {
        let s = "player"
        unknownKeys(t, ["client", "channels", "ports", "queue", "loop", "gain", "map", "quality", "seek", "seek_frame",
                        "start", "start_at", "tail", "ring", "plugins", "midi_ports"], section: s)
        var p = PlayerSection()
        p.client = client(t, s, default: p.client)
        p.ports = ports(t, s, prefix: "out", default: p.ports)
        p.midiPorts = midiPorts(t, s, audio: p.ports)
        if let (files, line) = strings(t, "queue", s) {
            p.queue = files.map { path($0) }
            for f in p.queue {
                var isDir: ObjCBool = false
                if !FileManager.default.fileExists(atPath: f, isDirectory: &isDir) {
                    problem("player.queue", line, "missing file '\(f)'")
                } else if isDir.boolValue {
                    problem("player.queue", line, "'\(f)' is a directory, not an audio file")
                }
            }
        }
        p.loop = choice(t, "loop", s, LoopMode.self) ?? .none
        p.gainDB = number(t, "gain", s, Limits.gainDB, unit: " dB") ?? 0
        if let v = t["map"] {
            if case .array(let items, let line) = v {
                var map: [Int] = []
                for item in items {
                    if case .integer(let i, _) = item, (0...256).contains(i) { map.append(i) } else {
                        problem("player.map", item.line, "map entries are file channels 1 to 256, or 0 for silence")
                    }
                }
                if map.count == items.count {
                    if map.count != p.ports.count {
                        problem("player.map", line, "\(map.count) entries for \(p.ports.count) ports (one per port)")
                    }
                    p.channelMap = map
                }
            } else {
                problem("player.map", v.line, "expected an array of integers, found \(v.typeName)")
            }
        }
        p.quality = choice(t, "quality", s, ResampleQuality.self) ?? .high
        p.seekSeconds = number(t, "seek", s, Limits.seekSeconds, unit: " seconds") ?? 0
        p.seekFrame = integer(t, "seek_frame", s, Limits.seekFrames)
        if t["seek"] != nil && t["seek_frame"] != nil {
            problem("player.seek_frame", t.keyLines["seek_frame"], "give either seek or seek_frame")
        }
        p.start = choice(t, "start", s, PlayerStart.self) ?? .immediately
        if let (at, line) = string(t, "start_at", s) {
            if Self.clock(at) == nil { problem("player.start_at", line, "'\(at)' is not a time of day (HH:MM or HH:MM:SS)") }
            if p.start != .immediately {
                problem("player.start_at", line, "a start time needs start = \"immediately\" (the player is cued until then)")
            }
            p.startAt = at
        }
        p.tailSeconds = number(t, "tail", s, Limits.tailSeconds, unit: " seconds") ?? 2
        p.ringSeconds = number(t, "ring", s, Limits.playerRingSeconds, unit: " seconds") ?? 2
        (p.plugins, p.pluginSources) = plugins(t, s)
        return p
    }

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
            unknownKeys(p, ["uri", "name", "preset", "bypass", "controls", "midi_channel"], section: key)
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
            names.insert(spec.name)
            out.append(spec)
            sources.append(source)
        }
        return (PluginSpec.uniqueNames(out), sources)
    }

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
