import Foundation
@testable import Presets
import SoundFile
import Testing
import TestSupport

/// The `[render]` table: every key read, written back to the same value, and each wrong one named with line and key.
@Suite struct RenderPresetTests {
    static let dir = TestEnvironment.temporaryDirectory("renderpreset")

    @Test func everyRenderKeyIsReadAndRoundTrips() throws {
        let audio = Self.dir.appendingPathComponent("take.wav").path
        try TestEnvironment.writeWAV([0, 0], channels: 1, path: audio)
        let auto = Self.dir.appendingPathComponent("auto.txt").path
        try "0 /tandem/plugin/bypass fx amp 1\n".write(toFile: auto, atomically: true, encoding: .utf8)
        let (p, problems) = PresetLoader.parse("""
            [[rack]]
            name = "fx"
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/amp"
            name = "amp"
            [render]
            engine = "fx"
            period = 256
            rate = 44100
            resample_quality = "very-high"
            cycle_offset = 17
            preroll = 0.5
            tail = 4.5
            tail_limit = 60
            format = "flac"
            sample = "int16"
            quality = 0.75
            inputs = ["take.wav"]
            output = "out/{input}-{take:02}.flac"
            jobs = 2
            job_timeout = 30
            automation = "auto.txt"
            [[render.event]]
            at = 48000
            command = "/tandem/plugin/set"
            args = ["fx", "amp", "gain", -6.5]
            [[render.event]]
            at = "1.5 s"
            midi = [0x90, 60, 0x64]
            [[render.event]]
            at = 2.25
            command = "/tandem/plugin/set"
            args = ["fx", "amp", "gain", "-3 dB"]
            """, file: "render.toml", baseDirectory: Self.dir.path)
        #expect(problems.isEmpty, "\(problems)")
        let r = try #require(p?.render)
        #expect(r.engine == "fx" && r.period == 256 && r.sampleRate == 44100 && r.resampleQuality == .veryHigh)
        #expect(r.cycleOffset == 17 && r.prerollSeconds == 0.5 && r.tail == .seconds(4.5) && r.tailLimitSeconds == 60)
        #expect(r.format == AudioFormat(container: .flac, sample: .int16, quality: 0.75))
        #expect(r.inputs == [audio] && r.output == Self.dir.path + "/out/{input}-{take:02}.flac" && r.jobs == 2)
        #expect(r.jobTimeoutSeconds == 30)
        #expect(r.automationFile == auto)
        #expect(r.events.count == 3)
        #expect(r.events[0].at == .frame(48000) && r.events[0].args.last == .number(-6.5))
        #expect(r.events[1].at == .seconds(1.5) && r.events[1].midi == [0x90, 60, 100])
        #expect(r.events[2].at == .seconds(2.25) && r.events[2].args.last == .text("-3 dB"))
        let text = try #require(p).toml()
        let (back, again) = PresetLoader.parse(text, file: "written", baseDirectory: Self.dir.path)
        #expect(again.isEmpty, "\(again)\n\(text)")
        #expect(back?.render == r, "\(text)")
    }

    @Test func badRenderKeysAreNamedWithLineAndKey() {
        let (p, problems) = PresetLoader.parse("""
            [[rack]]
            name = "fx"
            [[rack.plugins]]
            uri = "urn:x"
            [render]
            engine = "recorder"
            period = 100000
            cycle_offset = 2000
            tail = true
            jobs = 0
            job_timeout = 0.5
            inputs = ["missing.wav"]
            output = "out/{chunk}.wav"
            hue = 3
            [[render.event]]
            command = "/tandem/plugin/set"
            [[render.event]]
            at = -5
            midi = [300]
            [[render.event]]
            at = "soon"
            command = "plugin set"
            """, file: "bad.toml", baseDirectory: Self.dir.path)
        #expect(p == nil)
        let text = problems.map(\.description).joined(separator: "\n")
        for words in ["bad.toml:6: render.engine: 'recorder' is not a chain of this preset (chains: fx)",
                      "render.period: 100000 is out of range", "render.cycle_offset", "render.tail: expected \"silence\" or seconds",
                      "render.jobs: 0 is out of range", "render.job_timeout: 0.5 is out of range", "render.inputs: 'missing.wav' does not exist",
                      "render.output: the output takes {input}", "unknown key 'hue' in [render]",
                      "render.event.at: an event needs 'at'", "render.event.at: -5 is before the input's start",
                      "render.event.midi: a MIDI byte is 0 to 255", "render.event.at: 'soon' is not a time",
                      "render.event.command: 'plugin set' is not an address"] {
            #expect(text.contains(words), "\(words)\n\(text)")
        }
    }
}
