import Foundation
import Render
import Testing
import TestSupport

/// `tandem render --take` over a take report written by hand (the fields a take's recorder writes), so no JACK server
/// is needed: what the command line may change of a take and what it may not, and the chain the take gives.
@Suite(.serialized) struct RenderTakeCommandTests {
    static func tandem(_ args: [String]) throws -> (code: Int32, output: String) {
        try RenderCommandTests.tandem(args)
    }

    /// A take of noise played through the rack `fx` (amp at -6 dB), period 256, its first frame at frame 100 of its
    /// cycle, with the amp set to -12 dB at frame 24220 (the start of a cycle) while it recorded. Also a recorder's
    /// amp, for the player test. Returns the folder, the preset, the report and the source.
    static func take(_ label: String, render: String = "", player: Bool = false) throws
        -> (dir: URL, preset: String, report: String, source: String) {
        let dir = TestEnvironment.temporaryDirectory(label)
        let source = dir.appendingPathComponent("src.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 2).map { $0 * 0.5 }, channels: 2,
                                     path: source, sample: .float32)
        let amp = "{ \"uri\": \"\(RackTests.amp)\", \"name\": \"amp\", \"controls\": [{ \"symbol\": \"gain\", \"value\": -6 }],"
            + " \"bypass\": false }"
        let report = dir.appendingPathComponent("live-001.json").path
        try """
            { "session": "live", "take": 1, "sampleRate": 48000, "channels": 2, "format": "wav",
              "sampleFormat": "float32", "stems": false, "chunks": [{ "files": ["live-001.wav"], "frames": 48000 }],
              "frames": 48000, "ended": "duration", \(player ? "\"plugins\": [\(amp)]," : "")
              "playback": { "files": ["src.wav"], "startItem": 0, "startFrame": 0 },
              "controlLog": { "period": 256, "cycleOffset": 100,
                "entries": [{ "frame": 24220, "address": "/tandem/plugin/set", "args": ["fx", "amp", "gain", -12] }],
                "chains": { "fx": { "plugins": [\(amp)], "mix": 1, "gainDB": 0 } } } }
            """.write(toFile: report, atomically: true, encoding: .utf8)
        let preset = dir.appendingPathComponent("live.toml").path
        var text = """
            [session]
            name = "live"
            directory = "\(dir.path)"
            restore_plugins = false
            [recorder]
            channels = 2

            """
        if player {
            text += """
                [[recorder.plugins]]
                uri = "\(RackTests.amp)"
                name = "amp"
                [player]
                channels = 2

                """
        } else {
            text += """
                [[rack]]
                name = "fx"
                inputs = 2
                outputs = 2
                [[rack.plugins]]
                uri = "\(RackTests.amp)"
                name = "amp"

                """
        }
        try (text + render).write(toFile: preset, atomically: true, encoding: .utf8)
        return (dir, preset, report, source)
    }

