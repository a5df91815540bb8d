import Foundation
import SoundFile

/// Writes a preset back as TOML the loader reads to the same value: the running setup saved as a file (over OSC, or
/// by a session manager), which, applied again, changes nothing. Keys at their defaults are left out, so a saved file
/// reads like one a person wrote.
///
/// Threads: pure; any thread.
public extension Preset {
    /// The preset as TOML. Paths are written absolute (as the loader resolved them).
    func toml() -> String {
        var out = TOMLText()
        let d = SessionSection()
        out.table("session")
        out.string("name", session.name)
        if let server = session.server { out.string("server", server) }
        out.string("directory", session.directory)
        if session.createDirectory != d.createDirectory { out.bool("create_directory", session.createDirectory) }
        if session.onServerLoss != d.onServerLoss { out.raw("on_server_loss", session.onServerLoss.rawValue) }
        if session.onDiskError != d.onDiskError { out.raw("on_disk_error", session.onDiskError.rawValue) }
        if session.onManualDisconnect != d.onManualDisconnect {
            out.raw("on_manual_disconnect", session.onManualDisconnect.rawValue)
        }
        if let port = session.controlPort { out.integer("control_port", port) }
        else if session.controlPortAuto { out.string("control_port", "auto") }
        if let port = session.metricsPort { out.integer("metrics_port", port) }
        if let http = session.http { out.string("http", http.description) }
        if !session.httpOrigins.isEmpty { out.strings("http_origins", session.httpOrigins) }
        if session.restorePlugins != d.restorePlugins { out.bool("restore_plugins", session.restorePlugins) }
        if let tempo = session.tempo { out.number("tempo", tempo) }
        if session.meter != d.meter { out.string("meter", session.meter.description) }
        if session.savePlugins != d.savePlugins { out.bool("save_plugins", session.savePlugins) }
        if session.onServerLoss == .resume && session.serverWaitSeconds != d.serverWaitSeconds {
            out.number("server_wait", session.serverWaitSeconds)
        }
        if session.onPluginError != d.onPluginError { out.raw("on_plugin_error", session.onPluginError.rawValue) }
        if let exit = session.exitAfter { out.raw("exit_after", exit.rawValue) }
        if session.loudness { out.bool("loudness", true) }

        if let r = recorder {
            let d = RecorderSection()
            out.table("recorder")
            if r.client != d.client { out.string("client", r.client) }
            out.ports(r.ports, prefix: "in")
            if !r.midiPorts.isEmpty { out.line("midi_ports = [" + r.midiPorts.map(TOMLText.quoted).joined(separator: ", ") + "]") }
            if r.format.container != d.format.container { out.raw("format", r.format.container.rawValue) }
            if r.format.sample != d.format.sample { out.raw("sample", r.format.sample.rawValue) }
            if let q = r.format.quality { out.number("quality", q) }
            if r.template != d.template { out.string("template", r.template) }
            if r.stems { out.bool("stems", true) }
            if let s = r.rotateSeconds { out.number("rotate", s) }
            if let b = r.rotateBytes { out.integer("rotate_size", b) }
            if r.prerollSeconds != d.prerollSeconds { out.number("preroll", r.prerollSeconds) }
            if let m = r.maxDurationSeconds { out.number("duration", m) }
            if let stop = r.stopAt { out.string("stop_at", stop) }
            if r.start != d.start { out.raw("start", r.start.rawValue) }
            if r.ringSeconds != d.ringSeconds { out.number("ring", r.ringSeconds) }
            if r.recordDry { out.bool("dry", true) }
            if let schedule = r.schedule { out.line("schedule = [" + schedule.map(TOMLText.quoted).joined(separator: ", ") + "]") }
            if r.rotateOnClock { out.bool("rotate_on_clock", true) }
            if r.loudnessOff { out.bool("loudness", false) }
            if let g = r.loudness {
                if g == .pairs(channels: r.ports.count) { out.bool("loudness", true) }
                else { out.line("loudness_groups = [" + g.texts.map(TOMLText.quoted).joined(separator: ", ") + "]") }
            }
            out.plugins(r.plugins, section: "recorder")
            if let g = r.trigger { out.trigger(g) }
            if let k = r.retention { out.retention(k) }
        }

        if let p = player {
            let d = PlayerSection()
            out.table("player")
            if p.client != d.client { out.string("client", p.client) }
            out.ports(p.ports, prefix: "out")
            if let m = p.midiPorts { out.line("midi_ports = [" + m.map(TOMLText.quoted).joined(separator: ", ") + "]") }
            if !p.queue.isEmpty { out.line("queue = [" + p.queue.map(TOMLText.quoted).joined(separator: ", ") + "]") }
            if p.loop != d.loop { out.raw("loop", p.loop.rawValue) }
            if p.gainDB != d.gainDB { out.number("gain", p.gainDB) }
            if let map = p.channelMap { out.line("map = [" + map.map(String.init).joined(separator: ", ") + "]") }
            if p.quality != d.quality { out.raw("quality", p.quality.rawValue) }
            if p.seekSeconds != d.seekSeconds { out.number("seek", p.seekSeconds) }
            if let frame = p.seekFrame { out.integer("seek_frame", frame) }
            if p.start != d.start { out.raw("start", p.start.rawValue) }
            if let at = p.startAt { out.string("start_at", at) }
            if p.tailSeconds != d.tailSeconds { out.number("tail", p.tailSeconds) }
            if p.ringSeconds != d.ringSeconds { out.number("ring", p.ringSeconds) }
            if p.loudness { out.bool("loudness", true) } else if p.loudnessOff { out.bool("loudness", false) }
            if p.sceneMarkers { out.bool("scene_markers", true) }
            out.plugins(p.plugins, section: "player")
        }

        for rack in racks {
            out.arrayTable("rack")
            out.string("name", rack.name)
            if rack.client != rack.name { out.string("client", rack.client) }
            if let inputs = rack.inputs { out.portList("inputs", inputs, prefix: "in") }
            if let outputs = rack.outputs { out.portList("outputs", outputs, prefix: "out") }
            if let m = rack.midiInputs { out.line("midi_inputs = [" + m.map(TOMLText.quoted).joined(separator: ", ") + "]") }
            if let m = rack.midiOutputs { out.line("midi_outputs = [" + m.map(TOMLText.quoted).joined(separator: ", ") + "]") }
            if rack.gainDB != 0 { out.number("gain", rack.gainDB) }
            if rack.mix != 1 { out.number("mix", rack.mix) }
            if let isolate = rack.isolate { out.bool("isolate", isolate) }
            if rack.loudness { out.bool("loudness", true) } else if rack.loudnessOff { out.bool("loudness", false) }
            out.plugins(rack.plugins, section: "rack")
        }

        for rule in connections {
            out.arrayTable("connect")
            out.string("from", rule.from.description)
            out.string("to", rule.to.description)
            if rule.mode != .pairs { out.raw("mode", rule.mode.rawValue) }
        }
        for scene in scenes { out.scene(scene) }
        for map in maps { out.map(map) }
        if let r = render { out.render(r) }
        return out.text
    }
}

