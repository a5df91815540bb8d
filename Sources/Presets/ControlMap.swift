import Foundation

/// One control map: a MIDI message arriving on a rack's MIDI inputs, and what it does (a plugin control, a plugin's
/// bypass, an LV2 preset, a Tandem preset file, a recorder marker, a scene's recall, a morph between two scenes). A preset's `[[map]]` table, `tandem rack --map`,
/// `/tandem/map/add` and `/tandem/map/learn` all make one (docs/PRESETS.md "Control maps").
///
/// Threads: a value; any thread.
public struct ControlMap: Sendable, Equatable, CustomStringConvertible {
    /// The MIDI message that drives the map.
    public enum Source: Sendable, Equatable {
        /// A control change of this controller (0 to 127): its value, 0 to 127.
        case cc(Int)
        /// Pitch bend: its 14-bit value, 0 to 16383.
        case pitchBend
        /// Program change: the program number, 0 to 127.
        case program
        /// A note-on of this key (0 to 127, velocity above 0): the velocity.
        case note(Int)
    }

    /// How the message's value (0 to 1) becomes the control's: x is the value over its range.
    public enum Curve: String, Sendable, CaseIterable {
        /// min + (max − min)·x.
        case linear
        /// min·(max/min)^x: each step the same ratio (frequencies, times, linear gains); min and max non-zero, of one
        /// sign.
        case log
        /// min + (max − min)·(1000^x − 1)/999: slow at the bottom, 60 dB of taper (a linear gain from 0).
        case exp
    }

    public enum Target: Sendable, Equatable {
        /// A plugin control, by engine (recorder, player or a rack's name), plugin name and port symbol.
        case control(engine: String, plugin: String, symbol: String)
        /// A plugin's bypass: CC value 64 and above bypasses, below brings it back; `toggle` (and every note): each
        /// press (a note-on, a CC rising to 64 or above) flips it.
        case bypass(engine: String, plugin: String, toggle: Bool)
        /// An LV2 preset of a plugin on program change: program N loads `presets[N]`, or (none listed) the plugin's
        /// N-th preset in the order `/tandem/plugin/list` shows them (by label).
        case pluginPreset(engine: String, plugin: String, presets: [String])
        /// A Tandem preset file on program change: program N applies `files[N]` by difference.
        case presetFile([String])
        /// A marker in the running take (a note-on, a CC rising to 64 or above), with this label.
        case marker(String)
        /// A scene's recall: on program change, program N recalls the N-th scene listed, or (none listed) the
        /// preset's N-th scene; a note-on or a CC rising to 64 or above recalls the first one listed.
        case scene([String])
        /// A morph between two scenes (a CC or pitch bend): the message's value, 0 to 1, is the position from `from`
        /// (0) to `to` (1).
        case morph(from: String, to: String)
    }

    public var source: Source
    /// MIDI channel 1 to 16 (nil: any).
    public var channel: Int?
    /// Only the MIDI of this rack's inputs (nil: every rack's).
    public var rack: String?
    public var target: Target

    /// Whether the map adds markers to the running take.
    public var isMarker: Bool {
        if case .marker = target { return true }
        return false
    }
    /// The control's range for the message's range (nil: the port's minimum or maximum).
    public var minimum: Double?
    public var maximum: Double?
    public var curve: Curve = .linear
    /// The line of the `[[map]]` header; never part of equality.
    public var line: Int?

    public init(source: Source, channel: Int? = nil, rack: String? = nil, target: Target, minimum: Double? = nil,
                maximum: Double? = nil, curve: Curve = .linear) {
        self.source = source
        self.channel = channel
        self.rack = rack
        self.target = target
        self.minimum = minimum
        self.maximum = maximum
        self.curve = curve
    }

    public static func == (a: ControlMap, b: ControlMap) -> Bool {
        a.source == b.source && a.channel == b.channel && a.rack == b.rack && a.target == b.target
            && a.minimum == b.minimum && a.maximum == b.maximum && a.curve == b.curve
    }