    /// Bug: `--mix` and `--gain` were silently replaced by the take's start values. They start the chain, the log's
    /// changes still apply at their frames, and the report says so: the output equals the same chain over the same
    /// source with the same mix, gain, period, cycle offset and logged change, rendered from `--plugin` options.
    @Test(.enabled(if: RackTests.hasSWH))
    func aTakeRenderedWithMixAndGainStartsFromThemAndSaysSo() throws {
        let (dir, preset, report, source) = try Self.take("render-take-mix")
        let out = dir.appendingPathComponent("again.wav").path
        let r = try Self.tandem(["render", preset, "--take", report, "--mix", "0.5", "--gain=-6", "--tail", "0", "-o", out])
        #expect(r.code == 0, "\(r.output)")
        let rendered = try RenderReport.read(from: dir.appendingPathComponent("again.json").path)
        #expect(rendered.mix == 0.5 && rendered.gainDB == -6, "the chain started from --mix and --gain: \(rendered.mix), \(rendered.gainDB)")
        #expect(rendered.notes == ["mix 0.5 from --mix, over the take's start of 1",
                                   "gain -6 dB from --gain, over the take's start of 0 dB"], "\(rendered.notes ?? [])")
        #expect(r.output.contains("note: mix 0.5 from --mix"), "\(r.output)")
        #expect(rendered.applied.contains { $0.frame == 24220 && $0.address == "/tandem/plugin/set" }, "\(rendered.applied)")

        let auto = dir.appendingPathComponent("log.txt").path
        try "24220 /tandem/plugin/set fx amp gain -12\n".write(toFile: auto, atomically: true, encoding: .utf8)
        let ref = dir.appendingPathComponent("ref.wav").path
        let r2 = try Self.tandem(["render", "--plugin", "\(RackTests.amp),name=amp,gain=-6", "--name", "fx", "--inputs", "2",
                                  "--mix", "0.5", "--gain=-6", "--period", "256", "--cycle-offset", "100",
                                  "--automation", auto, "--tail", "0", source, "-o", ref])
        #expect(r2.code == 0, "\(r2.output)")
        let a = try TestEnvironment.readAudio(out).samples, b = try TestEnvironment.readAudio(ref).samples
        let differ = zip(a, b).filter { $0 != $1 }.count
        #expect(a.count == 96000 && a == b, "\(differ) of \(a.count) samples differ")
        print("render --take --mix 0.5 --gain=-6: report mix \(rendered.mix), gain \(rendered.gainDB) dB;"
              + " \(differ) of \(a.count) samples differ from the --plugin render")
    }

    /// Bug: a preset's `[render] period` (or `--set render.period=`) rendered a take at another period while keeping
    /// its cycle offset. The take's period, rate and cycle offset come before the table's (the report notes it); an
    /// option that asks for another is refused, naming the take's.
    @Test(.enabled(if: RackTests.hasSWH))
    func aTakeRendersAtItsOwnPeriodRateAndCycleOffset() throws {
        let (dir, preset, report, _) = try Self.take("render-take-period",
                                                     render: "[render]\nperiod = 1024\ncycle_offset = 7\nrate = 44100\n")
        func out(_ name: String) -> String { dir.appendingPathComponent(name).path }
        var r = try Self.tandem(["render", preset, "--take", report, "--tail", "0", "-o", out("a.wav")])
        #expect(r.code == 0, "\(r.output)")
        let a = try RenderReport.read(from: out("a.json"))
        #expect(a.period == 256 && a.cycleOffset == 100 && a.sampleRate == 48000 && a.resampledFrom == nil,
                "period \(a.period), offset \(a.cycleOffset), rate \(a.sampleRate)")
        #expect(a.notes?.contains("take 1's period of 256 frames, not the preset's [render] period = 1024") == true,
                "\(a.notes ?? [])")
        r = try Self.tandem(["render", preset, "--set", "render.period=2048", "--take", report, "--tail", "0", "-o", out("b.wav")])
        #expect(r.code == 0, "\(r.output)")
        #expect(try RenderReport.read(from: out("b.json")).period == 256)
        for (option, words) in [(["--period", "1024"], "--period 1024: take 1 ran at a period of 256 frames"),
                                (["--rate", "44100"], "--rate 44100: take 1 ran at a rate of 48000 Hz"),
                                (["--cycle-offset", "5"], "--cycle-offset 5: take 1 ran at a cycle offset of 100")] {
            r = try Self.tandem(["render", preset, "--take", report, "-o", out("c.wav")] + option)
            #expect(r.code == 2 && r.output.contains(words) && r.output.contains("would not be what was heard"),
                    "\(option): \(r.output)")
        }
        r = try Self.tandem(["render", preset, "--take", report, "--period", "256", "--cycle-offset", "100", "--rate", "48000",
                             "--tail", "0", "-o", out("d.wav")])
        #expect(r.code == 0, "the take's own values are no change: \(r.output)")
        #expect(!FileManager.default.fileExists(atPath: out("c.wav")))
        print("render --take over [render] period = 1024: period \(a.period), cycle offset \(a.cycleOffset); --period 1024 refused")
    }

    /// Bug: `--engine player --take` on a preset whose player has no plugins rendered the input unchanged.
    @Test(.enabled(if: RackTests.hasSWH))
    func aTakeThroughAPlayerWithoutPluginsIsRefused() throws {
        let (dir, preset, report, _) = try Self.take("render-take-player", player: true)
        let out = dir.appendingPathComponent("p.wav").path
        let r = try Self.tandem(["render", preset, "--engine", "player", "--take", report, "-o", out])
        #expect(r.code == 2 && r.output.contains("the player has no plugins; the take's chain is the recorder's"),
                "\(r.code): \(r.output)")
        #expect(!FileManager.default.fileExists(atPath: out))
        print("render --engine player --take (no player plugins): exit \(r.code): \(r.output.split(separator: "\n").first ?? "")")
    }
}
