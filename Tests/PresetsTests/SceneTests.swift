import Foundation
import Presets
import Testing
import TestSupport

/// Scenes as values (issue 48): the paths' text form, names, values, the `[[scene]]` tables and the maps that recall
/// and morph them read with file, line and key and written back, a scene book's edits and a morph's arithmetic. No
/// JACK server, no plugins.
struct SceneTests {
    static let dir = TestEnvironment.temporaryDirectory("scenes")
    static let forms = "expected ENGINE/PLUGIN/SYMBOL, ENGINE/PLUGIN/@bypass, ENGINE/@mix, ENGINE/@gain or player/@player_gain"

    /// A player and a rack "fx" with plugins "amp" and "filter", ten lines: "\n[[scene]]\n" appended is line 11.
    static let rig = """
        [session]
        name = "scenes"
        [player]
        [[rack]]
        name = "fx"
        [[rack.plugins]]
        uri = "http://plugin.org.uk/swh-plugins/amp"
        [[rack.plugins]]
        uri = "http://plugin.org.uk/swh-plugins/butthigh_iir"
        name = "filter"
        """

    static func load(_ text: String) -> (Preset?, String) {
        let (p, problems) = PresetLoader.parse(text, file: "scenes.toml", baseDirectory: dir.path)
        return (p, problems.map(\.description).joined(separator: "\n"))
    }

    // MARK: Paths

    @Test func pathsReadAndWriteTheirTextForm() throws {
        let cases: [(String, String, String?, ScenePath.Target)] = [
            ("fx/amp/gain", "fx", "amp", .control("gain")), ("fx/amp/@bypass", "fx", "amp", .bypass),
            ("fx/@mix", "fx", nil, .mix), ("recorder/@gain", "recorder", nil, .gain),
            ("player/@player_gain", "player", nil, .playerGain), ("player/eq/freq_1", "player", "eq", .control("freq_1")),
        ]
        for (text, engine, plugin, target) in cases {
            let p = try ScenePath.parse(text).get()
            #expect(p.engine == engine && p.plugin == plugin && p.target == target, "\(text) → \(p)")
            #expect(p.description == text)
            #expect(ScenePath(engine: engine, plugin: plugin, target: target) == p)
            let json = try JSONEncoder().encode(p)
            #expect(String(decoding: json, as: UTF8.self) == "\"\(text.replacingOccurrences(of: "/", with: "\\/"))\"")
            #expect(try JSONDecoder().decode(ScenePath.self, from: json) == p)
        }
        #expect(ScenePath.parse("fx/amp/@bypass").map(\.isDiscrete) == .success(true))
        // Parts that do not form a path make none.
        #expect(ScenePath(engine: "fx", plugin: nil, target: .control("gain")) == nil)
        #expect(ScenePath(engine: "fx", plugin: "amp", target: .mix) == nil)
        #expect(ScenePath(engine: "fx", plugin: nil, target: .playerGain) == nil)
        #expect(ScenePath(engine: "f/x", plugin: "amp", target: .bypass) == nil)
        #expect(ScenePath.control(engine: "fx", plugin: "amp", symbol: "gain")?.description == "fx/amp/gain")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ScenePath.self, from: Data("\"fx\"".utf8)) }
    }

