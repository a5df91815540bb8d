import Foundation
import Presets
import Testing
import TestSupport

/// Control maps as values: the text form (`tandem rack --map`, `/tandem/map/add`), the curves, the `[[map]]` tables
/// read, checked with file, line and key, and written back.
struct ControlMapTests {
    static let dir = TestEnvironment.temporaryDirectory("controlmap")

    static let rack = """
        [session]
        name = "maps"
        [[rack]]
        name = "fx"
        [[rack.plugins]]
        uri = "http://plugin.org.uk/swh-plugins/amp"
        [[rack.plugins]]
        uri = "http://drobilla.net/plugins/mda/Detune"
        name = "det"
        """

    @Test func theTextFormReadsBackToTheSameMap() throws {
        let texts = [
            "cc 1 7 -> fx:amp:gain -40..0", "cc 7 @fx -> fx:amp:gain 0.001..1 log", "bend 2 -> fx:amp:gain -70..70 exp",
            "note 10 60 -> fx:amp:gain", "cc 64 -> fx:amp bypass", "note 36 -> fx:amp toggle", "program -> fx:det presets",
            "program 3 -> fx:det presets urn:a urn:b", "program -> file /a.toml /b.toml", "note 1 60 -> mark verse 2",
            "cc 20 -> mark",
        ]
        for text in texts {
            let map = try ControlMap.parse(text).get()
            #expect(map.description == text, "\(text) → \(map)")
            #expect(try ControlMap.parse(map.description).get() == map)
        }
        // A rack's own command line may leave its name out.
        let own = try ControlMap.parse("cc 1 7 -> amp:gain 0..1 exp", defaultEngine: "fx").get()
        #expect(own.target == .control(engine: "fx", plugin: "amp", symbol: "gain") && own.channel == 1
                && own.source == .cc(7) && own.minimum == 0 && own.maximum == 1 && own.curve == .exp)
    }

    @Test func badTextFormsSayWhatIsWrong() {
        let bad: [(String, String)] = [
            ("cc 1 7 fx:amp:gain", "'->'"), ("cc 17 7 -> fx:amp:gain", "channels are 1 to 16"),
            ("cc 128 -> fx:amp:gain", "0 to 127"), ("cc -> fx:amp:gain", "MIDI message"),
            ("cc 7 -> amp:gain", "ENGINE:PLUGIN:SYMBOL"), ("cc 7 -> fx:amp:gain 0..nan", "-1e9 to 1e9"), ("cc 7 -> fx:amp:gain loud", "neither a range"),
            ("cc 7 -> fx:amp:gain -1e300..0", "-1e9 to 1e9"), ("cc 7 -> fx:amp:gain -1..1 log", "one sign"),
            ("program -> fx:amp:gain", "not program change"), ("cc 7 -> fx:det presets", "program change"),
            ("bend -> fx:amp bypass", "a bypass takes"), ("program -> file", "at least one preset file"),
            ("cc 7 @ -> fx:amp:gain", "rack's name"), ("cc 1.5 -> fx:amp:gain", "whole numbers"),
        ]
        for (text, why) in bad {
            switch ControlMap.parse(text) {
            case .success(let m): Issue.record("'\(text)' was read as \(m)")
            case .failure(let e): #expect(e.description.contains(why), "\(text): \(e)")
            }
        }
    }

    @Test func curvesGoFromMinToMax() {
        var m = ControlMap(source: .cc(1), target: .control(engine: "e", plugin: "p", symbol: "s"))
        #expect(m.value(0, lo: -40, hi: 0) == -40 && m.value(1, lo: -40, hi: 0) == 0 && m.value(0.5, lo: -40, hi: 0) == -20)
        m.curve = .log
        #expect(abs(m.value(0.5, lo: 20, hi: 20000) - 632.4555) < 1e-3)   // the geometric middle
        #expect(abs(m.value(1, lo: 20, hi: 20000) - 20000) < 1e-9)
        m.curve = .exp
        #expect(m.value(0, lo: 0, hi: 1) == 0 && abs(m.value(1, lo: 0, hi: 1) - 1) < 1e-12)
        #expect(abs(m.value(0.5, lo: 0, hi: 1) - (pow(1000, 0.5) - 1) / 999) < 1e-12)
        // Out of range and NaN positions stay within the ends.
        #expect(m.value(.nan, lo: 0, hi: 1) == 0 && m.value(7, lo: 0, hi: 1) == 1)
    }

    @Test func mapTablesAreReadAndWrittenBack() throws {
        let recorder = "\n[recorder]\nchannels = 1\n"
        let (p, problems) = PresetLoader.parse(Self.rack.replacingOccurrences(of: "[[rack]]", with: recorder + "[[rack]]\nisolate = false") + """

            [[map]]
            cc = 7
            channel = 1
            engine = "fx"
            plugin = "amp"
            control = "gain"
            min = -40
            max = 0.0
            [[map]]
            cc = 64
            rack = "fx"
            engine = "fx"
            plugin = "amp"
            bypass = true
            toggle = true
            [[map]]
            program = true
            engine = "fx"
            plugin = "det"
            [[map]]
            program = true
            channel = 16
            engine = "fx"
            plugin = "det"
            presets = ["http://drobilla.net/plugins/mda/presets#Detune-symphonic"]
            [[map]]
            pitch_bend = true
            engine = "fx"
            plugin = "amp"
            control = "gain"
            curve = "exp"
            [[map]]
            note = 60
            marker = "chorus"
            [[map]]
            note = 61
            marker = true
            """, file: "maps.toml", baseDirectory: Self.dir.path)
        #expect(problems.isEmpty, "\(problems)")
        let preset = try #require(p)
        #expect(preset.maps.count == 7)
        #expect(preset.maps.first?.description == "cc 1 7 -> fx:amp:gain -40..0")
        #expect(preset.maps.first?.line == 14, "\(String(describing: preset.maps.first?.line))")
        #expect(preset.maps[1].description == "cc 64 @fx -> fx:amp toggle")
        #expect(preset.maps[2].target == .pluginPreset(engine: "fx", plugin: "det", presets: []))
        #expect(preset.maps[5].target == .marker("chorus") && preset.maps[6].target == .marker(""))
        let text = preset.toml()
        let (written, again) = PresetLoader.parse(text, file: "written", baseDirectory: Self.dir.path)
        #expect(again.isEmpty, "\(again)\n\(text)")
        #expect(written?.maps == preset.maps, "\(text)")
    }

    /// Every bad `[[map]]` is named with file, line and key, all at once.
    @Test func badMapTablesAreNamedWithFileLineAndKey() {
        let cases: [(String, String)] = [
            ("cc = 7\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\nmin = nan", "maps.toml:15"),   // not a TOML number at all
            ("cc = 7\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\nmax = 1e12", "maps.toml:15: map.max: 1000000000000 is out of range"),
            ("cc = -1\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"", "maps.toml:11: map.cc: -1 is out of range"),
            ("cc = 7\nchannel = 0\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"", "maps.toml:12: map.channel: 0 is out of range"),
            ("cc = 7\nengine = \"fx\"\nplugin = \"nope\"\ncontrol = \"gain\"", "maps.toml:13: map.plugin: the fx has no plugin 'nope' (plugins: amp, det)"),
            ("cc = 7\nengine = \"mixer\"\nplugin = \"amp\"\ncontrol = \"gain\"", "maps.toml:12: map.engine: no engine 'mixer'"),
            ("cc = 7\nnote = 3\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"", "map.note: a map listens to one MIDI message"),
            ("engine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"", "maps.toml:10: map: every [[map]] needs a MIDI message"),
            ("cc = 7\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\nbypass = true", "map.bypass: a map drives one thing"),
            ("cc = 7\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\ncurve = \"cubic\"", "map.curve: 'cubic' is not allowed"),
            ("cc = 7\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\nmin = -1\nmax = 1\ncurve = \"log\"", "map.curve: a log curve needs"),
            ("program = true\nfiles = [\"missing.toml\"]", "map.files: no preset file"),
            ("note = 60\nmarker = \"x\"", "map.marker: a marker goes into a take"),
            ("cc = 7\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\ncolour = 1", "map.colour: unknown key 'colour'"),
            ("cc = 7\nrack = \"other\"\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"", "map.rack: no rack 'other'"),
            ("program = true\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"", "map.program: a control takes a CC"),
            ("cc = 7\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\ntoggle = true", "map.toggle: 'toggle' goes with bypass"),
        ]
        for (table, expected) in cases {
            let (p, problems) = PresetLoader.parse(Self.rack + "\n[[map]]\n" + table, file: "maps.toml",
                                                   baseDirectory: Self.dir.path)
            let text = problems.map(\.description).joined(separator: "\n")
            #expect(p == nil && text.contains(expected), "\(table)\n→ \(text)")
        }
    }

    /// Beside a recorder a rack runs isolated by default: a map from its MIDI to anything but its own plugins and
    /// markers could never fire, so it is refused.
    @Test func anIsolatedRacksMIDIReachesOnlyItsOwnPluginsAndMarkers() throws {
        try "[player]\n".write(toFile: Self.dir.appendingPathComponent("other.toml").path, atomically: true, encoding: .utf8)
        let isolated = Self.rack.replacingOccurrences(of: "[[rack]]", with: "[recorder]\nchannels = 1\n[[rack]]")
        let (p, problems) = PresetLoader.parse(isolated + "\n[[map]]\nprogram = true\nfiles = [\"other.toml\"]\n",
                                               file: "iso.toml", baseDirectory: Self.dir.path)
        #expect(p == nil && problems.contains { $0.key == "map" && $0.message.contains("isolate = false") }, "\(problems)")
        let (m, marks) = PresetLoader.parse(isolated + "\n[[map]]\nnote = 60\nmarker = true\n", file: "iso.toml",
                                            baseDirectory: Self.dir.path)
        #expect(m != nil && marks.isEmpty, "\(marks)")
        let (q, fine) = PresetLoader.parse(Self.rack.replacingOccurrences(of: "[[rack]]", with: "[recorder]\nchannels = 1\n[[rack]]")
                                           + "\n[[map]]\ncc = 1\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\"\n",
                                           file: "iso.toml", baseDirectory: Self.dir.path)
        #expect(q != nil && fine.isEmpty, "\(fine)")
    }
}