    /// Values a map's range may name.
    public static let values: ClosedRange<Double> = -1e9...1e9

    /// The engine and plugin the target names (nil: a preset file or a marker).
    public var plugin: (engine: String, plugin: String)? {
        switch target {
        case .control(let e, let p, _), .bypass(let e, let p, _), .pluginPreset(let e, let p, _): return (e, p)
        case .presetFile, .marker, .scene, .morph: return nil
        }
    }

    /// The value for `x` (0 to 1, clamped) between `lo` and `hi` on the curve. A log curve over a range that crosses
    /// or touches 0 (refused when read) falls back to linear.
    public func value(_ x: Double, lo: Double, hi: Double) -> Double {
        let x = x.isFinite ? max(0, min(1, x)) : 0
        switch curve {
        case .linear: return lo + (hi - lo) * x
        case .log:
            guard lo * hi > 0 else { return lo + (hi - lo) * x }
            return lo * pow(hi / lo, x)
        case .exp: return lo + (hi - lo) * (pow(1000, x) - 1) / 999
        }
    }

    /// Why the source and target do not go together, or the range does not suit the curve (nil: they do).
    public var problem: String? {
        switch (target, source) {
        case (.control, .program):
            return "a control takes a CC, pitch bend or a note (its velocity), not program change"
        case (.bypass, .pitchBend), (.bypass, .program):
            return "a bypass takes a CC (64 and above bypasses) or a note (each one toggles)"
        case (.pluginPreset, .cc), (.pluginPreset, .pitchBend), (.pluginPreset, .note),
             (.presetFile, .cc), (.presetFile, .pitchBend), (.presetFile, .note):
            return "presets are chosen by program change"
        case (.marker, .pitchBend), (.marker, .program):
            return "a marker takes a note or a CC (rising to 64 or above)"
        case (.scene, .pitchBend):
            return "a scene is recalled by program change, a note or a CC (rising to 64 or above)"
        case (.morph, .program), (.morph, .note):
            return "a morph takes a CC or pitch bend (its value is the position between the two scenes)"
        default: break
        }
        if case .presetFile(let files) = target, files.isEmpty { return "name at least one preset file" }
        if case .scene(let names) = target {
            if names.isEmpty && source != .program {
                return "name the scene a note or a CC recalls (no names: the preset's N-th scene on program N)"
            }
            if names.count > 128 { return "at most 128 scenes (programs 0 to 127)" }
            if let why = names.lazy.compactMap(Scene.nameProblem).first { return why }
        }
        if case .morph(let a, let b) = target {
            if let why = Scene.nameProblem(a) ?? Scene.nameProblem(b) { return why }
            if a == b { return "a morph goes between two different scenes (both '\(a)')" }
        }
        if curve == .log, let lo = minimum, let hi = maximum, !(lo * hi > 0) {
            return "a log curve needs min and max of one sign, neither 0 (got \(Limits.number(lo))..\(Limits.number(hi)))"
        }
        var ontoControl = false
        if case .control = target { ontoControl = true }
        if !ontoControl && (minimum != nil || maximum != nil || curve != .linear) {
            return "min, max and curve belong to a map onto a control"
        }
        return nil
    }

    // MARK: Text form

