import Foundation
import Plugins
import Presets
import Testing
import TestSupport

/// LADSPA and DSSI plugins (issue 47), without a server: the SDK's own host (`applyplugin`) and `tandem render`
/// agree to the sample over the same chains; the same plugin's LADSPA and LV2 builds give the same output; DSSI
/// synths play a MIDI file at its pitch and change program; and bad names and values are refused by `preset check`
/// and `run` in the same words. (A live rack of LADSPA plugins against render: RenderIdentityTests.)
@Suite(.serialized) struct LADSPATests {
    static var hasPeers: Bool {
        TestEnvironment.hasProgram("applyplugin") && FileManager.default.fileExists(atPath: "/usr/lib/ladspa/cmt.so")
            && FileManager.default.fileExists(atPath: "/usr/lib/ladspa/caps.so")
            && FileManager.default.fileExists(atPath: "/usr/lib/ladspa/tap_eq.so")
    }
    static var hasSynths: Bool {
        FileManager.default.fileExists(atPath: "/usr/lib/dssi/hexter.so")
            && FileManager.default.fileExists(atPath: "/usr/lib/dssi/whysynth.so")
    }

    static func tandem(_ args: [String], environment: [String: String] = [:]) throws -> (code: Int32, output: String) {
        try TestEnvironment.run([TestEnvironment.product("tandem")] + args, environment: environment, timeout: 120)
    }

    /// Writes a Standard MIDI File of one track (format 0, 480 ticks a beat) holding `track`'s events.
    static func writeMIDI(_ track: [UInt8], to path: String) throws {
        let n = UInt32(track.count)
        let length = [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        try Data(Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0x01, 0xE0] + Array("MTrk".utf8) + length + track)
            .write(to: URL(fileURLWithPath: path))
    }

    /// A 16-bit mono WAV of a 220 Hz sine under noise, 2 s: what applyplugin reads.
    static func input(_ dir: URL) throws -> String {
        let path = dir.appendingPathComponent("in.wav").path
        let sine = Signals.sine(frames: 96000, channels: 1, frequency: 220, sampleRate: 48000, peak: 0.3)
        let noise = Signals.noise(frames: 96000, channels: 1)
        try TestEnvironment.writeWAV(zip(sine, noise).map { $0 + 0.2 * $1 }, channels: 1, path: path, sample: .int16)
        return path
    }

    /// One LADSPA plugin as applyplugin takes it (library, label, every input control in port order) and as
    /// Tandem does (a `--plugin` spec).
    struct Stage: CustomStringConvertible {
        var library: String
        var label: String
        var values: [String]
        var spec: String
        var description: String { "\(library)/\(label)" }
    }

    static let chains: [[Stage]] = [
        [Stage(library: "amp", label: "amp_mono", values: ["0.5"], spec: "ladspa:amp/amp_mono,gain=0.5")],
        [Stage(library: "delay", label: "delay_5s", values: ["0.01", "0.5"],
               spec: "ladspa:delay/delay_5s,delay_seconds=0.01,dry_wet_balance=0.5")],
        [Stage(library: "filter", label: "lpf", values: ["1000"], spec: "ladspa:filter/lpf,cutoff_frequency_hz=1000")],
        [Stage(library: "cmt", label: "compress_rms", values: ["0.3", "0.5", "0.01", "0.1"],
               spec: "ladspa:cmt/compress_rms,threshold=0.3,compression_ratio=0.5,output_envelope_attack_s=0.01,output_envelope_decay_s=0.1")],
        [Stage(library: "caps", label: "Eq10", values: ["3", "0", "-6", "0", "0", "6", "0", "0", "-3", "0"],
               spec: "ladspa:caps/Eq10,31_hz=3,125_hz=-6,1_khz=6,8_khz=-3")],
        [Stage(library: "caps", label: "Compress", values: ["1", "1", "0.3", "0.5", "0.2", "0.5", "6"],
               spec: "ladspa:caps/Compress,measure=1,mode=1,threshold=0.3,strength=0.5,attack=0.2,release=0.5,gain_db=6")],
        [Stage(library: "tap_eq", label: "tap_equalizer",
               values: ["0", "6", "0", "0", "-6", "0", "0", "0", "100", "200", "400", "1000", "3000", "6000", "12000", "15000"],
               spec: "ladspa:tap_eq/tap_equalizer,band_2_gain_db=6,band_5_gain_db=-6")],
        // A chain of three, the unique ID naming the amp.
        [Stage(library: "amp", label: "amp_mono", values: ["0.8"], spec: "ladspa:1048,gain=0.8"),
         Stage(library: "filter", label: "hpf", values: ["300"], spec: "ladspa:filter/hpf,cutoff_frequency_hz=300"),
         Stage(library: "cmt", label: "compress_peak", values: ["0.2", "0.4", "0.005", "0.05"],
               spec: "ladspa:cmt/compress_peak,threshold=0.2,compression_ratio=0.4,output_envelope_attack_s=0.005,output_envelope_decay_s=0.05")],
    ]

