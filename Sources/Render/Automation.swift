import Commands
import Foundation
import Plugins
import Presets
import SoundFile

/// Automation lists: what a render applies at frames, read from a file (`automation = "..."`, `--automation`), from
/// `[[render.event]]`s, or from a take's control log; and the checks every event passes before anything runs.
///
/// A file has one event a line: `AT ADDRESS ARGS...` (a command of the command model, `docs/CONTROL.md`) or
/// `AT midi BYTES...`. `AT` is an input frame (`48000`) or a time (`1.5s`, `250ms`); arguments are words as `tandem
/// ctl` takes them (double quotes group words, `#` starts a comment). A take's control log written out as a file is
/// such a file (`TimedCommand.line`).
public enum AutomationList {
    /// The events of an automation file's text. Problems name the file and line.
    public static func parse(_ text: String, file: String) -> (entries: [AutomationEntry], problems: [String]) {
        var entries: [AutomationEntry] = []
        var problems: [String] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = n + 1
            let place = "\(file):\(line)"
            guard let words = CommandValue.words(String(raw)) else {
                problems.append("\(place): a quote is not closed")
                continue
            }
            guard !words.isEmpty else { continue }
            guard let at = AutomationTime(words[0].name), words[0].number.map({ $0 >= 0 && $0 == $0.rounded() }) ?? true
            else {
                problems.append("\(place): '\(words[0].name)' is not a time (frames such as 48000, or seconds such as 1.5s or 250ms)")
                continue
            }
            guard words.count >= 2 else {
                problems.append("\(place): nothing to do at \(at) (an address such as /tandem/plugin/set, or midi)")
                continue
            }
            let what = words[1].name
            if what == "midi" {
                var bytes: [UInt8] = []
                var bad: String?
                for w in words.dropFirst(2) {
                    let text = w.name.lowercased()
                    let value = text.hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text)
                    guard let v = value, (0...255).contains(v) else {
                        bad = "'\(w.name)' is not a MIDI byte (0 to 255, or 0x00 to 0xFF)"
                        break
                    }
                    bytes.append(UInt8(v))
                }
                if let why = bad ?? MIDIBytes.problem(bytes) {
                    problems.append("\(place): \(why)")
                    continue
                }
                entries.append(AutomationEntry(at: at, midi: bytes, line: line))
            } else if what.hasPrefix("/") {
                let args = words.dropFirst(2).map { w -> AutomationValue in
                    switch w {
                    case .number(let d): return .number(d)
                    case .text(let t): return .text(t)
                    }
                }
                entries.append(AutomationEntry(at: at, address: what, args: args, line: line))
            } else {
                problems.append("\(place): '\(what)' is neither an address (such as /tandem/plugin/set) nor midi")
            }
        }
        return (entries, problems)
    }

    /// Reads and parses an automation file.
    public static func read(_ path: String) -> (entries: [AutomationEntry], problems: [String]) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            let exists = FileManager.default.fileExists(atPath: path)
            return ([], ["\(path): " + (exists ? "cannot be read as UTF-8 text" : "no such file")])
        }
        return parse(text, file: path)
    }

    /// The entries as events at input frames of a stream at `rate`, in time order (a stable sort: events at one
    /// frame keep their written order). `origin`: where each was written, for messages.
    public static func events(_ entries: [AutomationEntry], rate: Int,
                              origin: (AutomationEntry) -> String) -> (events: [AutomationEvent], problems: [String]) {
        var out: [AutomationEvent] = []
        var problems: [String] = []
        for e in entries {
            guard let frame = e.at.frame(rate: rate) else {
                problems.append("\(origin(e)): \(e.at) is too far for a frame count")
                continue
            }
            let args = e.args.map { a -> CommandValue in
                switch a {
                case .text(let t): return .text(t)
                case .number(let d): return .number(d)
                }
            }
            out.append(AutomationEvent(at: frame, address: e.address, args: args, midi: e.midi, origin: origin(e)))
        }
        let sorted = out.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        return (sorted, problems)
    }

    /// The events of a take's control log that act on `engine`, at their frames.
    public static func events(_ log: ControlLog, engine: String, take: String) -> [AutomationEvent] {
        log.entries.filter { $0.engine == engine }.map {
            var e = AutomationEvent(at: $0.frame, address: $0.address, args: $0.args, origin: "\(take)'s control log")
            e.logged = true
            return e
        }
    }
}

