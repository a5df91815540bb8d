import Foundation

/// Where one value of a scene goes: a plugin control, a plugin's bypass, a chain's dry/wet mix or output gain, or the
/// player's own gain (docs/PRESETS.md "Scenes"). Its text form, which `parse` reads and `description` writes:
///
/// - `ENGINE/PLUGIN/SYMBOL`: a plugin control, by port symbol;
/// - `ENGINE/PLUGIN/@bypass`: the plugin's bypass;
/// - `ENGINE/@mix`: the chain's dry/wet mix, 0 to 1;
/// - `ENGINE/@gain`: the chain's output gain, dB;
/// - `player/@player_gain`: the player's own gain, dB.
///
/// ENGINE is `recorder`, `player` or a rack's name; PLUGIN the plugin's name in that chain. No part is empty or holds
/// a space, a control character or a '/'.
///
/// Threads: a value; any thread.
public struct ScenePath: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What of the engine the path names.
    public enum Target: Sendable, Hashable {
        /// A plugin control, by its port symbol.
        case control(String)
        /// The plugin's bypass (1: bypassed).
        case bypass
        /// The chain's dry/wet mix (0: the input alone, 1: the chain's output alone).
        case mix
        /// The chain's output gain in dB.
        case gain
        /// The player's own gain in dB (engine `player` only).
        case playerGain
    }

    /// `recorder`, `player` or a rack's name.
    public let engine: String
    /// The plugin's name in the engine's chain (nil for the chain's and the player's values).
    public let plugin: String?
    public let target: Target

    /// The words after '@' and what they name.
    static let words: [(String, Target)] = [("bypass", .bypass), ("mix", .mix), ("gain", .gain),
                                             ("player_gain", .playerGain)]

    /// A path from its parts, or nil when they do not form one (`parse` says why of the text form).
    public init?(engine: String, plugin: String?, target: Target) {
        let path = ScenePath(unchecked: engine, plugin, target)
        guard case .success(let read) = Self.parse(path.description), read == path else { return nil }
        self = path
    }

    private init(unchecked engine: String, _ plugin: String?, _ target: Target) {
        self.engine = engine
        self.plugin = plugin
        self.target = target
    }

    /// Reads the text form, or says what is wrong with it in words that quote it (a `SceneError` of kind `badValue`;
    /// its `description` is the words).
    public static func parse(_ text: String) -> Result<ScenePath, SceneError> {
        let forms = "expected ENGINE/PLUGIN/SYMBOL, ENGINE/PLUGIN/@bypass, ENGINE/@mix, ENGINE/@gain or player/@player_gain"
        func fail(_ why: String) -> Result<ScenePath, SceneError> { .failure(SceneError(.badValue, "'\(text)': \(why); \(forms)")) }
        if text.isEmpty { return .failure(SceneError(.badValue, "a scene's path is empty; \(forms)")) }
        if text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            return fail("a path holds no spaces or control characters")
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.contains(where: \.isEmpty) { return fail("a part between '/'s is empty") }
        if parts.count > 3 { return fail("too many parts (\(parts.count))") }
        if parts.count < 2 { return fail("too few parts: name the engine and what of it") }
        let engine = parts[0]
        if engine.hasPrefix("@") { return fail("the engine comes first") }
        let last = parts[parts.count - 1]
        if parts.count == 3 && parts[1].hasPrefix("@") { return fail("'\(parts[1])' comes last") }
        guard last.hasPrefix("@") else {
            if parts.count == 2 { return fail("a control needs its plugin and symbol") }
            return .success(ScenePath(unchecked: engine, parts[1], .control(last)))
        }
        let word = String(last.dropFirst())
        guard let target = words.first(where: { $0.0 == word })?.1 else {
            return fail("unknown '\(last)' (known: " + words.map { "@" + $0.0 }.joined(separator: ", ") + ")")
        }
        switch (target, parts.count) {
        case (.bypass, 3): return .success(ScenePath(unchecked: engine, parts[1], .bypass))
        case (.bypass, _): return fail("@bypass belongs to a plugin: ENGINE/PLUGIN/@bypass")
        case (_, 3): return fail("'\(last)' belongs to the engine, not to a plugin: \(engine)/\(last)")
        case (.playerGain, _) where engine != "player":
            return fail("@player_gain is the player's own gain: player/@player_gain")
        default: return .success(ScenePath(unchecked: engine, nil, target))
        }
    }

    /// The text form.
    public var description: String {
        let tail: String
        switch target {
        case .control(let symbol): tail = symbol
        case .bypass: tail = "@bypass"
        case .mix: tail = "@mix"
        case .gain: tail = "@gain"
        case .playerGain: tail = "@player_gain"
        }
        return ([engine] + (plugin.map { [$0] } ?? []) + [tail]).joined(separator: "/")
    }

    /// A control.
    public static func control(engine: String, plugin: String, symbol: String) -> ScenePath? {
        ScenePath(engine: engine, plugin: plugin, target: .control(symbol))
    }

    /// Whether the value switches rather than glides whatever the plugin says (a bypass). A control's own kind
    /// (toggle, enumeration, integer) is the plugin's, known where the chain is built.
    public var isDiscrete: Bool { target == .bypass }

    /// Encoded as its text form.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        switch Self.parse(text) {
        case .success(let p): self = p
        case .failure(let why):
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: why.description))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// A scene's value as written: a number, or a text in the control's unit ("-20 dB", "5 kHz") or one of its labels,
/// read with the plugin's own metadata where the chain is built. For `@bypass`, 1 or "on" bypasses, 0 or "off" brings
/// the plugin back. A TOML `true`/`false` is read as the number 1/0.
public enum SceneNumber: Sendable, Equatable, Codable, CustomStringConvertible {
    case number(Double)
    case text(String)