/// A small TOML emitter for the shapes presets use.
struct TOMLText {
    private(set) var text = ""

    mutating func line(_ s: String) { text += s + "\n" }

    mutating func table(_ name: String) {
        if !text.isEmpty { text += "\n" }
        line("[\(name)]")
    }

    mutating func arrayTable(_ name: String) {
        if !text.isEmpty { text += "\n" }
        line("[[\(name)]]")
    }

    mutating func string(_ key: String, _ value: String) { line("\(Self.key(key)) = \(Self.quoted(value))") }
    /// An enumeration's value (a string the loader matches).
    mutating func raw(_ key: String, _ value: String) { string(key, value) }
    mutating func bool(_ key: String, _ value: Bool) { line("\(Self.key(key)) = \(value)") }
    mutating func integer(_ key: String, _ value: Int) { line("\(Self.key(key)) = \(value)") }
    mutating func number(_ key: String, _ value: Double) { line("\(Self.key(key)) = \(Self.number(value))") }

    mutating func strings(_ key: String, _ values: [String]) {
        line("\(Self.key(key)) = [" + values.map(Self.quoted).joined(separator: ", ") + "]")
    }

    /// `channels = N` when the ports are the default names, else the names.
    mutating func ports(_ ports: [String], prefix: String) {
        if ports == (1...max(1, ports.count)).map({ "\(prefix)_\($0)" }) {
            integer("channels", ports.count)
        } else {
            line("ports = [" + ports.map(Self.quoted).joined(separator: ", ") + "]")
        }
    }

