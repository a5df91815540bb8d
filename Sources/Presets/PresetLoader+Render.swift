import Foundation
import SoundFile

// The `[render]` table (docs/RENDER.md). What can be checked without the plugins is checked here: every key, its type
// and range, the engine it names, the files it names, each event's time and form. What needs the plugins (a control
// an event names, its range, an LV2 preset, a command the render cannot apply) is checked by the Render module's
// `RenderCheck`, which `tandem preset check` runs too: whatever `tandem render` would refuse, `preset check` refuses.
extension Validator {
    mutating func render(_ t: TOMLTable, preset p: Preset) -> RenderSection {
        let s = "render"
        unknownKeys(t, ["engine", "period", "rate", "resample_quality", "cycle_offset", "preroll", "tail", "tail_limit",
                        "format", "sample", "quality", "inputs", "output", "jobs", "job_timeout", "automation", "event",
                        "normalize", "true_peak_ceiling"],
                    section: s)
        var r = RenderSection()
        r.line = t.line
        if let (engine, line) = string(t, "engine", s) {
            let known = (p.recorder.map { _ in ["recorder"] } ?? []) + (p.player.map { _ in ["player"] } ?? [])
                + p.racks.map(\.name)
            if !known.contains(engine) {
                problem("render.engine", line, "'\(engine)' is not a chain of this preset (chains: "
                        + (known.isEmpty ? "none" : known.joined(separator: ", ")) + ")")
            }
            r.engine = engine
        }
        r.period = integer(t, "period", s, Limits.renderPeriod)
        r.sampleRate = integer(t, "rate", s, Limits.renderRate)
        r.resampleQuality = choice(t, "resample_quality", s, ResampleQuality.self) ?? .high
        if let offset = integer(t, "cycle_offset", s, 0...(Limits.renderPeriod.upperBound - 1)) {
            if offset >= r.period ?? RenderSection.defaultPeriod {
                problem("render.cycle_offset", t.keyLines["cycle_offset"],
                        "\(offset) is not inside a cycle of \(r.period ?? RenderSection.defaultPeriod) frames (0 to"
                        + " \((r.period ?? RenderSection.defaultPeriod) - 1))")
            }
            r.cycleOffset = offset
        }
        r.prerollSeconds = number(t, "preroll", s, Limits.renderPrerollSeconds, unit: " seconds") ?? r.prerollSeconds
        if let v = t["tail"] {
            switch v {
            case .string("silence", _): r.tail = .silence
            case .integer, .float:
                if let seconds = number(t, "tail", s, Limits.renderTailSeconds, unit: " seconds") { r.tail = .seconds(seconds) }
            default:
                problem("render.tail", v.line, "expected \"silence\" or seconds (\(Limits.describe(Limits.renderTailSeconds)))"
                        + ", found \(v.typeName == "a string" ? "'\(v)'" : v.typeName)")
            }
        }
        r.tailLimitSeconds = number(t, "tail_limit", s, Limits.renderTailSeconds, unit: " seconds") ?? r.tailLimitSeconds
        if t["format"] != nil || t["sample"] != nil || t["quality"] != nil {
            var f = AudioFormat()
            f.container = choice(t, "format", s, Container.self) ?? .wav
            f.sample = choice(t, "sample", s, SampleFormat.self) ?? (f.container == .flac ? .int24 : .float32)
            f.quality = number(t, "quality", s, Limits.quality)
            if f.container == .flac && f.sample == .float32 {
                problem("render.sample", t.keyLines["sample"] ?? t.keyLines["format"], "FLAC stores integers only: use int24 or int16")
            }
            r.format = f
        }
        if let (files, line) = strings(t, "inputs", s) {
            r.inputs = files.map { path($0) }
            for (name, file) in zip(files, r.inputs) where !FileManager.default.fileExists(atPath: file) {
                problem("render.inputs", line, "'\(name)' does not exist (\(file))")
            }
        }
        if let (output, line) = string(t, "output", s) {
            if output.isEmpty { problem("render.output", line, "the output is empty") }
            r.output = output.isEmpty ? nil : path(output)
            if let o = r.output, let why = RenderTemplate.problem(o, inputs: max(1, r.inputs.count)) {
                problem("render.output", line, why)
            }
        }
        r.jobs = integer(t, "jobs", s, Limits.renderJobs) ?? 1
        r.jobTimeoutSeconds = number(t, "job_timeout", s, Limits.renderJobTimeoutSeconds, unit: " seconds")
        // The same words as `render --normalize` and `--true-peak-ceiling`.
        switch t["normalize"] {
        case .string(let text, let line)?:
            switch RenderSection.loudnessTarget(text) {
            case .success(let v): r.normalize = v
            case .failure(let why): problem("render.normalize", line, why.description)
            }
        case .integer(let v, let line)?:
            switch RenderSection.loudnessTarget(Double(v)) {
            case .success(let v): r.normalize = v
            case .failure(let why): problem("render.normalize", line, why.description)
            }
        case .float(let v, let line)?:
            switch RenderSection.loudnessTarget(v) {
            case .success(let v): r.normalize = v
            case .failure(let why): problem("render.normalize", line, why.description)
            }
        case let v?:
            problem("render.normalize", v.line, "expected LUFS (e.g. -16) or \"ebu\", found \(v.typeName)")
        case nil: break
        }
        switch t["true_peak_ceiling"] {
        case .integer(let v, let line)?:
            switch RenderSection.truePeakCeiling(Double(v)) {
            case .success(let v): r.truePeakCeiling = v
            case .failure(let why): problem("render.true_peak_ceiling", line, why.description)
            }
        case .float(let v, let line)?:
            switch RenderSection.truePeakCeiling(v) {
            case .success(let v): r.truePeakCeiling = v
            case .failure(let why): problem("render.true_peak_ceiling", line, why.description)
            }
        case let v?:
            problem("render.true_peak_ceiling", v.line, "expected dBTP (e.g. -1), found \(v.typeName)")
        case nil: break
        }
        if let v = t["true_peak_ceiling"], t["normalize"] == nil {
            // Never a setting silently ignored: the ceiling is the ceiling of a normalized render.
            problem("render.true_peak_ceiling", v.line, "'true_peak_ceiling' is the ceiling of a normalized render: "
                    + "give 'normalize' too, or leave it out")
        }
        if let (file, line) = string(t, "automation", s) {
            let resolved = path(file)
            if !FileManager.default.fileExists(atPath: resolved) {
                problem("render.automation", line, "'\(file)' does not exist (\(resolved))")
            }
            r.automationFile = resolved
        }
        if let v = t["event"] {
            guard case .array(let items, _) = v else {
                problem("render.event", v.line, "expected [[render.event]] tables, found \(v.typeName)")
                return r
            }
            for item in items {
                guard case .table(let e) = item else {
                    problem("render.event", item.line, "expected [[render.event]] tables, found \(item.typeName)")
                    continue
                }
                if let entry = automationEntry(e) { r.events.append(entry) }
            }
        }
        return r
    }

