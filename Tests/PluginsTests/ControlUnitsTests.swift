import Foundation
@testable import Plugins
import Presets
import Testing

/// Values in units ("-7.5 dB", "1.2 kHz", "250 ms", "40 %", a label, on/off), read with the plugin's own metadata,
/// and what a toggle, an integer and an enumeration control take. Pure: no plugin, no server.
struct ControlUnitsTests {
    static func port(unit: String? = nil, symbol: String? = nil, lo: Float = -100, hi: Float = 100000,
                     toggle: Bool = false, integer: Bool = false, enumeration: Bool = false,
                     points: [(String, Float)] = []) -> PluginPortInfo {
        var p = PluginPortInfo(index: 0, symbol: "c", name: "c", kind: .control, isInput: true, defaultValue: 0,
                               minimum: lo, maximum: hi, reportsLatency: false, isToggle: toggle, isInteger: integer,
                               isOptional: false)
        p.unit = unit
        p.unitSymbol = symbol
        p.isEnumeration = enumeration
        p.scalePoints = points.map { .init(label: $0.0, value: $0.1) }
        return p
    }

    static func value(_ text: String, _ port: PluginPortInfo) -> Double? {
        if case .success(let v) = ControlUnits.parse(text, port: port) { return v }
        return nil
    }

    static func refusal(_ text: String, _ port: PluginPortInfo) -> String? {
        if case .failure(let e) = ControlUnits.parse(text, port: port) { return e.message }
        return nil
    }

    @Test func textsInTheControlsUnitAreRead() {
        let db = Self.port(unit: "db", symbol: "dB"), hz = Self.port(unit: "hz", symbol: "Hz")
        let ms = Self.port(unit: "ms", symbol: "ms"), pc = Self.port(unit: "pc", symbol: "%")
        #expect(Self.value("-7.5 dB", db) == -7.5 && Self.value("-7.5dB", db) == -7.5 && Self.value("  -7.5   db ", db) == -7.5)
        #expect(Self.value("−7.5 dB", db) == -7.5, "a typographic minus")
        #expect(Self.value("1.2 kHz", hz) == 1200 && Self.value("440 Hz", hz) == 440 && Self.value("1e3 hz", hz) == 1000)
        #expect(Self.value("250 ms", ms) == 250 && Self.value("0.5 s", ms) == 500)
        #expect(Self.value("40 %", pc) == 40 && Self.value("40%", pc) == 40)
        #expect(Self.value("-7.5", db) == -7.5, "a number alone is the control's unit")
        // A unit of the plugin's own (a-eq's unit:hz0 with the symbol "Hz"): its symbol is its unit.
        let own = Self.port(unit: "http://ardour.org/lv2/units#hz0", symbol: "Hz")
        #expect(Self.value("160 Hz", own) == 160)
        #expect(Self.refusal("160 dB", own)?.contains("the control is in Hz") == true)
        #expect(Self.refusal("-7.5 Hz", db)?.contains("is in Hz; the control is in dB") == true)
        #expect(Self.refusal("3 dB", Self.port())?.contains("the control has none") == true)
        for bad in ["", "dB", "loud", "nan dB", "inf dB", "1e999 dB", "--1 dB", "1.2.3 dB"] {
            #expect(Self.value(bad, db) == nil, "'\(bad)'")
        }
    }

    @Test func labelsTogglesAndWholeNumbers() {
        let mode = Self.port(lo: 0, hi: 2, integer: true, enumeration: true, points: [("Lowpass", 0), ("Bandpass", 1), ("Highpass", 2)])
        #expect(Self.value("Bandpass", mode) == 1 && Self.value("highpass", mode) == 2)
        #expect(Self.refusal("Notch", mode)?.contains("Lowpass, Bandpass, Highpass") == true)
        #expect(ControlUnits.format(2, port: mode) == "Highpass")
        #expect(mode.kindProblem(1) == nil && mode.kindProblem(1.5)?.contains("takes only its listed values") == true)
        #expect(mode.snapped(1.4) == 1 && mode.snapped(1.6) == 2)
        let toggle = Self.port(lo: 0, hi: 1, toggle: true)
        #expect(Self.value("on", toggle) == 1 && Self.value("OFF", toggle) == 0 && Self.value("yes", toggle) == 1)
        #expect(toggle.kindProblem(0.5)?.contains("is a switch") == true && toggle.kindProblem(1) == nil)
        #expect(toggle.snapped(0.4) == 0 && toggle.snapped(0.6) == 1)
        #expect(ControlUnits.format(1, port: toggle) == "on")
        let whole = Self.port(lo: 0, hi: 16, integer: true)
        #expect(whole.kindProblem(2.5) == "takes whole numbers" && whole.kindProblem(3) == nil && whole.snapped(2.6) == 3)
        #expect(ControlUnits.format(-7.5, port: Self.port(unit: "db", symbol: "dB")) == "-7.5 dB")
        #expect(ControlUnits.format(40, port: Self.port(unit: "pc", symbol: "%")) == "40 %")
    }

    /// Whatever text comes, a number or a refusal in words: never a trap.
    @Test func anyTextIsReadOrRefused() {
        var g = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789.-+eE −%dBHzkmsn afoN\u{0}é") + ["1e308", "1e-400", "9999999999999999999999"].flatMap(Array.init)
        let ports = [Self.port(unit: "db", symbol: "dB"), Self.port(unit: "hz", symbol: "Hz"), Self.port(toggle: true),
                     Self.port(unit: "urn:x", symbol: nil), Self.port(points: [("a", 1)])]
        for _ in 0..<20000 {
            let text = String((0..<Int.random(in: 0...16, using: &g)).map { _ in alphabet.randomElement(using: &g)! })
            let port = ports.randomElement(using: &g)!
            switch ControlUnits.parse(text, port: port) {
            case .success(let v): #expect(v.isFinite, "'\(text)' gave \(v)")
            case .failure(let e): #expect(!e.message.isEmpty)
            }
        }
    }
}