    /// A rack's `inputs`/`outputs`: a count when the names are the default ones, else the names.
    mutating func portList(_ key: String, _ ports: [String], prefix: String) {
        if ports.isEmpty || ports == (1...max(1, ports.count)).map({ "\(prefix)_\($0)" }) {
            integer(key, ports.count)
        } else {
            line("\(key) = [" + ports.map(Self.quoted).joined(separator: ", ") + "]")
        }
    }

    mutating func plugins(_ specs: [PluginSpec], section: String) {
        for spec in specs {
            arrayTable("\(section).plugins")
            string("uri", spec.uri)
            if spec.name != PluginSpec.defaultName(uri: spec.uri) { string("name", spec.name) }
            if let preset = spec.preset { string("preset", preset) }
            if spec.bypass { bool("bypass", true) }
            if let c = spec.midiChannel { integer("midi_channel", c) }
            if !spec.controls.isEmpty {
                line("controls = { " + spec.controls.map { "\(Self.key($0.symbol)) = \(Self.number($0.value))" }
                    .joined(separator: ", ") + " }")
            }
        }
    }

    /// The `[render]` table and its `[[render.event]]`s.
    mutating func render(_ r: RenderSection) {
        let d = RenderSection()
        table("render")
        if let e = r.engine { string("engine", e) }
        if let p = r.period { integer("period", p) }
        if let rate = r.sampleRate { integer("rate", rate) }
        if r.resampleQuality != d.resampleQuality { raw("resample_quality", r.resampleQuality.rawValue) }
        if r.cycleOffset != 0 { integer("cycle_offset", r.cycleOffset) }
        if r.prerollSeconds != d.prerollSeconds { number("preroll", r.prerollSeconds) }
        if case .seconds(let s) = r.tail { number("tail", s) }
        if r.tailLimitSeconds != d.tailLimitSeconds { number("tail_limit", r.tailLimitSeconds) }
        if let f = r.format {
            raw("format", f.container.rawValue)
            raw("sample", f.sample.rawValue)
            if let q = f.quality { number("quality", q) }
        }
        if !r.inputs.isEmpty { strings("inputs", r.inputs) }
        if let o = r.output { string("output", o) }
        if r.jobs != 1 { integer("jobs", r.jobs) }
        if let t = r.jobTimeoutSeconds { number("job_timeout", t) }
        if let a = r.automationFile { string("automation", a) }
        if let n = r.normalize { number("normalize", n) }
        if let c = r.truePeakCeiling { number("true_peak_ceiling", c) }
        for e in r.events {
            arrayTable("render.event")
            switch e.at {
            case .frame(let f): integer("at", f)
            case .seconds(let s): number("at", s)
            }
            if let address = e.address {
                string("command", address)
                if !e.args.isEmpty {
                    line("args = [" + e.args.map { a -> String in
                        switch a {
                        case .text(let t): return Self.quoted(t)
                        case .number(let n): return Self.number(n)
                        }
                    }.joined(separator: ", ") + "]")
                }
            }
            if let m = e.midi { line("midi = [" + m.map(String.init).joined(separator: ", ") + "]") }
        }
    }

