import SoundFile

// `[recorder]` (docs/PRESETS.md); its unattended keys (trigger, schedule, retention) are in Preset+Unattended.swift.
extension Validator {
    mutating func recorder(_ t: TOMLTable) -> RecorderSection {
        let s = "recorder"
        unknownKeys(t, ["client", "channels", "ports", "format", "sample", "quality", "template", "stems", "rotate",
                        "rotate_size", "preroll", "duration", "stop_at", "start", "ring", "plugins", "dry",
                        "trigger", "schedule", "rotate_on_clock", "retention", "midi_ports", "loudness", "loudness_groups"],
                    section: s)
        var r = RecorderSection()
        r.client = client(t, s, default: r.client)
        r.ports = ports(t, s, prefix: "in", default: r.ports)
        r.midiPorts = midiPorts(t, s, audio: r.ports) ?? []
        r.format.container = choice(t, "format", s, Container.self) ?? .wav
        // FLAC stores integers only: its default is int24 (as render's), float32 the others'.
        r.format.sample = choice(t, "sample", s, SampleFormat.self) ?? (r.format.container == .flac ? .int24 : .float32)
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
        loudness(t, &r)
        return r
    }
}

extension Validator {
    /// `loudness = true|false` and `loudness_groups = ["1-2", "3"]` (which implies `loudness = true`).
    mutating func loudness(_ t: TOMLTable, _ r: inout RecorderSection) {
        let on = bool(t, "loudness", "recorder")
        if on == false { r.loudnessOff = true }
        if let (texts, line) = strings(t, "loudness_groups", "recorder") {
            if on == false {
                problem("recorder.loudness_groups", line, "'loudness_groups' measures loudness, but 'loudness = false' turns it off")
            }
            switch LoudnessGroups.parse(texts, channels: r.ports.count) {
            case .success(let groups): r.loudness = groups
            case .failure(let why): problem("recorder.loudness_groups", line, why.description)
            }
        } else if on == true {
            r.loudness = .pairs(channels: r.ports.count)
        }
    }
}