    /// One `[[render.event]]`: `at` and either `command` with `args`, or `midi`.
    mutating func automationEntry(_ t: TOMLTable) -> AutomationEntry? {
        let s = "render.event"
        unknownKeys(t, ["at", "command", "args", "midi"], section: s)
        var at: AutomationTime?
        switch t["at"] {
        case .integer(let f, let line)?:
            if f < 0 { problem("\(s).at", line, "\(f) is before the input's start (frames count from 0)") } else { at = .frame(f) }
        case .float(let d, let line)?:
            if d.isFinite && d >= 0 { at = .seconds(d) } else { problem("\(s).at", line, "\(Self.format(d)) is not a time") }
        case .string(let text, let line)?:
            at = AutomationTime(text)
            if at == nil { problem("\(s).at", line, "'\(text)' is not a time (frames, or seconds: \"1.5 s\", \"250 ms\")") }
        case let v?:
            problem("\(s).at", v.line, "expected frames or seconds, found \(v.typeName)")
        case nil:
            problem("\(s).at", t.line, "an event needs 'at' (frames, or seconds: \"1.5 s\")")
        }
        let command = string(t, "command", s)
        var midi: [UInt8]?
        if let v = t["midi"] {
            midi = midiBytes(v, key: "\(s).midi")
        }
        if command == nil && t["midi"] == nil {
            problem(s, t.line, "an event needs 'command' (an address such as \"/tandem/plugin/set\") or 'midi'")
        }
        if command != nil && t["midi"] != nil { problem(s, t.line, "an event has 'command' or 'midi', not both") }
        if t["args"] != nil && command == nil { problem("\(s).args", t.keyLines["args"], "'args' belong to a 'command'") }
        var args: [AutomationValue] = []
        if let v = t["args"] {
            if case .array(let items, _) = v {
                for item in items {
                    switch item {
                    case .string(let text, _): args.append(.text(text))
                    case .integer(let i, _): args.append(.number(Double(i)))
                    case .float(let d, _): args.append(.number(d))
                    case .bool(let b, _): args.append(.number(b ? 1 : 0))
                    default: problem("\(s).args", item.line, "an argument is a string or a number, found \(item.typeName)")
                    }
                }
            } else {
                problem("\(s).args", v.line, "expected an array of strings and numbers, found \(v.typeName)")
            }
        }
        if let (address, line) = command, !address.hasPrefix("/") {
            problem("\(s).command", line, "'\(address)' is not an address (e.g. \"/tandem/plugin/set\")")
        }
        guard let at, command != nil || midi != nil else { return nil }
        return AutomationEntry(at: at, address: command?.0, args: args, midi: midi, line: t.line)
    }