    @Test func badPathsSayWhatIsWrong() {
        let bad: [(String, String)] = [
            ("", "a scene's path is empty; \(Self.forms)"),
            ("fx//gain", "'fx//gain': a part between '/'s is empty; \(Self.forms)"),
            ("fx/amp/", "'fx/amp/': a part between '/'s is empty; \(Self.forms)"),
            ("fx/amp/gain/x", "'fx/amp/gain/x': too many parts (4); \(Self.forms)"),
            ("fx", "'fx': too few parts: name the engine and what of it; \(Self.forms)"),
            ("fx/amp", "'fx/amp': a control needs its plugin and symbol; \(Self.forms)"),
            ("fx/@volume", "'fx/@volume': unknown '@volume' (known: @bypass, @mix, @gain, @player_gain); \(Self.forms)"),
            ("fx/amp/@gainx", "'fx/amp/@gainx': unknown '@gainx' (known: @bypass, @mix, @gain, @player_gain); \(Self.forms)"),
            ("fx/@player_gain", "'fx/@player_gain': @player_gain is the player's own gain: player/@player_gain; \(Self.forms)"),
            ("fx/amp/@mix", "'fx/amp/@mix': '@mix' belongs to the engine, not to a plugin: fx/@mix; \(Self.forms)"),
            ("fx/@bypass", "'fx/@bypass': @bypass belongs to a plugin: ENGINE/PLUGIN/@bypass; \(Self.forms)"),
            ("@mix/fx", "'@mix/fx': the engine comes first; \(Self.forms)"),
            ("fx/@mix/gain", "'fx/@mix/gain': '@mix' comes last; \(Self.forms)"),
            ("fx/amp/ga in", "'fx/amp/ga in': a path holds no spaces or control characters; \(Self.forms)"),
            ("fx/amp/gain\n", "'fx/amp/gain\n': a path holds no spaces or control characters; \(Self.forms)"),
        ]
        for (text, words) in bad {
            switch ScenePath.parse(text) {
            case .success(let p): Issue.record("'\(text)' was read as \(p)")
            case .failure(let e): #expect(e.description == words && e.kind == .badValue, "\(text): \(e)")
            }
        }
    }

    // MARK: Names and values

    @Test func sceneNamesFollowTheRules() {
        for good in ["verse", "Verse 1", "chorus (big)", "ü", String(repeating: "x", count: 64), "a-b", "1"] {
            #expect(Scene.nameProblem(good) == nil, "\(good)")
        }
        let bad: [(String, String)] = [
            ("", "a scene's name is empty"),
            (String(repeating: "x", count: 65), "has 65 characters; at most 64"),
            ("a\nb", "the scene name 'ab' holds a control character; a name is one line of printable text"),
            ("a\u{202E}b", "holds a control character"),
            ("-verse", "the scene name '-verse' starts with '-' (it would read as an option)"),
            (" verse", "the scene name ' verse' starts or ends with a space"),
            ("verse ", "starts or ends with a space"),
        ]
        for (name, words) in bad {
            let why = Scene.nameProblem(name)
            #expect(why?.contains(words) == true, "\(name): \(String(describing: why))")
        }
    }