    /// applyplugin reads 16-bit samples as s / 32768 and writes floor(x · 32768) (clipped); Tandem renders in
    /// float. Quantised applyplugin's way, every sample of Tandem's output equals applyplugin's. (Tandem's own
    /// 16-bit output rounds to nearest, as libsndfile does: within 1 LSB of applyplugin's, never more.)
    @Test(.enabled(if: hasPeers), arguments: chains)
    func applypluginAndRenderAgreeToTheSample(chain: [Stage]) throws {
        let dir = TestEnvironment.temporaryDirectory("ladspa-parity")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.input(dir)
        let reference = dir.appendingPathComponent("ref.wav").path
        var args = ["applyplugin", input, reference]
        for s in chain { args += ["/usr/lib/ladspa/\(s.library).so", s.label] + s.values }
        let a = try TestEnvironment.run(args)
        try #require(a.code == 0, "\(a.output)")
        let out = dir.appendingPathComponent("t.wav").path
        let r = try Self.tandem(["render", "--sample", "float32", "-o", out] + chain.flatMap { ["--plugin", $0.spec] } + [input])
        try #require(r.code == 0, "\(r.output)")
        let (ref, _, _) = try TestEnvironment.readAudio(reference)
        let (ours, _, _) = try TestEnvironment.readAudio(out)
        try #require(ours.count >= ref.count, "Tandem's output is the input's length at least (a tail may follow)")
        var differ = 0, largest: Float = 0
        for i in 0..<ref.count {
            let q = min(max((ours[i] * 32768).rounded(.down), -32768), 32767)
            let d = abs(q - (ref[i] * 32768).rounded())
            if d > 0 { differ += 1 }
            largest = max(largest, d)
        }
        #expect(differ == 0, "\(chain): \(differ) of \(ref.count) samples differ, by up to \(largest) LSB")
    }

    /// The same plugin in its LADSPA and LV2 builds, at the same settings (the LADSPA names from port names, the
    /// LV2 symbols its own; invada's LADSPA build takes times in ms where its LV2 build takes seconds), and how
    /// close they must come: swh's amp and lsp's 16-band graphic EQ give the same samples; swh's SC4 and invada's
    /// compressors differ by at most 1e-6 (-120 dBFS): each format's library is compiled on its own from the same
    /// source, and the envelope followers' float arithmetic comes out a few ulps apart.
    struct Pair: CustomStringConvertible, Sendable {
        var ladspa: String
        var lv2: String
        var tolerance: Float
        var description: String { String(lv2.split(separator: ",")[0]) }
    }

    static let lsp = "http://lsp-plug.in/plugins"
    static let pairs: [Pair] = [
        Pair(ladspa: "ladspa:amp_1181/amp,amps_gain_db=-6", lv2: "http://plugin.org.uk/swh-plugins/amp,gain=-6", tolerance: 0),
        Pair(ladspa: "ladspa:lsp-plugins-ladspa-1.2.5/\(lsp)/ladspa/graph_equalizer_x16_mono,band_gain_1k_g=2,band_gain_100_g=0.5",
             lv2: "\(lsp)/lv2/graph_equalizer_x16_mono,g_9=2,g_4=0.5", tolerance: 0),
        Pair(ladspa: "ladspa:sc4_1882/sc4,attack_time_ms=10,release_time_ms=100,threshold_level_db=-20,ratio_1_n=4,makeup_gain_db=3",
             lv2: "http://plugin.org.uk/swh-plugins/sc4,attack=10,release=100,threshold=-20,ratio=4,makeup_gain=3", tolerance: 1e-6),
        Pair(ladspa: "ladspa:inv_compressor/invada_mono_compressor_module_0_1,tight_sloppy=0.5,attack_ms=15,release_ms=50,threshold_db=-20,ratio=4,gain_db=3,soft_clip=1",
             lv2: "http://invadarecords.com/plugins/lv2/compressor/mono,rms=0.5,attack=0.015,release=0.05,threshold=-20,ratio=4,gain=3,noClip=1",
             tolerance: 1e-6),
    ]

