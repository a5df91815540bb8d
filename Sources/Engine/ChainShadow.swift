import Commands
import Presets

/// What an isolated rack's process has changed in its chain since it was given its document: the control values,
/// bypasses, dry/wet mix and gain it announced (its relayed `control-changed`, `bypass-changed` and
/// `chain-level-changed` events) or acknowledged in a reply to a command the session relayed to it. The session lays
/// them over the rack's specs when it needs the setup as it runs (a preset saved, a chain edited), without asking the
/// process, and hands them to a process started after a server loss, so what it acknowledged is kept
/// (`Session.replayRackValues`).
///
/// Pure value; the control thread owns it (inside `RackSupervisor`, or kept by the session while the rack is down).
public struct ChainShadow: Equatable, Sendable {
    /// Plugin name → control symbol → value, in the order last set.
    var controls: [String: [String: Double]] = [:]
    var bypass: [String: Bool] = [:]
    /// The chain's dry/wet mix and output gain in dB, when changed.
    public private(set) var mix: Double?
    public private(set) var gainDB: Double?
    /// Values acknowledged whose own event has not come back yet: an event still on its way from before the
    /// acknowledgement (the process announces every change, in order) must not undo it. Plugin/symbol (controls),
    /// then the mix and the gain.
    var awaited: [String: Double] = [:]
    var awaitedMix: Double?
    var awaitedGain: Double?

    public init() {}

    /// The values a chain runs with: every control of `specs` (as `PluginChain.currentSpecs` gives them), each
    /// plugin's bypass, the mix and gain.
    public init(specs: [PluginSpec], mix: Double, gainDB: Double) {
        for spec in specs {
            for c in spec.controls where c.value.isFinite { controls[spec.name, default: [:]][c.symbol] = c.value }
            bypass[spec.name] = spec.bypass
        }
        self.mix = mix
        self.gainDB = gainDB
    }

    /// Whether nothing was changed since the document.
    public var isEmpty: Bool { controls.isEmpty && bypass.isEmpty && mix == nil && gainDB == nil }

    /// Takes one relayed event of `rack`: "ENGINE PLUGIN SYMBOL VALUE SOURCE", "ENGINE PLUGIN 1|0 SOURCE" or
    /// "ENGINE MIX GAIN SOURCE".
    public mutating func observe(kind: String, text: String, rack: String) {
        let words = text.split(separator: " ").map(String.init)
        switch kind {
        case "control-changed":
            guard words.count >= 4, words[0] == rack, let value = Double(words[3]), value.isFinite else { return }
            let key = words[1] + "/" + words[2]
            if let want = awaited[key] {
                guard Float(want) == Float(value) else { return }   // from before the acknowledged value
                awaited[key] = nil
            }
            controls[words[1], default: [:]][words[2]] = value
        case "bypass-changed":
            guard words.count >= 3, words[0] == rack else { return }
            bypass[words[1]] = words[2] == "1"
        case "chain-level-changed":
            guard words.count >= 3, words[0] == rack, let m = Double(words[1]), m.isFinite,
                  let g = Double(words[2]), g.isFinite else { return }
            // Each half is taken unless an acknowledged value of it waits for its own event.
            if let want = awaitedMix, want != m {} else {
                awaitedMix = nil
                mix = m
            }
            if let want = awaitedGain, want != g {} else {
                awaitedGain = nil
                gainDB = g
            }
        default:
            break
        }
    }

    /// Takes a command the rack's process acknowledged (`ok`, with `detail` its reply: the value as set). Commands
    /// that change nothing kept here (reads, presets, lists) are passed over.
    public mutating func record(_ command: Command, detail: String) {
        switch command {
        case .pluginSet(_, let plugin, let symbol, let value, _):
            let set: Double?
            if let d = Double(detail) { set = d } else if case .number(let d) = value { set = d } else { set = nil }
            if let set, set.isFinite {
                controls[plugin, default: [:]][symbol] = set
                awaited[plugin + "/" + symbol] = set
            }
        case .pluginBypass(_, let plugin, let on?, _):
            bypass[plugin] = on
        case .pluginMix(_, let m?, _):
            mix = Double(detail).flatMap { $0.isFinite ? $0 : nil } ?? m
            awaitedMix = mix
        case .pluginGain(_, let dB?, _):
            gainDB = Double(detail).flatMap { $0.isFinite ? $0 : nil } ?? dB
            awaitedGain = gainDB
        default:
            break
        }
    }

    /// `specs` with what the process changed laid over them.
    public func applied(to specs: [PluginSpec]) -> [PluginSpec] {
        specs.map { spec in
            var s = spec
            if let on = bypass[spec.name] { s.bypass = on }
            for (symbol, value) in controls[spec.name] ?? [:] {
                if let i = s.controls.firstIndex(where: { $0.symbol == symbol }) {
                    s.controls[i].value = value
                } else {
                    s.controls.append(.init(symbol: symbol, value: value))
                }
            }
            return s
        }
    }

    /// The commands that bring a process of `rack` to these values (controls and bypasses by plugin and symbol, then
    /// mix and gain), in a stable order.
    public func commands(rack: String) -> [Command] {
        var out: [Command] = []
        for plugin in controls.keys.sorted() {
            for (symbol, value) in (controls[plugin] ?? [:]).sorted(by: { $0.key < $1.key }) {
                out.append(.pluginSet(engine: rack, plugin: plugin, symbol: symbol, value: .number(value)))
            }
        }
        for plugin in bypass.keys.sorted() { out.append(.pluginBypass(engine: rack, plugin: plugin, on: bypass[plugin])) }
        if let mix { out.append(.pluginMix(engine: rack, mix: mix)) }
        if let gainDB { out.append(.pluginGain(engine: rack, dB: gainDB)) }
        return out
    }

    /// Forgets what it holds (the process was given a document with the values as they are).
    public mutating func reset() { self = ChainShadow() }
}