    /// The text form (`tandem rack --map`, `/tandem/map/add`, `/tandem/map/list`):
    /// `SOURCE [@RACK] -> TARGET`, SOURCE one of `cc [CHANNEL] N`, `bend [CHANNEL]`, `program [CHANNEL]`,
    /// `note [CHANNEL] N`; TARGET one of `ENGINE:PLUGIN:SYMBOL [MIN..MAX] [linear|log|exp]`,
    /// `ENGINE:PLUGIN bypass|toggle`, `ENGINE:PLUGIN presets [URI...]`, `file PATH...`, `mark [LABEL]`,
    /// `scene [NAME...]`, `morph FROM TO` (a scene's name with a space or a quote in double quotes, `\"` and `\\`
    /// inside). With `defaultEngine` (a rack's own command line) ENGINE may be left out.
    public static func parse(_ text: String, defaultEngine: String? = nil) -> Result<ControlMap, ControlMapError> {
        func fail(_ why: String) -> Result<ControlMap, ControlMapError> {
            .failure(ControlMapError("'\(text)': \(why); expected e.g. \"cc 1 7 -> rack:amp:gain -40..0 linear\""))
        }
        // At the first '->': what follows may hold another (a marker's label, a scene's name).
        guard let arrow = text.range(of: "->") else {
            return fail("one '->' between the MIDI message and what it drives")
        }
        var left = text[..<arrow.lowerBound].split(whereSeparator: \.isWhitespace).map(String.init)
        let right = text[arrow.upperBound...].split(whereSeparator: \.isWhitespace).map(String.init)
        var rack: String?
        if let last = left.last, last.hasPrefix("@") {
            rack = String(last.dropFirst())
            left.removeLast()
            if rack?.isEmpty != false { return fail("'@' needs a rack's name") }
        }
        guard let kind = left.first else { return fail("no MIDI message") }
        let numbers = left.dropFirst().map { Int($0) }
        guard !numbers.contains(nil) else { return fail("the MIDI message takes whole numbers") }
        let n = numbers.compactMap { $0 }
        var channel: Int?
        let source: Source
        switch (kind, n.count) {
        case ("cc", 1), ("note", 1), ("cc", 2), ("note", 2):
            if n.count == 2 { channel = n[0] }
            guard (0...127).contains(n[n.count - 1]) else { return fail("\(kind) numbers are 0 to 127") }
            source = kind == "cc" ? .cc(n[n.count - 1]) : .note(n[n.count - 1])
        case ("bend", 0), ("bend", 1), ("program", 0), ("program", 1):
            channel = n.first
            source = kind == "bend" ? .pitchBend : .program
        default:
            return fail("the MIDI message is 'cc [CHANNEL] N', 'bend [CHANNEL]', 'program [CHANNEL]' or 'note [CHANNEL] N'")
        }
        if let c = channel, !(1...16).contains(c) { return fail("MIDI channels are 1 to 16") }
        guard let first = right.first else { return fail("nothing to drive after '->'") }
        var map = ControlMap(source: source, channel: channel, rack: rack, target: .marker(""))
        let rest = Array(right.dropFirst())
        if first == "mark" {
            map.target = .marker(rest.joined(separator: " "))
        } else if first == "file" {
            map.target = .presetFile(rest)
        } else if first == "scene" || first == "morph" {
            let words = text[arrow.upperBound...].drop(while: \.isWhitespace).dropFirst(first.count)
            guard let names = Self.sceneNames(words) else {
                return fail("a scene's name in quotes needs its closing '\"'")
            }
            if first == "scene" {
                map.target = .scene(names)
            } else {
                guard names.count == 2 else { return fail("a morph is 'morph FROM TO', two scenes") }
                map.target = .morph(from: names[0], to: names[1])
            }
        } else {
            var names = first.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            let isControl = rest.first.map { $0 != "bypass" && $0 != "toggle" && $0 != "presets" } ?? true
            let wanted = isControl ? 3 : 2
            if names.count == wanted - 1, let engine = defaultEngine { names.insert(engine, at: 0) }
            guard names.count == wanted, !names.contains(where: \.isEmpty) else {
                return fail(isControl ? "a control is ENGINE:PLUGIN:SYMBOL" : "a plugin is ENGINE:PLUGIN")
            }
            if isControl {
                map.target = .control(engine: names[0], plugin: names[1], symbol: names[2])
                for word in rest {
                    if let curve = Curve(rawValue: word) {
                        map.curve = curve
                    } else if let r = word.range(of: ".."), let lo = Double(word[..<r.lowerBound]),
                              let hi = Double(word[r.upperBound...]) {
                        guard values.contains(lo), values.contains(hi) else {
                            return fail("the range's ends must be numbers from -1e9 to 1e9")
                        }
                        (map.minimum, map.maximum) = (lo, hi)
                    } else {
                        return fail("'\(word)' is neither a range MIN..MAX nor a curve (linear, log, exp)")
                    }
                }
            } else if rest[0] == "presets" {
                map.target = .pluginPreset(engine: names[0], plugin: names[1], presets: Array(rest.dropFirst()))
            } else {
                guard rest.count == 1 else { return fail("'\(rest[0])' takes nothing after it") }
                map.target = .bypass(engine: names[0], plugin: names[1], toggle: rest[0] == "toggle")
            }
        }
        if let why = map.problem { return fail(why) }
        return .success(map)
    }