    @Test(arguments: pairs)
    func aPluginsLADSPAAndLV2BuildsAgree(pair: Pair) throws {
        let ladspaName = String(pair.ladspa.split(separator: ",")[0]), lv2Name = String(pair.lv2.split(separator: ",")[0])
        guard PluginHost.shared.plugin(ladspaName) != nil, PluginHost.shared.plugin(lv2Name) != nil else {
            Issue.record("\(ladspaName) or \(lv2Name) is not installed (make deps installs them)")
            return
        }
        let dir = TestEnvironment.temporaryDirectory("ladspa-lv2")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.input(dir)
        var outputs: [[Float]] = []
        for (k, spec) in [pair.ladspa, pair.lv2].enumerated() {
            let out = dir.appendingPathComponent("o\(k).wav").path
            let r = try Self.tandem(["render", "--sample", "float32", "-o", out, "--plugin", spec, input])
            try #require(r.code == 0, "\(r.output)")
            outputs.append(try TestEnvironment.readAudio(out).samples)
        }
        try #require(outputs[0].count == outputs[1].count)
        let largest = zip(outputs[0], outputs[1]).map { abs($0 - $1) }.max() ?? 0
        #expect(largest <= pair.tolerance, "\(pair): the builds differ by up to \(largest)")
        print("figure: \(pair) LADSPA vs LV2: largest difference \(largest)")
    }

    /// hexter and WhySynth play a note of a MIDI file at its pitch (a sine fit of the fundamental), and a program
    /// change in the file is heard (the second note's spectrum is another's).
    @Test(.enabled(if: hasSynths), arguments: ["dssi:hexter/hexter", "dssi:whysynth/WhySynth"])
    func aDSSISynthPlaysAMIDIFileAndChangesProgram(synth: String) throws {
        let dir = TestEnvironment.temporaryDirectory("dssi")
        defer { try? FileManager.default.removeItem(at: dir) }
        // 120 BPM, 480 ticks a beat: A3 for a second, program 9, A3 again for a second.
        func delta(_ ticks: Int) -> [UInt8] {
            ticks < 128 ? [UInt8(ticks)] : [UInt8(0x80 | (ticks >> 7)), UInt8(ticks & 0x7F)]
        }
        var track: [UInt8] = []
        track += delta(240) + [0x90, 57, 100] + delta(960) + [0x80, 57, 0]
        track += delta(240) + [0xC0, 9] + delta(0) + [0x90, 57, 100] + delta(960) + [0x80, 57, 0]
        track += delta(0) + [0xFF, 0x2F, 0x00]
        let midi = dir.appendingPathComponent("a3.mid").path
        try Self.writeMIDI(track, to: midi)
        let out = dir.appendingPathComponent("s.wav").path
        let r = try Self.tandem(["render", "--sample", "float32", "-o", out, "--plugin", synth, midi])
        try #require(r.code == 0, "\(r.output)")
        let (samples, channels, rate) = try TestEnvironment.readAudio(out)
        let mono = stride(from: 0, to: samples.count, by: channels).map { samples[$0] }
        func segment(_ start: Double) -> [Float] { Array(mono[Int(start * Double(rate))..<Int(start * Double(rate)) + 8192]) }
        let first = segment(0.5), second = segment(1.75)
        let fit = SineFit.fit(first, sampleRate: rate, around: 220)
        #expect(abs(fit.frequency - 220) < 0.5 && fit.amplitude > 1e-3, "\(synth): \(fit)")
        // The program change: the two notes' harmonic profiles differ.
        func profile(_ x: [Float]) -> [Double] {
            (1...6).map { h in SineFit.fit(x, sampleRate: rate, around: 220 * Double(h)).amplitude }
        }
        let a = profile(first), b = profile(second)
        let distance = zip(a, b).map { abs($0 - $1) }.reduce(0, +) / max(a.reduce(0, +), 1e-9)
        #expect(distance > 0.2, "\(synth): program 9 sounds like the first program (\(a) vs \(b))")
    }