    /// MIDI bytes: numbers 0 to 255 (`0x90` or `144`), or "0x90"-style strings; a status byte first.
    mutating func midiBytes(_ v: TOMLValue, key: String) -> [UInt8]? {
        guard case .array(let items, let line) = v else {
            problem(key, v.line, "expected an array of bytes (e.g. [0x90, 60, 100], [144, 60, 100] or [\"0x90\", 60, 100])")
            return nil
        }
        var bytes: [UInt8] = []
        for item in items {
            switch item {
            case .integer(let i, _) where (0...255).contains(i): bytes.append(UInt8(i))
            case .string(let text, _) where text.lowercased().hasPrefix("0x") && UInt8(text.dropFirst(2), radix: 16) != nil:
                bytes.append(UInt8(text.dropFirst(2), radix: 16)!)
            default:
                problem(key, item.line, "a MIDI byte is 0 to 255 (0x00 to 0xFF), found \(item.typeName)")
                return nil
            }
        }
        if let why = MIDIBytes.problem(bytes) {
            problem(key, line, why)
            return nil
        }
        return bytes
    }
}

/// The checks of a MIDI message an automation event sends.
public enum MIDIBytes {
    /// Why `bytes` is not one whole channel message or SysEx (nil: it is).
    public static func problem(_ bytes: [UInt8]) -> String? {
        guard let status = bytes.first else { return "an empty MIDI message" }
        guard status >= 0x80 else { return "a MIDI message starts with a status byte (0x80 to 0xFF), not \(status)" }
        if status == 0xF0 {
            return bytes.last == 0xF7 && bytes.dropFirst().dropLast().allSatisfy({ $0 < 0x80 }) ? nil
                : "a SysEx message ends with 0xF7 and holds only data bytes"
        }
        let need: Int
        switch status & 0xF0 {
        case 0xC0, 0xD0: need = 2
        case 0xF0: need = [0xF1: 2, 0xF2: 3, 0xF3: 2][status] ?? 1
        default: need = 3
        }
        guard bytes.count == need else {
            return "status 0x\(String(status, radix: 16, uppercase: true)) takes \(need) byte(s), not \(bytes.count)"
        }
        if bytes.dropFirst().contains(where: { $0 >= 0x80 }) { return "MIDI data bytes are 0 to 127" }
        return nil
    }
}

/// Output names of a render: a file, or a template for several inputs (`{input}`: the input's name without its
/// extension; `{take}`: the job's number from 1; and the recorder's `{session}`, `{date}`, `{time}`).
public enum RenderTemplate {
    public static let placeholders = ["input", "take", "session", "date", "time"]

    /// Why `output` cannot name the outputs of `inputs` jobs (nil: it can).
    public static func problem(_ output: String, inputs: Int) -> String? {
        let name = (output as NSString).lastPathComponent
        var rest = Substring(name)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            let inner = rest[rest.index(after: open)..<close]
            let word = String(inner.split(separator: ":", maxSplits: 1).first ?? "")
            if word == "channel" || word == "chunk" {
                return "the output takes {input}, {take}, {session}, {date} and {time}, not {\(word)}"
            }
            if !placeholders.contains(word) {
                return "unknown placeholder {\(inner)} in the output (known: "
                    + placeholders.map { "{\($0)}" }.joined(separator: ", ") + ")"
            }
            rest = rest[rest.index(after: close)...]
        }
        for p in FileNameTemplate(name.replacingOccurrences(of: "{input}", with: "x")).problems() {
            return p.replacingOccurrences(of: "file template", with: "the output")
        }
        if inputs > 1 && !name.contains("{input}") && !name.contains("{take") {
            return "\(inputs) inputs need an output template with {input} or {take} (e.g. \"out/{input}.wav\"), or a folder"
        }
        return nil
    }
}