/// What an automation event asks of the chain, checked.
public enum AutomationAction: Sendable, Equatable {
    /// `rampMS`: glide (or crossfade) over that many milliseconds, as live (0: at once).
    case set(plugin: String, symbol: String, value: ControlSetting, rampMS: Double = 0)
    case bypass(plugin: String, on: Bool, rampMS: Double = 0)
    case mix(Double, rampMS: Double = 0)
    case gain(Double, rampMS: Double = 0)
    case preset(plugin: String, uri: String)
    case midi([UInt8])
}

extension AutomationEvent {
    /// The action, or why the render cannot apply it to the chain of `chain` (a command of another engine, a query,
    /// or a command that acts on something a render does not have).
    public func action(for chain: RenderChain) -> Result<AutomationAction, RenderError> {
        if let midi {
            guard chain.kind == .rack else {
                return .failure(RenderError(.badInput, "\(origin): MIDI goes to a rack's plugins; the \(chain.engine)'s"
                                            + " insert chain takes none"))
            }
            return .success(.midi(midi))
        }
        let command: Command
        switch Command.parse(address: address ?? "", values: args) {
        case .failure(let e): return .failure(RenderError(.badInput, "\(origin): \(e.message)"))
        case .success(let c): command = c
        }
        if let e = command.engine, e != chain.engine {
            return .failure(RenderError(.badInput, "\(origin): the event acts on '\(e)', but this render runs the"
                                        + " \(chain.kind == .rack ? "rack '\(chain.engine)'" : chain.engine + "'s chain")"))
        }
        switch command {
        case .pluginSet(_, let p, let s, let v, let r): return .success(.set(plugin: p, symbol: s, value: v, rampMS: r ?? 0))
        case .pluginBypass(_, let p, let on?, let r): return .success(.bypass(plugin: p, on: on, rampMS: r ?? 0))
        case .pluginMix(_, let m?, let r): return .success(.mix(m, rampMS: r ?? 0))
        case .pluginGain(_, let d?, let r): return .success(.gain(d, rampMS: r ?? 0))
        case .pluginPreset(_, let p, let uri): return .success(.preset(plugin: p, uri: uri))
        case .pluginBypass, .pluginMix, .pluginGain:
            return .failure(RenderError(.badInput, "\(origin): \(command.address) without a value only reads; an"
                                        + " automation event sets something"))
        default:
            return .failure(RenderError(.badInput, "\(origin): \(command.address) is not something a render applies"
                                        + " (plugin set, bypass, mix, gain and preset, and midi, are)"))
        }
    }
}

/// The checks of a render's setup that need the plugins but not their instances: what `tandem preset check` runs
/// for a `[render]` table, and what `tandem render` runs before any job starts (each job then checks its events
/// again against the chain it built, at its rate, and against its input's length).
public enum RenderCheck {
    /// Problems with `events` on `chain` (plugins looked up in `host`; ranges in fractions of the rate are left to
    /// the job, which knows the rate).
    public static func events(_ events: [AutomationEvent], chain: RenderChain, host: PluginHost = .shared) -> [String] {
        let specs = PluginSpec.uniqueNames(chain.plugins)
        var problems: [String] = []
        for e in events {
            let action: AutomationAction
            switch e.action(for: chain) {
            case .failure(let why):
                problems.append(why.message)
                continue
            case .success(let a): action = a
            }
            func plugin(_ name: String) -> (PluginSpec, PluginInfo?)? {
                guard let spec = specs.first(where: { $0.name == name }) else {
                    problems.append("\(e.origin): no plugin named '\(name)' in the \(chain.engine) chain (plugins: "
                                    + specs.map(\.name).joined(separator: ", ") + ")")
                    return nil
                }
                return (spec, host.plugin(spec.uri))
            }
            switch action {
            case .set(let name, let symbol, let value, _):
                guard let (spec, info) = plugin(name), let info else { continue }
                let controls = info.ports.filter { $0.kind == .control && $0.isInput }
                guard let port = controls.first(where: { $0.symbol == symbol }) else {
                    problems.append("\(e.origin): <\(spec.uri)> has no control '\(symbol)' (controls: "
                                    + controls.map(\.symbol).joined(separator: ", ") + ")")
                    continue
                }
                var number: Double
                switch value {
                case .number(let d): number = d
                case .text(let t):
                    switch ControlUnits.parse(t, port: port) {
                    case .success(let d): number = d
                    case .failure(let why):
                        problems.append("\(e.origin): \(why.message)")
                        continue
                    }
                }
                let lo = Double(port.minimum ?? -.infinity), hi = Double(port.maximum ?? .infinity)
                if !port.scalesWithRate && !(number >= lo && number <= hi) {
                    problems.append("\(e.origin): control '\(symbol)' of \(name) = \(Limits.number(number)) is outside"
                                    + " its range \(port.minimum ?? -.infinity) to \(port.maximum ?? .infinity)")
                }
            case .bypass(let name, _, _):
                _ = plugin(name)
            case .preset(let name, let uri):
                guard let (spec, info) = plugin(name), let info else { continue }
                if !info.presets.contains(where: { $0.uri == uri }) {
                    let known = info.presets.map(\.uri)
                    problems.append("\(e.origin): <\(spec.uri)> has no preset '\(uri)'"
                                    + (known.isEmpty ? " (it has none)" : " (it has: \(known.joined(separator: ", ")))"))
                }
            case .midi:
                // A MIDI line for a chain where nothing takes MIDI would be heard nowhere.
                let infos = specs.map { host.plugin($0.uri) }
                func takesMIDI(_ info: PluginInfo?) -> Bool {
                    info?.ports.contains(where: { p in p.kind == .atom && p.isInput && p.supportsMIDI }) ?? false
                }
                if host.canLookUp, !infos.contains(where: { $0 == nil }), !infos.contains(where: takesMIDI) {
                    problems.append("\(e.origin): MIDI for the rack '\(chain.engine)', but none of its plugins takes MIDI"
                                    + " (plugins: " + specs.map(\.name).joined(separator: ", ") + ")")
                }
            case .mix, .gain:
                break
            }
        }
        return problems
    }
}

extension RenderCheck {
    /// What `tandem render` would refuse in a preset's `[render]` table (beyond what the loader checks): its chain,
    /// its automation file, each event against that chain's plugins, events past the end of the inputs it names, an
    /// output that exists. `tandem preset check` reports these with the preset's other problems.
    public static func preset(_ preset: Preset, host: PluginHost = .shared) -> [PresetProblem] {
        guard let section = preset.render else { return [] }
        let file = preset.path ?? "preset"
        func problem(_ key: String, _ line: Int?, _ message: String) -> PresetProblem {
            PresetProblem(file: file, line: line, key: key, message: message)
        }
        var request = RenderRequest()
        request.preset = preset
        let chain: RenderChain
        switch RenderPlan.chainFor(request, section: section, take: nil, host: host) {
        case .failure(let why): return [problem("render.engine", section.line, why.message)]
        case .success(let c): chain = c
        }
        var out: [PresetProblem] = []
        var entries: [(AutomationEntry, String, String)] = []
        if let path = section.automationFile {
            let (list, bad) = AutomationList.read(path)
            out += bad.map { problem("render.automation", nil, $0) }
            entries += list.map { ($0, "\(path):\($0.line ?? 0)", "render.automation") }
        }
        entries += section.events.map { ($0, "\(file):\($0.line ?? 0) [[render.event]]", "render.event") }
        let rate = section.sampleRate ?? section.inputs.first.flatMap { try? SoundFileReader(path: $0).sampleRate } ?? 48000
        let (events, bad) = AutomationList.events(entries.map(\.0), rate: rate) { e in
            entries.first { $0.0 == e }?.1 ?? "automation"
        }
        out += bad.map { problem("render.event", nil, $0) }
        out += RenderCheck.events(events, chain: chain, host: host).map { problem("render.event", nil, $0) }
        // Past the end of an input the table names (a fixed tail counts; "silence" does not).
        var tail = 0
        if case .seconds(let s) = section.tail { tail = Limits.frames(seconds: s, rate: Double(rate)) ?? 0 }
        for input in section.inputs {
            guard let r = try? SoundFileReader(path: input) else { continue }
            let frames = r.sampleRate == rate ? r.frames : Int((Double(r.frames) * Double(rate) / Double(r.sampleRate)).rounded())
            for e in events where e.at >= frames + tail {
                out.append(problem("render.event", nil, "\(e.origin): frame \(e.at) is past the end of '\(input)'"
                                   + " (\(frames) frames" + (tail > 0 ? " and a tail of \(tail))" : ")")))
            }
        }
        if let o = section.output, section.inputs.count <= 1, !o.contains("{"), !RenderPlan.isFolder(o) {
            for p in [o, (o as NSString).deletingPathExtension + ".json"] where FileManager.default.fileExists(atPath: p) {
                out.append(problem("render.output", nil, "'\(p)' exists: a render never overwrites a file"))
            }
        }
        return out
    }
}

extension PluginChain {
    /// A control setting of an automation line as the number the control takes: a number as it is, a text in the
    /// control's unit or one of its labels read as `number(_:_:from:)` reads it.
    func number(_ plugin: String, _ symbol: String, _ setting: ControlSetting) throws(PluginError) -> Double {
        switch setting {
        case .number(let d): return d
        case .text(let t): return try number(plugin, symbol, from: t)
        }
    }
}