    @Test func valuesAreCheckedForTheirPath() throws {
        func value(_ path: String, _ v: SceneNumber) throws -> SceneValue { SceneValue(path: try ScenePath.parse(path).get(), value: v) }
        let fine: [(String, SceneNumber, Double?)] = [
            ("fx/amp/@bypass", .number(1), 1), ("fx/amp/@bypass", .text("off"), 0), ("fx/amp/@bypass", .text("on"), 1),
            ("fx/@mix", .number(0.25), 0.25), ("fx/@gain", .number(-6), -6), ("fx/@gain", .text("-6 dB"), -6),
            ("player/@player_gain", .text("3dB"), 3), ("fx/amp/gain", .number(-20), -20), ("fx/filter/cutoff", .text("5 kHz"), nil),
        ]
        for (path, v, number) in fine {
            let sv = try value(path, v)
            #expect(sv.problem == nil && sv.fixedNumber == number, "\(path) = \(v): \(String(describing: sv.problem))")
        }
        let bad: [(String, SceneNumber, String)] = [
            ("fx/amp/@bypass", .number(2), "'fx/amp/@bypass' = 2: a bypass is true or 1 (bypassed), false or 0, \"on\" or \"off\""),
            ("fx/amp/@bypass", .text("maybe"), "'fx/amp/@bypass' = 'maybe': a bypass is true or 1"),
            ("fx/@mix", .number(1.5), "'fx/@mix' = 1.5 is out of range (allowed: 0 to 1, 0 dry, 1 wet)"),
            ("fx/@mix", .text("half"), "'fx/@mix' = 'half': a mix is a number from 0 (dry) to 1 (wet)"),
            ("fx/@gain", .text("-200 dB"), "'fx/@gain' = -200 dB is out of range (allowed: -120 to 24 dB)"),
            ("player/@player_gain", .text("loud"), "'player/@player_gain' = 'loud': a gain is a number of dB or \"N dB\""),
            ("fx/amp/gain", .number(.nan), "'fx/amp/gain' = nan: a value is a finite number"),
            ("fx/amp/gain", .number(-.infinity), "'fx/amp/gain' = -inf: a value is a finite number"),
            ("fx/amp/gain", .text("  "), "'fx/amp/gain' = '  ': a value in words is not blank"),
            ("fx/amp/gain", .text("-6\ndB"), "'fx/amp/gain': a value in words is one line of printable text"),
        ]
        for (path, v, words) in bad {
            let sv = try value(path, v)
            #expect(sv.problem?.hasPrefix(words) == true && sv.fixedNumber == nil, "\(path): \(String(describing: sv.problem))")
        }
        var scene = Scene(name: "verse", values: [try value("fx/@mix", .number(1)), try value("fx/@mix", .number(0))])
        #expect(scene.problem == "scene 'verse': 'fx/@mix' is given twice")
        scene.values.removeLast()
        scene.rampMS = 20_000
        #expect(scene.problem == "scene 'verse': ramp_ms 20000 is out of range (allowed: 0 to 10000 ms)")
        scene.rampMS = nil
        #expect(scene.problem == nil && scene.ramp == Scene.defaultRampMS && Scene.defaultRampMS == 30)
        // JSON: a value is a number or a string; true reads as 1.
        let json = try JSONEncoder().encode(Scene(name: "s", values: [try value("fx/amp/gain", .text("-6 dB"))], rampMS: 5))
        #expect(try JSONDecoder().decode(Scene.self, from: json) == Scene(name: "s", values: [try value("fx/amp/gain", .text("-6 dB"))], rampMS: 5))
        let decoded = try JSONDecoder().decode(SceneNumber.self, from: Data("true".utf8))
        #expect(decoded == .number(1))
    }

    // MARK: Scene book

