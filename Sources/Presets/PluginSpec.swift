/// One LV2 plugin of an insert chain, as a preset or the command line names it.
public struct PluginSpec: Sendable, Equatable, Codable {
    /// The plugin's URI.
    public var uri: String
    /// How control messages and saved state refer to it; unique within its chain.
    public var name: String
    /// An LV2 preset (by URI) applied before `controls`.
    public var preset: String?
    /// Control values by port symbol, in the order given.
    public var controls: [Control]
    /// Bypassed: the plugin runs, its output is replaced by its input (see `PluginChain.setBypass`).
    public var bypass: Bool = false
    /// The MIDI channel (1 to 16) the plugin's MIDI inputs take from its rack's MIDI; nil: every channel.
    public var midiChannel: Int?
    /// A DSSI plugin's configure keys and values (hexter's `polyphony`), given before its program and controls.
    public var configure: [String: String] = [:]

    public struct Control: Sendable, Equatable, Codable {
        public var symbol: String
        public var value: Double
        public init(symbol: String, value: Double) {
            self.symbol = symbol
            self.value = value
        }
    }

    public init(uri: String, name: String? = nil, preset: String? = nil, controls: [Control] = [],
                bypass: Bool = false) {
        self.uri = uri
        self.name = name ?? PluginSpec.defaultName(uri: uri)
        self.preset = preset
        self.controls = controls
        self.bypass = bypass
    }

    enum CodingKeys: String, CodingKey { case uri, name, preset, controls, bypass, midiChannel, configure }

    /// Reads reports written before `bypass` existed as not bypassed.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        uri = try c.decode(String.self, forKey: .uri)
        name = try c.decode(String.self, forKey: .name)
        preset = try c.decodeIfPresent(String.self, forKey: .preset)
        controls = try c.decode([Control].self, forKey: .controls)
        bypass = try c.decodeIfPresent(Bool.self, forKey: .bypass) ?? false
        midiChannel = try c.decodeIfPresent(Int.self, forKey: .midiChannel)
        configure = try c.decodeIfPresent([String: String].self, forKey: .configure) ?? [:]
    }

    /// Writes `configure` only when there are keys (reports and the API stay as they were for every other plugin).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(uri, forKey: .uri)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(preset, forKey: .preset)
        try c.encode(controls, forKey: .controls)
        try c.encode(bypass, forKey: .bypass)
        try c.encodeIfPresent(midiChannel, forKey: .midiChannel)
        if !configure.isEmpty { try c.encode(configure, forKey: .configure) }
    }

    /// The last path or fragment component of the URI ("amp" for http://plugin.org.uk/swh-plugins/amp).
    public static func defaultName(uri: String) -> String {
        let tail = uri.split(whereSeparator: { "/#:".contains($0) }).last.map(String.init) ?? uri
        let cleaned = tail.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" }
        return cleaned.isEmpty ? "plugin" : String(cleaned).lowercased()
    }

    /// Reads the command line's form: `URI[,name=NAME][,preset=URI][,bypass][,midi_channel=N][,configure.KEY=VALUE]`
    /// `[,SYMBOL=VALUE...]` (`bypass` is a bare word, so it never collides with a control symbol).
    public static func parse(_ text: String) -> Result<PluginSpec, PluginSpecError> {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard let uri = parts.first, isURI(uri) else {
            return .failure(PluginSpecError("'\(text)': expected URI[,name=NAME][,preset=URI][,SYMBOL=VALUE...]"
                                            + " starting with a plugin URI (see `tandem plugins`)"))
        }
        var spec = PluginSpec(uri: uri)
        for part in parts.dropFirst() {
            if part == "bypass" {
                spec.bypass = true
                continue
            }
            guard let eq = part.firstIndex(of: "="), eq != part.startIndex else {
                return .failure(PluginSpecError("'\(part)' in '\(text)': expected KEY=VALUE"))
            }
            let key = String(part[..<eq]), value = String(part[part.index(after: eq)...])
            switch key {
            case "name":
                guard isName(value) else { return .failure(PluginSpecError("bad plugin name '\(value)' (letters, digits, - and _)")) }
                spec.name = value
            case "preset":
                guard isURI(value) else { return .failure(PluginSpecError("preset '\(value)' is not a URI")) }
                spec.preset = value
            case "midi_channel":
                guard let n = Int(value), midiChannels.contains(n) else {
                    return .failure(PluginSpecError("midi_channel '\(value)' of \(uri): expected 1 to 16"))
                }
                spec.midiChannel = n
            case _ where key.hasPrefix("configure."):
                let name = String(key.dropFirst("configure.".count))
                guard let why = configureProblem(name, value) else {
                    spec.configure[name] = value
                    continue
                }
                return .failure(PluginSpecError("configure key of \(uri): \(why)"))
            default:
                guard let v = Double(value), v.isFinite else {
                    return .failure(PluginSpecError("control '\(key)' of \(uri): '\(value)' is not a number"))
                }
                spec.controls.append(Control(symbol: key, value: v))
            }
        }
        return .success(spec)
    }

    /// The command line's form of this spec (the inverse of `parse`).
    public var commandLine: String {
        var parts = [uri, "name=\(name)"]
        if let preset { parts.append("preset=\(preset)") }
        if bypass { parts.append("bypass") }
        if let midiChannel { parts.append("midi_channel=\(midiChannel)") }
        parts += configure.sorted { $0.key < $1.key }.map { "configure.\($0.key)=\($0.value)" }
        parts += controls.map { "\($0.symbol)=\($0.value)" }
        return parts.joined(separator: ",")
    }

    /// Why a DSSI configure key and value cannot be given, or nil: a key is 1 to 64 visible characters, a value at
    /// most 4096 characters with no control characters (the plugin itself judges what they mean).
    public static func configureProblem(_ key: String, _ value: String) -> String? {
        if key.isEmpty || key.utf8.count > 64 || key.unicodeScalars.contains(where: { $0.value <= 32 || $0.value == 127 }) {
            return "'\(key)' is not a key (1 to 64 characters, no spaces or control characters)"
        }
        if value.utf8.count > 4096 || value.unicodeScalars.contains(where: { $0.value < 32 || $0.value == 127 }) {
            return "the value of '\(key)' is longer than 4096 characters or holds a control character"
        }
        return nil
    }

    /// The MIDI channels, as people number them.
    public static let midiChannels = 1...16

    static func isURI(_ s: String) -> Bool {
        guard let colon = s.firstIndex(of: ":"), colon != s.startIndex else { return false }
        return s[..<colon].allSatisfy { $0.isLetter || $0.isNumber || "+-.".contains($0) } && !s.contains(" ")
    }

    static func isName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
    }

    /// Gives every spec a name unique in the chain ("amp", "amp-2", ...), keeping names that were given.
    public static func uniqueNames(_ specs: [PluginSpec]) -> [PluginSpec] {
        var seen = Set<String>()
        return specs.map { spec in
            var s = spec
            var k = 2
            while seen.contains(s.name) {
                s.name = "\(spec.name)-\(k)"
                k += 1
            }
            seen.insert(s.name)
            return s
        }
    }
}

public struct PluginSpecError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