    /// A DSSI plugin's configure keys reach it (hexter's `monophonic = on`: of two held notes only the second
    /// sounds), a key it refuses is refused in its own words and one given to a LADSPA plugin is refused, at render,
    /// `preset check` and `run` alike.
    @Test(.enabled(if: hasSynths))
    func configureKeysReachTheSynthOrAreRefusedInItsWords() throws {
        let dir = TestEnvironment.temporaryDirectory("dssi-configure")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Program 9 (a vibraphone: nearly pure fundamentals), A3 then E4 held together.
        let track: [UInt8] = [0x00, 0xC0, 9, 0x00, 0x90, 57, 100, 0x81, 0x70, 0x90, 64, 100, 0x87, 0x40, 0x80, 57, 0,
                              0x00, 0x80, 64, 0, 0x00, 0xFF, 0x2F, 0x00]
        let midi = dir.appendingPathComponent("two.mid").path
        try Self.writeMIDI(track, to: midi)
        var level: [String: (Double, Double)] = [:]
        for mode in ["off", "on"] {
            let out = dir.appendingPathComponent("\(mode).wav").path
            let r = try Self.tandem(["render", "--sample", "float32", "-o", out, "--plugin",
                                     "dssi:hexter/hexter,configure.monophonic=\(mode)", midi])
            try #require(r.code == 0, "\(r.output)")
            let x = try TestEnvironment.readAudio(out).samples
            let held = Array(x[38400..<(38400 + 9600)])
            level[mode] = (SineFit.fit(held, sampleRate: 48000, around: 220).amplitude,
                           SineFit.fit(held, sampleRate: 48000, around: 329.63).amplitude)
        }
        let poly = try #require(level["off"]), mono = try #require(level["on"])
        #expect(poly.0 > 0.01 && poly.1 > 0.01, "both notes sound: \(poly)")
        #expect(mono.0 < poly.0 / 20 && mono.1 > 0.01, "monophonic: only the second: \(mono)")

        let preset = dir.appendingPathComponent("configure.toml").path
        try """
            [session]
            name = "configure"
            directory = "\(dir.path)"

            [[rack]]
            name = "synth"
            outputs = 1

            [[rack.plugins]]
            uri = "dssi:hexter/hexter"
            configure = { bogus = "1" }

            [[rack.plugins]]
            uri = "ladspa:amp/amp_mono"
            configure = { x = "1" }

            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let expected = ["configure.toml:11: rack.plugins.configure.bogus: plugin hexter: configure 'bogus' = '1': error: unrecognized configure key",
                        "configure.toml:15: rack.plugins.configure.x: plugin amp_mono: configure 'x': <ladspa:amp/amp_mono> takes no configure keys"]
        for args in [["preset", "check", preset], ["run", "--no-view", preset]] {
            let r = try Self.tandem(args)
            #expect(r.code == 2, "\(args[0]): \(r.output)")
            for line in expected { #expect(r.output.contains(line), "\(args[0]): \(line)\n\(r.output)") }
        }
    }

    /// A controller the synth maps to a port (hexter: CC 7 to its volume) moves that port: a note after CC 7 = 0 is
    /// far quieter than after CC 7 = 127. And a LADSPA plugin's `latency` output is compensated (swh's look-ahead
    /// limiter, stereo, 240 frames at 48 kHz: the render's report says so and its output lines up with its input).
    @Test(.enabled(if: hasSynths && FileManager.default.fileExists(atPath: "/usr/lib/ladspa/fast_lookahead_limiter_1913.so")))
    func mappedControllersMovePortsAndLatencyIsCompensated() throws {
        let dir = TestEnvironment.temporaryDirectory("dssi-cc")
        defer { try? FileManager.default.removeItem(at: dir) }
        var peaks: [Float] = []
        for value: UInt8 in [0, 127] {
            let track: [UInt8] = [0x00, 0xB0, 7, value, 0x64, 0x90, 57, 100, 0x87, 0x40, 0x80, 57, 0, 0x00, 0xFF, 0x2F, 0x00]
            let midi = dir.appendingPathComponent("cc\(value).mid").path
            try Self.writeMIDI(track, to: midi)
            let out = dir.appendingPathComponent("cc\(value).wav").path
            let r = try Self.tandem(["render", "--sample", "float32", "-o", out, "--plugin", "dssi:hexter/hexter", midi])
            try #require(r.code == 0, "\(r.output)")
            peaks.append(try TestEnvironment.readAudio(out).samples.map { abs($0) }.max() ?? 0)
        }
        #expect(peaks[1] > 0.05 && peaks[0] < peaks[1] / 10, "CC 7 moves hexter's volume: peaks \(peaks)")

        let input = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 2).map { $0 * 0.3 }, channels: 2, path: input,
                                     sample: .float32)
        let out = dir.appendingPathComponent("limited.wav").path
        let r = try Self.tandem(["render", "--sample", "float32", "-o", out, "--plugin",
                                 "ladspa:fast_lookahead_limiter_1913/fastLookaheadLimiter", input])
        try #require(r.code == 0, "\(r.output)")
        let report = try String(contentsOfFile: dir.appendingPathComponent("limited.json").path, encoding: .utf8)
        let compact = report.filter { !$0.isWhitespace }
        #expect(compact.contains("\"latency\":{\"frames\":240"), "\(compact.prefix(600))")
        let a = try TestEnvironment.readAudio(out).samples, b = try TestEnvironment.readAudio(input).samples
        // Noise: the lag is unambiguous.
        func correlation(_ lag: Int) -> Float { (4800..<28800).reduce(0) { $0 + a[2 * $1] * b[2 * ($1 + lag)] } }
        let best = (-300...300).max { correlation($0) < correlation($1) }
        #expect(best == 0, "the limiter's output lines up with its input (best lag \(best ?? 99))")
    }

    /// What a session saves of a DSSI synth (its program, configure keys, controls) comes back in a chain built
    /// from the saved folder alone, as after a restart.
    @Test(.enabled(if: hasSynths))
    func aSynthsProgramConfigureAndControlsAreRestored() throws {
        let dir = TestEnvironment.temporaryDirectory("dssi-state")
        defer { try? FileManager.default.removeItem(at: dir) }
        var spec = PluginSpec(uri: "dssi:hexter/hexter", preset: "program:0/9", controls: [.init(symbol: "volume", value: -6)])
        spec.configure = ["monophonic": "on"]
        let first = PluginChain(specs: [spec], inputs: 0, outputs: 1, sampleRate: 48000, period: 256, label: "synth")
        #expect(first.problems.isEmpty, "\(first.problems)")
        _ = try first.set("hexter", "volume", -9)
        try first.save(to: dir.path)
        let saved = try String(contentsOfFile: dir.appendingPathComponent("hexter/state.json").path, encoding: .utf8)
        #expect(saved.contains("\"monophonic\" : \"on\"") && saved.contains("\"volume\" : -9"), "\(saved)")
        #expect(saved.replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "\n", with: "").contains("\"program\":[0,9]"), "\(saved)")
        let again = PluginChain(specs: [PluginSpec(uri: "dssi:hexter/hexter")], inputs: 0, outputs: 1, sampleRate: 48000,
                                period: 256, label: "synth", savedState: dir.path)
        #expect(again.problems.isEmpty, "\(again.problems)")
        #expect(again.restoredFrom.contains { $0.hasSuffix("hexter/state.json") })
        #expect(try again.value("hexter", "volume") == -9)
        try again.save(to: dir.appendingPathComponent("second").path)
        let resaved = try String(contentsOfFile: dir.appendingPathComponent("second/hexter/state.json").path, encoding: .utf8)
        #expect(resaved.replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "\n", with: "").contains("\"program\":[0,9]")
                && resaved.contains("\"monophonic\" : \"on\""), "\(resaved)")
    }

    /// A live rack, over the control protocol (`tandem ctl`, OSC underneath; HTTP carries the same commands): a
    /// LADSPA control set by symbol and by port index, a DSSI synth added and a program loaded, and what cannot be
    /// refused in words (a program it lacks, with the first twelve it has; a library that is not there).
    @Test(.enabled(if: hasSynths && hasPeers))
    func aLiveRackTakesLADSPAAndDSSIOnItsSurfaces() throws {
        let server = try TestEnvironment.server("ladspa-live", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("ladspa-live")
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = 31000 + Int(getpid() % 20000)
        let rack = try TandemProcess(["rack", "--name", "fx", "--inputs", "1", "--outputs", "1", "--control-port", "\(port)",
                                      "--plugin", "ladspa:amp/amp_mono"], server: server,
                                     log: dir.appendingPathComponent("rack.log").path)
        #expect(rack.waitFor("rack fx ready"), "\(rack.output)")
        func ctl(_ words: String...) throws -> (code: Int32, output: String) {
            try Self.tandem(["ctl", "--port", "\(port)"] + words)
        }
        #expect(try ctl("plugin", "set", "fx", "amp_mono", "gain", "0.25").output.contains("ok: 0.25"))
        #expect(try ctl("plugin", "set", "fx", "amp_mono", "0", "0.3").output.contains("ok: 0.3"), "by port index")
        #expect(try ctl("plugin", "set", "fx", "amp_mono", "gain", "-1").code == 2, "below its range")
        #expect(try ctl("plugin", "add", "fx", "dssi:hexter/hexter").output.contains("ok: hexter added"))
        #expect(try ctl("plugin", "preset", "fx", "hexter", "program:0/9").output.contains("ok: preset loaded: program:0/9"))
        let missing = try ctl("plugin", "preset", "fx", "hexter", "program:0/999")
        #expect(missing.code == 2 && missing.output.contains("program:0/11 and 116 more: `tandem plugins show dssi:hexter/hexter`"),
                "\(missing.output)")
        let absent = try ctl("plugin", "add", "fx", "ladspa:nosuch/x")
        #expect(absent.code == 2 && absent.output.contains("no library nosuch.so in the ladspa folders"), "\(absent.output)")
        let list = try ctl("/tandem/plugin/list", "fx").output
        #expect(list.contains("\"uri\":\"ladspa:amp\\/amp_mono\"") && list.contains("\"value\":0.3"), "\(list)")
        rack.process.signal(SIGINT)
        #expect(rack.process.wait(timeout: 10) == 0, "\(rack.output)")
    }

    /// A library that does not load, a label it does not hold, a unique ID two libraries hold, a plugin with no
    /// audio ports, a control out of range and one it does not have, a program it does not have: `preset check`
    /// and `run` refuse each in the same words, naming the file and line (nothing starts; no server needed).
    @Test(.enabled(if: hasPeers))
    func badNamesAndValuesAreRefusedTheSameByCheckAndRun() throws {
        let dir = TestEnvironment.temporaryDirectory("ladspa-bad")
        defer { try? FileManager.default.removeItem(at: dir) }
        let folder = dir.appendingPathComponent("ladspa")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in ["amp", "amp2"] {
            try FileManager.default.copyItem(atPath: "/usr/lib/ladspa/amp.so", toPath: folder.appendingPathComponent("\(name).so").path)
        }
        try FileManager.default.copyItem(atPath: "/usr/lib/ladspa/cmt.so", toPath: folder.appendingPathComponent("cmt.so").path)
        try "not a library".write(to: folder.appendingPathComponent("broken.so"), atomically: true, encoding: .utf8)
        let preset = dir.appendingPathComponent("bad.toml").path
        try """
            [session]
            name = "bad"
            directory = "\(dir.path)"

            [[rack]]
            name = "fx"
            inputs = 1

            [[rack.plugins]]
            uri = "ladspa:broken/x"

            [[rack.plugins]]
            uri = "ladspa:amp/nosuch"

            [[rack.plugins]]
            uri = "ladspa:1048"

            [[rack.plugins]]
            uri = "ladspa:cmt/null_ci"

            [[rack.plugins]]
            uri = "ladspa:amp/amp_mono"
            controls = { gain = -5, nosuch = 1 }

            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let env = ["LADSPA_PATH": folder.path]
        let check = try Self.tandem(["preset", "check", preset], environment: env)
        let run = try Self.tandem(["run", "--no-view", preset], environment: env)
        #expect(check.code == 2 && run.code == 2, "\(check.output)\n\(run.output)")
        let expected = [
            "bad.toml:10: rack.plugins.uri: plugin x: its library \(folder.path)/broken.so cannot be loaded",
            "bad.toml:13: rack.plugins.uri: plugin nosuch: \(folder.path)/amp.so holds no plugin labelled 'nosuch' (its labels: amp_mono, amp_stereo)",
            "bad.toml:16: rack.plugins.uri: plugin 1048: the unique ID 1048 is held by ladspa:amp/amp_mono and ladspa:amp2/amp_mono; name one of them",
            "bad.toml:19: rack.plugins.uri: plugin null_ci: <ladspa:cmt/null_ci> has audio inputs (none) and outputs (none)",
            "bad.toml:23: rack.plugins.controls.gain: plugin amp_mono: control 'gain' = -5.0 is outside its range",
            "bad.toml:23: rack.plugins.controls.nosuch: plugin amp_mono: <ladspa:amp/amp_mono> has no control 'nosuch' (controls: gain)",
        ]
        for line in expected {
            #expect(check.output.contains(line), "preset check: \(line)\n\(check.output)")
            #expect(run.output.contains(line), "run: \(line)\n\(run.output)")
        }
        // Control maps onto them: a LADSPA control it lacks, a DSSI program it lacks.
        if Self.hasSynths {
            let maps = dir.appendingPathComponent("maps.toml").path
            try """
                [session]
                name = "maps"
                directory = "\(dir.path)"

                [[rack]]
                name = "fx"
                inputs = 1
                outputs = 1

                [[rack.plugins]]
                uri = "ladspa:amp/amp_mono"

                [[rack.plugins]]
                uri = "dssi:hexter/hexter"

                [[map]]
                engine = "fx"
                cc = 7
                plugin = "amp_mono"
                control = "gain"
                min = 0
                max = 2

                [[map]]
                engine = "fx"
                cc = 8
                plugin = "amp_mono"
                control = "nosuch"

                [[map]]
                engine = "fx"
                program = true
                plugin = "hexter"
                presets = ["program:0/1", "program:0/900"]

                """.write(toFile: maps, atomically: true, encoding: .utf8)
            let lines = ["maps.toml:24: map.control: <ladspa:amp/amp_mono> has no control 'nosuch' (controls: gain)",
                         "maps.toml:30: map.presets: <dssi:hexter/hexter> has no preset 'program:0/900' (it has: program:0/0,"
                            + " program:0/1, program:0/2", "program:0/11 and 116 more: `tandem plugins show dssi:hexter/hexter`)"]
            for args in [["preset", "check", maps], ["run", "--no-view", maps]] {
                let r = try Self.tandem(args, environment: env)
                #expect(r.code == 2 && !r.output.contains("maps.toml:16"), "\(args[0]): \(r.output)")
                for line in lines { #expect(r.output.contains(line), "\(args[0]): \(line)\n\(r.output)") }
            }
        }
        // The command line's spec, and a program a DSSI synth does not have.
        let bad = try Self.tandem(["render", "--plugin", "ladspa:amp/amp_mono,gain=loud", "-o", dir.appendingPathComponent("o.wav").path,
                                   try Self.input(dir)], environment: env)
        #expect(bad.code == 2 && bad.output.contains("gain"), "\(bad.output)")
        if Self.hasSynths {
            let program = try Self.tandem(["plugins", "show", "dssi:hexter/hexter"])
            #expect(program.output.contains("program:0/9"), "\(program.output)")
            // A DSSI synth where no MIDI reaches it (the recorder's chain): refused, not silence in the take.
            let recorder = dir.appendingPathComponent("synth.toml").path
            try """
                [session]
                name = "synth"
                directory = "\(dir.path)"

                [recorder]
                channels = 1

                [[recorder.plugins]]
                uri = "dssi:hexter/hexter"
                preset = "program:0/300"

                """.write(toFile: recorder, atomically: true, encoding: .utf8)
            let c = try Self.tandem(["preset", "check", recorder])
            let r = try Self.tandem(["run", "--no-view", recorder])
            let words = "synth.toml:9: recorder.plugins.uri: plugin hexter: <dssi:hexter/hexter> is an instrument (it sounds"
                + " from MIDI and takes no audio), and this chain gets no MIDI"
            let missing = "synth.toml:10: recorder.plugins.preset: plugin hexter: program <program:0/300> not found for <dssi:hexter/hexter>"
            for (what, out) in [("check", c), ("run", r)] {
                #expect(out.code == 2 && out.output.contains(words) && out.output.contains(missing), "\(what): \(out.output)")
            }
        }
    }
}