    @Test func aSceneBookSavesRenamesAndDeletesByName() throws {
        func scene(_ name: String, _ gain: Double) throws -> Scene {
            Scene(name: name, values: [SceneValue(path: try ScenePath.parse("fx/@gain").get(), value: .number(gain))])
        }
        var book = SceneBook()
        #expect(try book.save(scene("verse", 0)) == false)
        #expect(try book.save(scene("chorus", -6)) == false)
        #expect(try book.save(scene("Verse", -3)) == false, "names are case-sensitive")
        #expect(try book.save(scene("verse", -1)) == true, "replaced in place")
        #expect(book.names == ["verse", "chorus", "Verse"] && book.scene(named: "verse")?.values.first?.value == .number(-1))
        #expect(book.index(of: "chorus") == 1 && book.index(of: "CHORUS") == nil)
        try book.rename(from: "chorus", to: "big chorus")
        #expect(book.names == ["verse", "big chorus", "Verse"])
        #expect(throws: SceneError(.badValue, "scene 'verse' not renamed: there is a scene 'Verse' already")) {
            try book.rename(from: "verse", to: "Verse")
        }
        #expect(throws: SceneError(.notFound, "no scene 'bridge' (scenes: 'verse', 'big chorus', 'Verse')")) {
            try book.rename(from: "bridge", to: "x")
        }
        #expect(throws: SceneError(.badValue, "the scene name '-x' starts with '-' (it would read as an option)")) {
            try book.rename(from: "verse", to: "-x")
        }
        #expect(throws: SceneError(.badValue, "a scene's name is empty")) { try book.save(scene("", 0)) }
        #expect(try book.delete("Verse").name == "Verse")
        #expect(throws: SceneError(.notFound, "no scene 'Verse' (scenes: 'verse', 'big chorus')")) { try book.delete("Verse") }
        #expect(try book.find("verse").name == "verse")
        #expect(throws: SceneError(.notFound, "no scene 'x' (scenes: none)")) { try SceneBook().find("x") }
        var full = SceneBook((0..<Scene.maxScenes).map { Scene(name: "s\($0)") })
        #expect(throws: SceneError(.badValue, "scene 'one more' not saved: at most 1024 scenes")) { try full.save(Scene(name: "one more")) }
        #expect(try full.save(Scene(name: "s0", rampMS: 0)) == true, "a full book still replaces")
    }

    // MARK: Morph

    @Test func morphInterpolatesInEachScale() {
        // Linear: dB, mixes.
        #expect(SceneBook.morph(from: 0, to: -20, x: 0.5, scale: .linear) == -10)
        #expect(SceneBook.morph(from: 0, to: -20, x: 0, scale: .linear) == 0)
        #expect(SceneBook.morph(from: 0.1, to: 0.7, x: 1, scale: .linear) == 0.7, "exact at the end")
        // Logarithmic: the geometric middle, exact at both ends, both signs.
        #expect(abs(SceneBook.morph(from: 200, to: 5000, x: 0.5, scale: .logarithmic) - 1000) < 1e-9)
        #expect(SceneBook.morph(from: 200, to: 5000, x: 1, scale: .logarithmic) == 5000)
        #expect(SceneBook.morph(from: 5000, to: 200, x: 0, scale: .logarithmic) == 5000)
        #expect(abs(SceneBook.morph(from: -20, to: -2000, x: 0.5, scale: .logarithmic) + 200) < 1e-9)
        // Ends of two signs or a zero: linear.
        #expect(SceneBook.morph(from: -1, to: 1, x: 0.5, scale: .logarithmic) == 0)
        #expect(SceneBook.morph(from: 0, to: 10, x: 0.25, scale: .logarithmic) == 2.5)
        // x clamped, NaN as 0.
        #expect(SceneBook.morph(from: 200, to: 5000, x: .nan, scale: .logarithmic) == 200)
        #expect(SceneBook.morph(from: 200, to: 5000, x: 7, scale: .linear) == 5000)
        #expect(SceneBook.morph(from: 200, to: 5000, x: -1, scale: .linear) == 200)
        #expect(SceneBook.morph(from: 200, to: 5000, x: .infinity, scale: .logarithmic) == 5000)
        // A CC sweep: monotonic, within the ends, every step (0 to 127) a value of its own.
        for scale in [MorphScale.linear, .logarithmic] {
            let values = (0...127).map { SceneBook.morph(from: 20, to: 20_000, x: Double($0) / 127, scale: scale) }
            #expect(values.first == 20 && values.last == 20_000)
            #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "\(scale)")
        }
        // Discrete values switch at the middle.
        #expect(SceneBook.switchPosition == 0.5)
        #expect(SceneBook.pick(from: "a", to: "b", x: 0.5) == "b" && SceneBook.pick(from: "a", to: "b", x: 0.4999) == "a")
        #expect(SceneBook.pick(from: 0, to: 1, x: .nan) == 0)
    }

    @Test func aMorphCoversTheUnionOfBothScenesPaths() throws {
        func v(_ path: String) throws -> SceneValue { SceneValue(path: try ScenePath.parse(path).get(), value: .number(0)) }
        let a = Scene(name: "a", values: [try v("fx/amp/gain"), try v("fx/@mix"), try v("fx/amp/@bypass")])
        let b = Scene(name: "b", values: [try v("player/@player_gain"), try v("fx/amp/gain"), try v("fx/filter/cutoff")])
        #expect(SceneBook.union(a, b).map(\.description)
                == ["fx/amp/gain", "fx/@mix", "fx/amp/@bypass", "player/@player_gain", "fx/filter/cutoff"])
        #expect(SceneBook.union(b, b).map(\.description) == ["player/@player_gain", "fx/amp/gain", "fx/filter/cutoff"])
    }

    // MARK: Presets

    static let scenes = """

        [[scene]]
        name = "verse"
        values = { "fx/amp/gain" = -6.0, "fx/filter/cutoff" = "5 kHz", "fx/amp/@bypass" = true, "fx/@mix" = 1 }
        [[scene]]
        name = "big chorus"
        ramp_ms = 0
        [scene.values]
        "fx/amp/gain" = 0
        "fx/amp/@bypass" = false
        "player/@player_gain" = "-3 dB"
        "fx/@gain" = -1.5
        [[map]]
        program = true
        scenes = []
        [[map]]
        note = 60
        scene = "big chorus"
        [[map]]
        cc = 11
        morph = ["verse", "big chorus"]
        [[map]]
        program = true
        channel = 2
        scenes = ["big chorus", "verse"]
        [[map]]
        pitch_bend = true
        rack = "fx"
        morph = ["big chorus", "verse"]
        """

    @Test func sceneTablesAreReadAndWrittenBack() throws {
        let (p, problems) = Self.load(Self.rig + Self.scenes)
        #expect(problems.isEmpty, "\(problems)")
        let preset = try #require(p)
        #expect(preset.scenes.map(\.name) == ["verse", "big chorus"])
        let verse = preset.scenes[0]
        #expect(verse.line == 11 && verse.rampMS == nil && verse.ramp == 30)
        #expect(verse.values.map(\.path.description) == ["fx/amp/gain", "fx/filter/cutoff", "fx/amp/@bypass", "fx/@mix"])
        #expect(verse.values.map(\.value) == [.number(-6), .text("5 kHz"), .number(1), .number(1)])
        #expect(verse.values[0].line == 13)
        let chorus = preset.scenes[1]
        #expect(chorus.rampMS == 0 && chorus.values.count == 4 && chorus.values[1].value == .number(0))
        #expect(chorus.values.map(\.path.description) == ["fx/amp/gain", "fx/amp/@bypass", "player/@player_gain", "fx/@gain"])
        #expect(chorus.values[2].line == 20)
        #expect(preset.maps.map(\.target) == [.scene([]), .scene(["big chorus"]), .morph(from: "verse", to: "big chorus"),
                                               .scene(["big chorus", "verse"]), .morph(from: "big chorus", to: "verse")])
        #expect(preset.maps.map(\.description) == ["program -> scene", "note 60 -> scene \"big chorus\"",
                                                   "cc 11 -> morph verse \"big chorus\"", "program 2 -> scene \"big chorus\" verse",
                                                   "bend @fx -> morph \"big chorus\" verse"])
        let text = preset.toml()
        #expect(text.contains("[[scene]]\nname = \"big chorus\"\nramp_ms = 0.0\n[scene.values]\n\"fx/amp/gain\" = 0.0\n"
                              + "\"fx/amp/@bypass\" = false\n\"player/@player_gain\" = \"-3 dB\"\n"), "\(text)")
        let (written, again) = Self.load(text)
        #expect(again.isEmpty, "\(again)\n\(text)")
        #expect(written?.scenes == preset.scenes, "\(text)")
        #expect(written?.maps == preset.maps, "\(text)")
        #expect(written == preset.with(path: nil), "\(text)")
        // A scene without values set, and one written by hand with an empty table, read back alike.
        var empty = preset
        empty.scenes = [Scene(name: "blank")]
        empty.maps = []
        #expect(Self.load(empty.toml()).0?.scenes == [Scene(name: "blank")])
    }

    /// The example in docs/PRESETS.md "[[scene]]: scenes" reads as it says.
    @Test func theDocumentedExampleReads() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PRESETS.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let section = try #require(text.range(of: "## [[scene]]: scenes")).upperBound
        let start = try #require(text.range(of: "```toml\n", range: section..<text.endIndex)).upperBound
        let end = try #require(text.range(of: "```", range: start..<text.endIndex)).lowerBound
        let rig = Self.rig + "\n[[rack.plugins]]\nuri = \"http://example.org/reverb\"\n"
        let (p, problems) = Self.load(rig + text[start..<end])
        #expect(problems.isEmpty, "\(problems)")
        #expect(p?.scenes.map(\.name) == ["verse", "chorus"] && p?.scenes.last?.values.count == 4 && p?.scenes.last?.rampMS == 50)
        #expect(p?.maps.map(\.description) == ["program -> scene", "cc 11 -> morph verse chorus"])
    }

    /// Every bad `[[scene]]` is named with file, line and key.
    @Test func badSceneTablesAreNamedWithFileLineAndKey() {
        let cases: [(String, String)] = [
            ("values = {}", "scenes.toml:11: scene: every [[scene]] needs a name = \"...\""),
            ("name = \"v\"", "scenes.toml:11: scene.values: every [[scene]] needs values = {"),
            ("name = \"v\"\nvalues = 3", "scenes.toml:13: scene.values: expected a table of values"),
            ("name = \"v\"\nvalues = {}\ncolour = 1", "scenes.toml:14: scene.colour: unknown key 'colour' in [scene]"),
            ("name = \"-v\"\nvalues = {}", "scenes.toml:12: scene.name: the scene name '-v' starts with '-'"),
            ("name = 7\nvalues = {}", "scenes.toml:12: scene.name: expected a string, found an integer"),
            ("name = \"v\"\nvalues = {}\n[[scene]]\nname = \"v\"\nvalues = {}", "scenes.toml:15: scene.name: two scenes are named 'v'"),
            ("name = \"v\"\nvalues = {}\nramp_ms = -1", "scenes.toml:14: scene.ramp_ms: -1 is out of range (allowed: 0 to 10000 ms)"),
            ("name = \"v\"\nvalues = {}\nramp_ms = 1e9", "scenes.toml:14: scene.ramp_ms: 1000000000 is out of range (allowed: 0 to 10000 ms)"),
            ("name = \"v\"\nvalues = {}\nramp_ms = nan", "scenes.toml:14: 'nan' is a TOML float, but a preset takes finite numbers only"),
            ("name = \"v\"\nvalues = {}\nramp_ms = -inf", "scenes.toml:14: '-inf' is a TOML float, but a preset takes finite numbers only"),
            ("name = \"v\"\nvalues = {}\nramp_ms = \"30\"", "scenes.toml:14: scene.ramp_ms: expected a number, found a string"),
            ("name = \"v\"\nvalues = { \"fx/@volume\" = 1 }",
             "scenes.toml:13: scene.values.fx/@volume: 'fx/@volume': unknown '@volume' (known: @bypass, @mix, @gain, @player_gain); \(Self.forms)"),
            ("name = \"v\"\n[scene.values]\n\"fx/amp/gain/x\" = 1", "scenes.toml:14: scene.values.fx/amp/gain/x: 'fx/amp/gain/x': too many parts (4)"),
            ("name = \"v\"\nvalues = { \"fx/@player_gain\" = 1 }", "scene.values.fx/@player_gain: 'fx/@player_gain': @player_gain is the player's own gain"),
            ("name = \"v\"\nvalues = { \"mixer/@gain\" = 1 }",
             "scenes.toml:13: scene.values.mixer/@gain: 'mixer/@gain': no engine 'mixer' in this preset (engines: player, fx)"),
            ("name = \"v\"\nvalues = { \"recorder/amp/gain\" = 1 }", "'recorder/amp/gain': no engine 'recorder' in this preset (engines: player, fx)"),
            ("name = \"v\"\nvalues = { \"fx/drive/gain\" = 1 }",
             "scenes.toml:13: scene.values.fx/drive/gain: 'fx/drive/gain': the fx has no plugin 'drive' (plugins: amp, filter)"),
            ("name = \"v\"\nvalues = { \"player/amp/@bypass\" = true }", "'player/amp/@bypass': the player has no plugin 'amp' (plugins: none)"),
            ("name = \"v\"\nvalues = { \"fx/amp/@bypass\" = 2 }", "scene.values.fx/amp/@bypass: 'fx/amp/@bypass' = 2: a bypass is true or 1"),
            ("name = \"v\"\nvalues = { \"fx/@mix\" = 1.5 }", "scene.values.fx/@mix: 'fx/@mix' = 1.5 is out of range (allowed: 0 to 1, 0 dry, 1 wet)"),
            ("name = \"v\"\nvalues = { \"fx/amp/gain\" = [1] }", "scene.values.fx/amp/gain: expected a number, true or false, or a value in words"),
            ("name = \"v\"\nvalues = { fx.amp.gain = 1 }", "scene.values.fx: 'fx' holds a table: write each path in quotes"),
            ("name = \"v\"\nvalues = { \"fx/amp/gain\" = 1, \"fx/amp/gain\" = 2 }", "scenes.toml:13"),   // TOML: a key twice
        ]
        for (table, expected) in cases {
            let (p, text) = Self.load(Self.rig + "\n[[scene]]\n" + table)
            #expect(p == nil && text.contains(expected), "\(table)\n→ \(text)")
        }
        // Without a player, `player/...` names no engine.
        let (p, text) = Self.load(Self.rig.replacingOccurrences(of: "[player]\n", with: "")
                                  + "\n[[scene]]\nname = \"v\"\nvalues = { \"player/@player_gain\" = -3 }")
        #expect(p == nil && text.contains("'player/@player_gain': no engine 'player' in this preset (engines: fx)"), "\(text)")
        // The recorder's mix and gain belong to its insert chain: a recorder with a plugin takes them (SceneChainTests:
        // one without is refused).
        let (q, fine) = Self.load(Self.rig.replacingOccurrences(of: "[player]\n", with: "[recorder]\nchannels = 1\n"
                                                                + "[[recorder.plugins]]\nuri = \"urn:x:amp\"\nname = \"amp\"\n")
                                  + "\n[[scene]]\nname = \"v\"\nvalues = { \"recorder/@gain\" = -3 }")
        #expect(q?.scenes.first?.values.first?.path.description == "recorder/@gain" && fine.isEmpty, "\(fine)")
        let (r, root) = Self.load("scene = 3\n" + Self.rig)
        #expect(r == nil && root.contains("scenes.toml:1: scene: expected [[scene]] tables (an array of tables), found an integer"), "\(root)")
    }

    /// Maps onto scenes name scenes the preset has, from a message that can recall or morph.
    @Test func badSceneMapsAreNamedWithFileLineAndKey() {
        let twoScenes = "\n[[scene]]\nname = \"a\"\nvalues = {}\n[[scene]]\nname = \"b\"\nvalues = {}\n[[map]]\n"   // map at 17
        let cases: [(String, String)] = [
            ("note = 60\nscene = \"c\"", "scenes.toml:19: map.scene: no scene 'c' in this preset (scenes: 'a', 'b')"),
            ("program = true\nscenes = [\"a\", \"z\"]", "scenes.toml:19: map.scenes: no scene 'z' in this preset (scenes: 'a', 'b')"),
            ("cc = 1\nmorph = [\"a\", \"q\"]", "scenes.toml:19: map.morph: no scene 'q' in this preset"),
            ("cc = 1\nmorph = [\"a\"]", "scenes.toml:19: map.morph: a morph goes between two scenes: morph = [\"FROM\", \"TO\"]"),
            ("cc = 1\nmorph = [\"a\", \"a\"]", "scenes.toml:19: map.morph: a morph goes between two different scenes (both 'a')"),
            ("program = true\nmorph = [\"a\", \"b\"]", "scenes.toml:18: map.program: a morph takes a CC or pitch bend"),
            ("note = 3\nmorph = [\"a\", \"b\"]", "scenes.toml:18: map.note: a morph takes a CC or pitch bend"),
            ("pitch_bend = true\nscene = \"a\"", "scenes.toml:18: map.pitch_bend: a scene is recalled by program change, a note or a CC"),
            ("cc = 64\nscenes = []", "scenes.toml:19: map.scenes: name the scene a note or a CC recalls"),
            ("cc = 64\nscene = \"a\"\nscenes = [\"b\"]", "scenes.toml:20: map.scenes: a map drives one thing"),
            ("cc = 64\nscene = \"a\"\nengine = \"fx\"", "map.engine: 'engine' names a plugin"),
            ("cc = 64\nscene = \"a\"\nmin = 0", "map.min: min, max and curve belong to a map onto a control"),
            ("cc = 64\nmorph = \"a\"", "scenes.toml:19: map.morph: expected an array of strings, found a string"),
        ]
        for (table, expected) in cases {
            let (p, text) = Self.load(Self.rig + twoScenes + table)
            #expect(p == nil && text.contains(expected), "\(table)\n→ \(text)")
        }
        let (p, text) = Self.load(Self.rig + "\n[[map]]\nprogram = true\nscenes = []")
        #expect(p == nil && text.contains("scenes.toml:13: map.scenes: program N recalls the preset's N-th scene: the preset needs a [[scene]]"),
                "\(text)")
        // Beside a recorder the rack runs isolated: its MIDI cannot reach the session's scenes.
        let isolated = Self.rig.replacingOccurrences(of: "[player]\n", with: "[recorder]\nchannels = 1\n")
        let (q, iso) = Self.load(isolated + twoScenes + "note = 1\nscene = \"a\"")
        #expect(q == nil && iso.contains("isolate = false"), "\(iso)")
    }

    @Test func sceneMapsHaveAOneLineForm() throws {
        let texts = ["program -> scene", "program 3 -> scene verse \"big chorus\"", "note 60 -> scene verse",
                     "cc 64 @fx -> scene \"say \\\"hi\\\"\"", "cc 11 -> morph verse chorus", "bend 1 -> morph \"a b\" c",
                     "cc 2 -> scene \"back\\\\slash\""]
        for text in texts {
            let map = try ControlMap.parse(text).get()
            #expect(map.description == text, "\(text) → \(map)")
            #expect(try ControlMap.parse(map.description).get() == map)
        }
        #expect(try ControlMap.parse("note 60 -> scene \"say \\\"hi\\\"\" x").get().target == .scene(["say \"hi\"", "x"]))
        #expect(try ControlMap.parse("cc 1 -> scene a->b").get().target == .scene(["a->b"]), "after the first '->'")
        #expect(try ControlMap.parse("note 1 -> mark verse -> chorus").get().target == .marker("verse -> chorus"))
        let bad: [(String, String)] = [
            ("cc 11 -> morph a", "a morph is 'morph FROM TO', two scenes"),
            ("cc 11 -> morph a b c", "a morph is 'morph FROM TO', two scenes"),
            ("program -> morph a b", "a morph takes a CC or pitch bend"),
            ("note 3 -> morph a b", "a morph takes a CC or pitch bend"),
            ("cc 11 -> morph a a", "a morph goes between two different scenes (both 'a')"),
            ("cc 7 -> scene", "name the scene a note or a CC recalls"),
            ("bend -> scene a", "a scene is recalled by program change, a note or a CC"),
            ("note 1 -> scene \"open", "a scene's name in quotes needs its closing '\"'"),
            ("note 1 -> scene -x", "the scene name '-x' starts with '-'"),
            ("note 1 -> scene a \"\"", "a scene's name is empty"),
            ("program -> scene " + (0...128).map { "s\($0)" }.joined(separator: " "), "at most 128 scenes (programs 0 to 127)"),
        ]
        for (text, why) in bad {
            switch ControlMap.parse(text) {
            case .success(let m): Issue.record("'\(text)' was read as \(m)")
            case .failure(let e): #expect(e.description.contains(why), "\(text): \(e)")
            }
        }
    }
}

private extension Preset {
    func with(path: String?) -> Preset {
        var p = self
        p.path = path
        return p
    }
}
