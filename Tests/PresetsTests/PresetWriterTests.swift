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
            http = "[::1]:8080"
            http_origins = ["http://studio.local:8080", "https://a.example"]
            restore_plugins = false
            save_plugins = false
            on_plugin_error = "bypass"
            exit_after = "take"
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

    @Test func racksAndThePlayersClockKeysRoundTrip() throws {
        let audio = Self.dir.appendingPathComponent("clock.wav").path
        try TestEnvironment.writeWAV([0, 0], channels: 1, path: audio)
        let (p, problems) = PresetLoader.parse("""
            [session]
            directory = "\(Self.dir.path)"
            exit_after = "playback"
            [player]
            queue = ["\(audio)"]
            seek_frame = 4800
            start_at = "07:30:15"
            tail = 5
            [[rack]]
            name = "voice"
            inputs = 1
            outputs = ["left", "right"]
            gain = -3
            mix = 0.25
            isolate = true
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/amp"
            controls = { gain = -6 }
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/highpass_iir"
            [[rack]]
            name = "room"
            client = "room-client"
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/gverb"
            [[connect]]
            from = "voice:left"
            to = "room-client:in_1"
            """, file: "racks.toml", baseDirectory: Self.dir.path)
        #expect(problems.isEmpty, "\(problems)")
        let preset = try #require(p)
        #expect(preset.racks.map(\.name) == ["voice", "room"])
        #expect(preset.racks.first?.plugins.count == 2 && preset.racks.last?.plugins.count == 1)
        #expect(preset.racks.first?.inputs == ["in_1"] && preset.racks.first?.outputs == ["left", "right"])
        #expect(preset.racks.last?.inputs == nil && preset.racks.last?.client == "room-client")
        #expect(preset.player?.seekFrame == 4800 && preset.player?.startAt == "07:30:15")
        try roundTrip(preset, "racks")
    }

    @Test func badRacksAreNamedWithLineAndKey() {
        let (p, problems) = PresetLoader.parse("""
            [recorder]
            client = "voice"
            [[rack]]
            name = "voice"
            inputs = -1
            mix = 1.5
            [[rack.plugins]]
            uri = "urn:x"
            [[rack]]
            name = "voice"
            client = "other"
            outputs = "two"
            [[rack.plugins]]
            uri = "urn:y"
            [[rack]]
            name = "empty"
            """, file: "bad.toml", baseDirectory: Self.dir.path)
        #expect(p == nil)
        let text = problems.map(\.description).joined(separator: "\n")
        #expect(text.contains("bad.toml:5: rack.inputs: -1 ports is out of range"), "\(text)")
        #expect(text.contains("bad.toml:6: rack.mix:"), "\(text)")
        #expect(text.contains("rack.client: rack 'voice' and the recorder need different client names"), "\(text)")
        #expect(text.contains("rack.name: two racks are named 'voice'"), "\(text)")
        #expect(text.contains("bad.toml:12: rack.outputs: expected a port count or an array of port names"), "\(text)")
        #expect(text.contains("rack.plugins: rack 'empty' has no [[rack.plugins]]"), "\(text)")
    }
}
