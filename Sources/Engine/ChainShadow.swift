import Presets

/// What an isolated rack's process has changed in its chain since it was given its document: the control values and
/// bypasses it announced (its relayed `control-changed` and `bypass-changed` events). The session lays them over the
/// rack's specs when it needs the setup as it runs (a preset saved, a chain edited), without asking the process.
///
/// Pure value; the control thread owns it (inside `RackSupervisor`).
public struct ChainShadow: Equatable, Sendable {
    /// Plugin name → control symbol → value, in the order last set.
    var controls: [String: [String: Double]] = [:]
    var bypass: [String: Bool] = [:]

    public init() {}

    /// Takes one relayed event of `rack`: "ENGINE PLUGIN SYMBOL VALUE SOURCE" or "ENGINE PLUGIN 1|0 SOURCE".
    public mutating func observe(kind: String, text: String, rack: String) {
        let words = text.split(separator: " ").map(String.init)
        switch kind {
        case "control-changed":
            guard words.count >= 4, words[0] == rack, let value = Double(words[3]), value.isFinite else { return }
            controls[words[1], default: [:]][words[2]] = value
        case "bypass-changed":
            guard words.count >= 3, words[0] == rack else { return }
            bypass[words[1]] = words[2] == "1"
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

    /// Forgets what it holds (the process was given a document with the values as they are).
    public mutating func reset() { self = ChainShadow() }
}