    public var description: String {
        switch self {
        case .number(let d): return Limits.number(d)
        case .text(let t): return "'\(t)'"
        }
    }

    public var number: Double? {
        if case .number(let d) = self { return d }
        return nil
    }

    /// A JSON number or string (true and false read as 1 and 0).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let d = try? c.decode(Double.self) {
            self = .number(d)
        } else if let b = try? c.decode(Bool.self) {
            self = .number(b ? 1 : 0)
        } else {
            self = .text(try c.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .number(let d): try c.encode(d)
        case .text(let t): try c.encode(t)
        }
    }
}

/// One value of a scene: where it goes and what it is.
public struct SceneValue: Sendable, Equatable, Codable {
    public var path: ScenePath
    public var value: SceneNumber
    /// The line it was written on in a preset; never part of equality, never encoded.
    public var line: Int?

    public init(path: ScenePath, value: SceneNumber, line: Int? = nil) {
        self.path = path
        self.value = value
        self.line = line
    }

    enum CodingKeys: String, CodingKey { case path, value }

    public static func == (a: SceneValue, b: SceneValue) -> Bool { a.path == b.path && a.value == b.value }

    /// The value as a number where its unit is the path's own: `@bypass` (1 bypassed, 0 not), `@mix` (0 to 1),
    /// `@gain` and `@player_gain` (dB, a number or "N dB"), and a control given as a number. Nil for a control given
    /// in words (read with the plugin's units) and for a value `problem` refuses.
    public var fixedNumber: Double? {
        guard problem == nil else { return nil }
        switch (path.target, value) {
        case (.bypass, .text(let t)): return t == "on" ? 1 : 0
        case (.gain, .text(let t)), (.playerGain, .text(let t)): return Self.decibels(t)
        case (_, .number(let d)): return d
        case (.control, .text), (.mix, .text): return nil
        }
    }

    /// What is wrong with the value for its path (nil: nothing that can be told without the plugin; a control's
    /// range and words are checked against the plugin where the chain is built).
    public var problem: String? {
        let at = "'\(path)'"
        switch (path.target, value) {
        case (_, .number(let d)) where !d.isFinite:
            return "\(at) = \(Limits.number(d)): a value is a finite number"
        case (.bypass, .number(let d)):
            return d == 0 || d == 1 ? nil
                : "\(at) = \(Limits.number(d)): a bypass is true or 1 (bypassed), false or 0, \"on\" or \"off\""
        case (.bypass, .text(let t)):
            return t == "on" || t == "off" ? nil
                : "\(at) = '\(t)': a bypass is true or 1 (bypassed), false or 0, \"on\" or \"off\""
        case (.mix, .number(let d)):
            return Limits.mix.contains(d) ? nil
                : "\(at) = \(Limits.number(d)) is out of range (allowed: \(Limits.describe(Limits.mix)), 0 dry, 1 wet)"
        case (.mix, .text(let t)):
            return "\(at) = '\(t)': a mix is a number from 0 (dry) to 1 (wet)"
        case (.gain, _), (.playerGain, _):
            let d: Double
            switch value {
            case .number(let n): d = n
            case .text(let t):
                guard let n = Self.decibels(t) else { return "\(at) = '\(t)': a gain is a number of dB or \"N dB\"" }
                d = n
            }
            return Limits.gainDB.contains(d) ? nil
                : "\(at) = \(Limits.number(d)) dB is out of range (allowed: \(Limits.describe(Limits.gainDB, unit: " dB")))"
        case (.control, .number): return nil
        case (.control, .text(let t)):
            if t.trimmingCharacters(in: .whitespaces).isEmpty { return "\(at) = '\(t)': a value in words is not blank" }
            if t.utf8.count > 1024 { return "\(at): a value in words has \(t.utf8.count) bytes; at most 1024" }
            if t.unicodeScalars.contains(where: Scene.isControlCharacter) {
                return "\(at): a value in words is one line of printable text"
            }
            return nil
        }
    }

