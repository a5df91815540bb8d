import Foundation
import Presets
import Testing
import TestSupport

/// The MIDI keys of a preset: a rack's MIDI ports and audio inputs = 0, a plugin's channel, the session's tempo and
/// meter; read, checked and written back.
struct PresetMIDITests {
    static let dir = TestEnvironment.temporaryDirectory("presetmidi")

    @Test func midiKeysAreReadAndWrittenBack() throws {
        let (p, problems) = PresetLoader.parse("""
            [session]
            tempo = 96.5
            meter = "6/8"
            [[rack]]
            name = "keys"
            inputs = 0
            outputs = 2
            midi_inputs = ["keyboard", "pads"]
            midi_outputs = 1
            [[rack.plugins]]
            uri = "urn:synth"
            midi_channel = 10
            """, file: "midi.toml", baseDirectory: Self.dir.path)
        #expect(problems.isEmpty, "\(problems)")
        let preset = try #require(p)
        #expect(preset.session.tempo == 96.5 && preset.session.meter == SessionSection.Meter(beatsPerBar: 6, beatUnit: 8))
        let rack = try #require(preset.racks.first)
        #expect(rack.inputs == [] && rack.midiInputs == ["keyboard", "pads"] && rack.midiOutputs == ["midi_out"])
        #expect(rack.plugins.first?.midiChannel == 10)
        let text = preset.toml()
        let (written, again) = PresetLoader.parse(text, file: "written", baseDirectory: Self.dir.path)
        #expect(again.isEmpty, "\(again)\n\(text)")
        var a = preset, back = written
        a.path = nil
        back?.path = nil
        #expect(back == a, "\(text)")
        #expect(back?.session.tempo == 96.5 && back?.session.meter.description == "6/8", "\(text)")
        // The command line's form carries the channel too (an isolated rack's child gets it).
        let spec = try PluginSpec.parse(rack.plugins[0].commandLine).get()
        #expect(spec.midiChannel == 10)
    }

    @Test func badMIDIKeysAreNamed() {
        let (p, problems) = PresetLoader.parse("""
            [session]
            tempo = 0
            meter = "4/3"
            [[rack]]
            name = "keys"
            inputs = ["midi_in"]
            midi_inputs = ["midi_in"]
            [[rack.plugins]]
            uri = "urn:synth"
            midi_channel = 17
            """, file: "bad.toml", baseDirectory: Self.dir.path)
        #expect(p == nil)
        let text = problems.map(\.description).joined(separator: "\n")
        #expect(text.contains("session.tempo"), "\(text)")
        #expect(text.contains("session.meter: '4/3' is not a meter"), "\(text)")
        #expect(text.contains("port 'midi_in' is both an audio and a MIDI port"), "\(text)")
        #expect(text.contains("rack.plugins.midi_channel: expected a MIDI channel, 1 to 16"), "\(text)")
        if case .success = PluginSpec.parse("urn:x,midi_channel=0") { Issue.record("midi_channel=0 was accepted") }
    }
}