    /// The text form, which `parse` reads back to the same map.
    public var description: String {
        var s: String
        let ch = channel.map { "\($0) " } ?? ""
        switch source {
        case .cc(let n): s = "cc \(ch)\(n)"
        case .note(let n): s = "note \(ch)\(n)"
        case .pitchBend: s = "bend" + (channel.map { " \($0)" } ?? "")
        case .program: s = "program" + (channel.map { " \($0)" } ?? "")
        }
        if let rack { s += " @\(rack)" }
        s += " -> "
        switch target {
        case .control(let e, let p, let symbol):
            s += "\(e):\(p):\(symbol)"
            if let lo = minimum, let hi = maximum { s += " \(Limits.number(lo))..\(Limits.number(hi))" }
            if curve != .linear { s += " \(curve.rawValue)" }
        case .bypass(let e, let p, let toggle): s += "\(e):\(p) " + (toggle ? "toggle" : "bypass")
        case .pluginPreset(let e, let p, let presets): s += (["\(e):\(p)", "presets"] + presets).joined(separator: " ")
        case .presetFile(let files): s += (["file"] + files).joined(separator: " ")
        case .marker(let label): s += label.isEmpty ? "mark" : "mark \(label)"
        case .scene(let names): s += (["scene"] + names.map(Self.sceneWord)).joined(separator: " ")
        case .morph(let a, let b): s += "morph \(Self.sceneWord(a)) \(Self.sceneWord(b))"
        }
        return s
    }

    /// Scene names as the text form writes them: bare words, or in double quotes (`\"`, `\\` inside); nil when a
    /// quote is not closed.
    static func sceneNames(_ text: Substring) -> [String]? {
        var names: [String] = []
        var i = text.startIndex
        while i < text.endIndex {
            if text[i].isWhitespace {
                i = text.index(after: i)
                continue
            }
            var name = ""
            if text[i] == "\"" {
                i = text.index(after: i)
                var closed = false
                while i < text.endIndex {
                    let c = text[i]
                    i = text.index(after: i)
                    if c == "\"" {
                        closed = true
                        break
                    }
                    if c == "\\", i < text.endIndex {
                        name.append(text[i])
                        i = text.index(after: i)
                    } else {
                        name.append(c)
                    }
                }
                guard closed else { return nil }
            } else {
                while i < text.endIndex, !text[i].isWhitespace {
                    name.append(text[i])
                    i = text.index(after: i)
                }
            }
            names.append(name)
        }
        return names
    }

    /// A scene's name as one word of the text form.
    static func sceneWord(_ name: String) -> String {
        guard name.isEmpty || name.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "\\" }) else { return name }
        return "\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

public extension Preset {
    /// A rack a map listens to has a MIDI input (`midi_in`), even when none of its plugins takes MIDI (its MIDI
    /// inputs unnamed). The loader does this for the preset's maps; a session that keeps its maps over a preset
    /// without any does it again for them.
    mutating func giveMappedRacksMIDIInputs() {
        for i in racks.indices where racks[i].midiInputs == nil
            && maps.contains(where: { $0.rack == nil || $0.rack == racks[i].name }) {
            racks[i].midiInputs = ["midi_in"]
        }
    }
}

public struct ControlMapError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}
