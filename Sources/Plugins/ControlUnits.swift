import Foundation
import Presets

/// Values of a plugin control in its unit, as a person writes and reads them: "-7.5 dB", "1.2 kHz", "250 ms",
/// "40 %", "0.5 s", an enumeration's label ("Lowpass"), "on"/"off" for a toggle. The unit is the plugin's own
/// (units:unit, `PluginPortInfo.unit`); a number with no unit is the control's own number; a unit that does not fit
/// the control's (dB for a control in Hz) is refused, naming both.
///
/// Pure; any thread.
public enum ControlUnits {
    /// Scale factors from what may be written to each of the LV2 units vocabulary's units (their names as
    /// `PluginPortInfo.unit` gives them), lower-cased.
    static let accepted: [String: [String: Double]] = [
        "db": ["db": 1],
        "hz": ["hz": 1, "khz": 1000, "mhz": 1_000_000],
        "khz": ["khz": 1, "hz": 0.001],
        "mhz": ["mhz": 1, "khz": 0.001, "hz": 0.000001],
        "ms": ["ms": 1, "s": 1000],
        "s": ["s": 1, "ms": 0.001, "min": 60],
        "min": ["min": 1, "s": 1.0 / 60],
        "pc": ["%": 1, "pc": 1],
        "bpm": ["bpm": 1],
        "cent": ["cent": 1, "ct": 1],
        "semitone12TET": ["semitone": 1, "semitones": 1, "st": 1],
        "oct": ["oct": 1],
        "degree": ["deg": 1, "°": 1],
        "frame": ["frames": 1, "frame": 1],
        "m": ["m": 1, "cm": 0.01, "mm": 0.001, "km": 1000],
        "cm": ["cm": 1, "m": 100, "mm": 0.1],
        "mm": ["mm": 1, "cm": 10, "m": 1000],
        "km": ["km": 1, "m": 0.001],
        "bar": ["bar": 1, "bars": 1],
        "beat": ["beat": 1, "beats": 1],
        "coef": ["": 1],
    ]

    /// The number `text` stands for on `port` (already at the engine's rate when its range scales with it).
    public static func parse(_ text: String, port: PluginPortInfo) -> Result<Double, PluginError> {
        let t = text.trimmingCharacters(in: .whitespaces)
        func refuse(_ why: String) -> Result<Double, PluginError> {
            .failure(PluginError(.badValue, plugin: "", "control '\(port.symbol)': '\(text)' \(why)"))
        }
        // An enumeration's label, or a scale point's.
        if let p = port.scalePoints.first(where: { $0.label.caseInsensitiveCompare(t) == .orderedSame }) {
            return .success(Double(p.value))
        }
        if port.isToggle {
            switch t.lowercased() {
            case "on", "true", "yes": return .success(Double(port.maximum ?? 1))
            case "off", "false", "no": return .success(Double(port.minimum ?? 0))
            default: break
            }
        }
        // A number, then what follows it.
        var end = t.startIndex
        for i in t.indices {
            let c = t[i]
            if c.isNumber || c == "." || c == "e" || c == "E" || ((c == "-" || c == "+" || c == "−") && (i == t.startIndex || "eE".contains(t[t.index(before: i)]))) {
                end = t.index(after: i)
            } else {
                break
            }
        }
        let numberText = t[..<end].replacingOccurrences(of: "−", with: "-")
        guard let number = Double(numberText), number.isFinite else {
            let labels = port.scalePoints.map(\.label)
            return refuse("is not a number" + (labels.isEmpty ? "" : " nor one of its labels (\(labels.joined(separator: ", ")))"))
        }
        let unit = t[end...].trimmingCharacters(in: .whitespaces)
        if unit.isEmpty { return .success(number) }
        let written = unit == "%" ? "%" : unit.lowercased()
        guard let name = port.unit else {
            return refuse("has a unit, and the control has none (give the number alone)")
        }
        // A unit of the plugin's own (a URI outside the vocabulary, e.g. a-eq's "Hz" and "dB"): its own symbol.
        let own = port.unitSymbol.map { $0 == "%" ? "%" : $0.lowercased() }
        let table = accepted[name] ?? accepted[name.lowercased()] ?? [:]
        guard let factor = table[written] ?? table.first(where: { $0.key.lowercased() == written })?.value
                ?? (own == written ? 1 : nil) else {
            return refuse("is in \(unit); the control is in \(port.unitSymbol ?? name)")
        }
        let v = number * factor
        return v.isFinite ? .success(v) : refuse("is not a number the control can take")
    }

    /// `value` as a person reads it on `port`: its label when it has one, else the number and the unit's symbol.
    public static func format(_ value: Float, port: PluginPortInfo) -> String {
        if let p = port.scalePoints.first(where: { $0.value == value }) { return p.label }
        if port.isToggle { return value > (port.minimum ?? 0) ? "on" : "off" }
        let number = port.isInteger || value == value.rounded() && abs(value) < 1e9
            ? String(Int64(value.rounded())) : String(format: "%.4g", Double(value))
        guard let symbol = port.unitSymbol, !symbol.isEmpty else { return number }
        return symbol == "%" ? "\(number) %" : "\(number) \(symbol)"
    }
}

extension PluginPortInfo {
    /// What is wrong with `value` for this control beyond its range: a toggle takes only its two ends, an integer
    /// control whole numbers, an enumeration only its scale points' values. Nil when nothing, and for the port's own
    /// default whatever it is (a-delay's `div` defaults to 3, which none of its labels names: a running chain holds
    /// it, and a preset saved from it must apply again).
    public func kindProblem(_ value: Double) -> String? {
        if let d = defaultValue, Double(d) == value || Float(value) == d { return nil }
        if isEnumeration, !scalePoints.isEmpty, !scalePoints.contains(where: { abs(Double($0.value) - value) < 1e-6 }) {
            return "takes only its listed values (" + scalePoints.map { "\($0.label) = \(Limits.number(Double($0.value)))" }
                .joined(separator: ", ") + ")"
        }
        if isToggle {
            let off = Double(minimum ?? 0), on = Double(maximum ?? 1)
            if value != off && value != on { return "is a switch: \(Limits.number(off)) (off) or \(Limits.number(on)) (on)" }
        } else if isInteger, value != value.rounded() {
            return "takes whole numbers"
        }
        return nil
    }

    /// `value` made one this control takes (for a control map's scaled value): the nearest scale point of an
    /// enumeration, the nearer end of a toggle, the nearest whole number for an integer control.
    public func snapped(_ value: Double) -> Double {
        if isEnumeration, let nearest = scalePoints.min(by: { abs(Double($0.value) - value) < abs(Double($1.value) - value) }) {
            return Double(nearest.value)
        }
        if isToggle {
            let off = Double(minimum ?? 0), on = Double(maximum ?? 1)
            return abs(value - off) <= abs(value - on) ? off : on
        }
        return isInteger ? value.rounded() : value
    }
}
