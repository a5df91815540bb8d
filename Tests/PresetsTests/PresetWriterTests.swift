import Testing
import Foundation
@testable import Presets
import TestSupport

/// A preset written back as TOML reads to the same value (the running setup saved, then applied again, changes
/// nothing).
@Suite struct PresetWriterTests {
    static let dir = TestEnvironment.temporaryDirectory("presetwriter")

    func roundTrip(_ preset: Preset, _ label: String) throws {
        let text = preset.toml()
        let (back, problems) = PresetLoader.parse(text, file: "\(label) (written)", baseDirectory: Self.dir.path)
        #expect(problems.isEmpty, "\(label): \(problems)\n\(text)")
        var a = preset, b = try #require(back, "\(label):\n\(text)")
        a.path = nil
        b.path = nil
        #expect(a == b, "\(label) differs after a round trip:\n\(text)")
    }

    @Test func everyShippedPresetRoundTrips() throws {
        let folder = PresetTests.shippedPresetsFolder
        for f in try FileManager.default.contentsOfDirectory(atPath: folder.path) where f.hasSuffix(".toml") {
            let (preset, problems) = PresetLoader.load(path: folder.appendingPathComponent(f).path)
            #expect(problems.isEmpty, "\(f): \(problems)")
            if let preset { try roundTrip(preset, f) }
        }
    }

    @Test func everyKeyRoundTrips() throws {
        let audio = Self.dir.appendingPathComponent("a \"quoted\" file.wav").path
        try TestEnvironment.writeWAV([0, 0], channels: 1, path: audio)
        let (p, problems) = PresetLoader.parse("""
            [session]
            name = "gig \\\\ \\"two\\""
            server = "live"
            directory = "\(Self.dir.path)"
            on_server_loss = "stop"
            on_disk_error = "continue"
            on_manual_disconnect = "repair"
            control_port = 9951
            restore_plugins = false
            [recorder]
            client = "rec"
            ports = ["a", "b c"]
            format = "flac"
            sample = "int24"
            quality = 0.7
            template = "{session}-{take:04}"
            stems = true
            rotate = 60.5
            rotate_size = "2G"
            preroll = 2.5
            duration = 3600
            stop_at = "23:30"
            start = "transport"
            ring = 8
            dry = true
            [[recorder.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/amp"
            name = "level"
            controls = { gain = -6.25 }
            [[recorder.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/highpass_iir"
            preset = "urn:example:preset"
            bypass = true
            [player]
            client = "play"
            channels = 4
            queue = ["\(audio.replacingOccurrences(of: "\"", with: "\\\""))"]
            loop = "all"
            gain = -6
            map = [1, 1, 0, 2]
            quality = "very-high"
            seek = 1.5
            start = "with-recorder"
            ring = 3
            [[connect]]
            from = "/system:capture_[12]/"
            to = "rec:*"
            mode = "all"
            [[connect]]
            from = "play:out_1"
            to = "system:playback_1"
            """, file: "full.toml", baseDirectory: Self.dir.path)
        #expect(problems.isEmpty, "\(problems)")
        #expect(p?.recorder?.plugins.map(\.bypass) == [false, true])
        try roundTrip(try #require(p), "every key")

        var waiting = Preset()
        waiting.session.directory = Self.dir.path
        waiting.session.serverWaitSeconds = 5
        waiting.recorder = RecorderSection()
        try roundTrip(waiting, "server_wait")
    }
}