    /// A `[[map]]` table with the keys the loader reads back to the same map.
    mutating func map(_ m: ControlMap) {
        arrayTable("map")
        switch m.source {
        case .cc(let n): integer("cc", n)
        case .note(let n): integer("note", n)
        case .pitchBend: bool("pitch_bend", true)
        case .program: bool("program", true)
        }
        if let c = m.channel { integer("channel", c) }
        if let r = m.rack { string("rack", r) }
        func list(_ key: String, _ items: [String]) {
            line("\(key) = [" + items.map(Self.quoted).joined(separator: ", ") + "]")
        }
        switch m.target {
        case .control(let e, let p, let symbol):
            string("engine", e)
            string("plugin", p)
            string("control", symbol)
            if let lo = m.minimum { number("min", lo) }
            if let hi = m.maximum { number("max", hi) }
            if m.curve != .linear { raw("curve", m.curve.rawValue) }
        case .bypass(let e, let p, let toggle):
            string("engine", e)
            string("plugin", p)
            bool("bypass", true)
            if toggle { bool("toggle", true) }
        case .pluginPreset(let e, let p, let presets):
            string("engine", e)
            string("plugin", p)
            if !presets.isEmpty { list("presets", presets) }
        case .presetFile(let files): list("files", files)
        case .marker(let label):
            if label.isEmpty { bool("marker", true) } else { string("marker", label) }
        case .scene(let names):
            if names.count == 1 && m.source != .program { string("scene", names[0]) } else { list("scenes", names) }
        case .morph(let from, let to): list("morph", [from, to])
        }
    }

    /// A `[[scene]]` table, its values in a `[scene.values]` table, one a line in the scene's order.
    mutating func scene(_ s: Scene) {
        arrayTable("scene")
        string("name", s.name)
        if let r = s.rampMS { number("ramp_ms", r) }
        if let at = s.at, !at.isEmpty { strings("at", at) }
        line("[scene.values]")
        for v in s.values {
            switch (v.path.target, v.value) {
            case (.bypass, .number(let d)): bool(v.path.description, d != 0)
            case (_, .number(let d)): number(v.path.description, d)
            case (_, .text(let t)): string(v.path.description, t)
            }
        }
    }

    mutating func trigger(_ g: TriggerSection) {
        let d = TriggerSection()
        table("recorder.trigger")
        if g.measure != d.measure { raw("measure", g.measure.rawValue) }
        if g.windowSeconds != d.windowSeconds { number("window", g.windowSeconds) }
        switch g.channels {
        case .any: break
        case .all: raw("channels", "all")
        case .listed(let list, let all):
            line("channels = [" + list.map(String.init).joined(separator: ", ") + "]")
            if all { raw("combine", "all") }
        }
        number("threshold", g.thresholdDB)
        number("stop_threshold", g.stopThresholdDB)
        if g.attackSeconds != d.attackSeconds { number("attack", g.attackSeconds) }
        if g.holdSeconds != d.holdSeconds { number("hold", g.holdSeconds) }
        if g.postrollSeconds != d.postrollSeconds { number("postroll", g.postrollSeconds) }
        if g.minLengthSeconds != d.minLengthSeconds { number("min_length", g.minLengthSeconds) }
        if let m = g.maxLengthSeconds { number("max_length", m) }
    }

    mutating func retention(_ k: RetentionSection) {
        let d = RetentionSection()
        table("recorder.retention")
        if let days = k.keepDays { number("keep_days", days) }
        if let free = k.minFreeBytes { integer("min_free", free) }
        if k.guardSeconds != d.guardSeconds { number("guard", k.guardSeconds) }
        if k.dryRun { bool("dry_run", true) }
        if k.runningTake != d.runningTake { raw("running_take", k.runningTake.rawValue) }
    }

    /// A number that reads back to the same Double (floats always carry a point or an exponent).
    static func number(_ d: Double) -> String {
        guard d.isFinite else { return "0.0" }   // no limit admits a non-finite value
        let s = "\(d)"
        return s.contains(".") || s.contains("e") ? s : s + ".0"
    }

    /// A bare key when TOML allows one, else a quoted key.
    static func key(_ k: String) -> String {
        !k.isEmpty && k.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-") })
            ? k : quoted(k)
    }

    /// A TOML basic string with every character that needs it escaped.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if u.value < 0x20 || u.value == 0x7F {
                    out += String(format: "\\u%04X", u.value)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