    /// "-6 dB", "-6dB" or "-6": dB; nil when not.
    static func decibels(_ text: String) -> Double? {
        var t = text.trimmingCharacters(in: .whitespaces)
        if t.lowercased().hasSuffix("db") { t = String(t.dropLast(2)).trimmingCharacters(in: .whitespaces) }
        guard let d = Double(t), d.isFinite else { return nil }
        return d
    }
}

/// A named set of values across the session (docs/PRESETS.md "Scenes"): recalled, continuous controls glide to theirs
/// over `rampMS` in their own scale; toggles, enumerations and bypasses switch under a short crossfade.
///
/// Threads: a value; any thread.
public struct Scene: Sendable, Equatable, Codable {
    public var name: String
    /// In written order; each path once.
    public var values: [SceneValue]
    /// The glide in milliseconds (nil: `defaultRampMS`).
    public var rampMS: Double?
    /// The local wall-clock times at which the session recalls it by itself (`SceneTimes`, as written; nil: none).
    public var at: [String]?
    /// The line of the `[[scene]]` header in a preset; never part of equality, never encoded.
    public var line: Int?

    public init(name: String, values: [SceneValue] = [], rampMS: Double? = nil) {
        self.name = name
        self.values = values
        self.rampMS = rampMS
    }

    enum CodingKeys: String, CodingKey { case name, values, rampMS = "ramp_ms", at }

    public static func == (a: Scene, b: Scene) -> Bool {
        a.name == b.name && a.values == b.values && a.rampMS == b.rampMS && a.at == b.at
    }

    /// The glide when a scene names none.
    public static let defaultRampMS = 30.0
    /// The glides a scene or a recall may ask for, in milliseconds.
    public static let rampRange: ClosedRange<Double> = 0...10_000
    /// The longest name, in characters.
    public static let nameLength: ClosedRange<Int> = 1...64
    /// The most scenes a preset or a running session keeps.
    public static let maxScenes = 1024

    /// The glide this scene's recall takes.
    public var ramp: Double { rampMS ?? Self.defaultRampMS }

    /// The value for `path`, if the scene has one.
    public func value(_ path: ScenePath) -> SceneNumber? { values.first { $0.path == path }?.value }

    /// The paths, in written order.
    public var paths: [ScenePath] { values.map(\.path) }

    /// What is wrong with `name` as a scene's name (nil: nothing): 1 to 64 characters, no control character, not
    /// starting with '-' (it would read as an option), not starting or ending with a space.
    public static func nameProblem(_ name: String) -> String? {
        if name.isEmpty { return "a scene's name is empty" }
        if name.count > nameLength.upperBound {
            return "the scene name '\(name.prefix(24))…' has \(name.count) characters; at most \(nameLength.upperBound)"
        }
        if name.unicodeScalars.contains(where: isControlCharacter) {
            return "the scene name '\(String(name.unicodeScalars.filter { !isControlCharacter($0) }))' holds a control "
                + "character; a name is one line of printable text"
        }
        if name.hasPrefix("-") { return "the scene name '\(name)' starts with '-' (it would read as an option)" }
        if name.first?.isWhitespace == true || name.last?.isWhitespace == true {
            return "the scene name '\(name)' starts or ends with a space"
        }
        return nil
    }

    /// What is wrong with the scene as a whole (nil: nothing that can be told without the chains): its name, its
    /// ramp, its times, a path given twice, a value its path refuses.
    public var problem: String? {
        if let why = Self.nameProblem(name) { return why }
        if let r = rampMS, !Self.rampRange.contains(r) {
            return "scene '\(name)': ramp_ms \(Limits.number(r)) is out of range (allowed: "
                + "\(Limits.describe(Self.rampRange, unit: " ms")))"
        }
        if let at, case .failure(let why) = SceneTimes.parse(at) { return "scene '\(name)': at: \(why)" }
        var seen = Set<ScenePath>()
        for v in values {
            if !seen.insert(v.path).inserted { return "scene '\(name)': '\(v.path)' is given twice" }
            if let why = v.problem { return "scene '\(name)': \(why)" }
        }
        return nil
    }

    /// C0, DEL and C1 controls, the line and paragraph separators and the bidirectional overrides and isolates: what
    /// the command model refuses in any text (`CommandText`), so a name a preset takes is one every surface takes.
    static func isControlCharacter(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

/// Why a scene edit or lookup was refused, in words that name the scene.
public struct SceneError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No scene by that name.
        case notFound
        /// A name or a value not taken, a name already in use, too many scenes.
        case badValue
    }
    public let kind: Kind
    public let description: String
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// How a morph goes from one value to another.
public enum MorphScale: Sendable, Equatable {
    /// a + (b − a)·x: dB, mixes, linear controls.
    case linear
    /// a·(b/a)^x, each step the same ratio: frequencies, times (ends of one sign, neither 0; else linear).
    case logarithmic
}

/// A preset's or a running session's scenes, in order (program N recalls the N-th), and the arithmetic of a morph.
/// Names are unique and compared case-sensitively.
///
/// Threads: a value; any thread.
public struct SceneBook: Sendable, Equatable, Codable {
    public private(set) var scenes: [Scene]

    /// A book of `scenes` as they are (a preset's, checked when read).
    public init(_ scenes: [Scene] = []) { self.scenes = scenes }

    public var names: [String] { scenes.map(\.name) }
    public var isEmpty: Bool { scenes.isEmpty }

    public func index(of name: String) -> Int? { scenes.firstIndex { $0.name == name } }
    public func scene(named name: String) -> Scene? { index(of: name).map { scenes[$0] } }

    /// The scene called `name`, or why not in words that list the scenes there are.
    public func find(_ name: String) throws(SceneError) -> Scene {
        guard let s = scene(named: name) else { throw missing(name) }
        return s
    }

    /// Keeps `scene`: in place of the one of its name, else at the end. Returns whether it replaced one.
    @discardableResult
    public mutating func save(_ scene: Scene) throws(SceneError) -> Bool {
        if let why = scene.problem { throw SceneError(.badValue, why) }
        if let i = index(of: scene.name) {
            scenes[i] = scene
            return true
        }
        guard scenes.count < Scene.maxScenes else {
            throw SceneError(.badValue, "scene '\(scene.name)' not saved: at most \(Scene.maxScenes) scenes")
        }
        scenes.append(scene)
        return false
    }

    /// Gives scene `from` the name `to` (in its place in the order).
    public mutating func rename(from: String, to: String) throws(SceneError) {
        guard let i = index(of: from) else { throw missing(from) }
        if from == to { return }
        if let why = Scene.nameProblem(to) { throw SceneError(.badValue, why) }
        if index(of: to) != nil { throw SceneError(.badValue, "scene '\(from)' not renamed: there is a scene '\(to)' already") }
        scenes[i].name = to
    }

    /// Removes scene `name` and returns it.
    @discardableResult
    public mutating func delete(_ name: String) throws(SceneError) -> Scene {
        guard let i = index(of: name) else { throw missing(name) }
        return scenes.remove(at: i)
    }

    func missing(_ name: String) -> SceneError {
        // At most 12 names: a book of a thousand would make an answer no datagram carries.
        let listed = names.prefix(12).map { "'\($0)'" }.joined(separator: ", ")
            + (names.count > 12 ? " and \(names.count - 12) more" : "")
        return SceneError(.notFound, "no scene '\(name)' (scenes: " + (scenes.isEmpty ? "none" : listed) + ")")
    }

    // MARK: Morph

    /// Where discrete values (toggles, enumerations, bypass, a value in words) switch from the first scene's to the
    /// second's: at x >= 0.5.
    public static let switchPosition = 0.5

    /// The value at `x` (clamped to 0...1; NaN counts as 0) from `from` (x = 0) to `to` (x = 1), exact at both ends.
    /// Logarithmic needs ends of one sign, neither 0, and falls back to linear otherwise. Ends that are not finite
    /// switch as a discrete value does.
    public static func morph(from a: Double, to b: Double, x: Double, scale: MorphScale) -> Double {
        let x = x.isNaN ? 0 : max(0, min(1, x))
        guard a.isFinite, b.isFinite else { return x >= switchPosition ? b : a }
        if x == 0 || a == b { return a }
        if x == 1 { return b }
        if scale == .logarithmic, a * b > 0 {
            let v = a * pow(b / a, x)
            return min(max(v, min(a, b)), max(a, b))
        }
        return (1 - x) * a + x * b
    }

    /// A discrete value at `x`: `from` below `switchPosition`, `to` from it on (NaN counts as 0).
    public static func pick<T>(from a: T, to b: T, x: Double) -> T { !x.isNaN && x >= switchPosition ? b : a }

    /// The paths either scene sets: `a`'s in its order, then those only `b` has, in `b`'s. A path one scene lacks
    /// takes the running rig's value for that end of a morph.
    public static func union(_ a: Scene, _ b: Scene) -> [ScenePath] {
        var seen = Set<ScenePath>()
        return (a.values + b.values).map(\.path).filter { seen.insert($0).inserted }
    }
}
