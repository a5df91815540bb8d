import Foundation
import Plugins
import Render
import SoundFile
import Testing
import TestSupport

/// Loudness in renders (docs/RENDER.md "Loudness and normalizing"): every report holds its output's loudness as `tandem loudness`
/// measures the file; `--normalize` reaches its target as ffmpeg's ebur128 filter measures it; a gain that would pass
/// the true-peak ceiling is refused and leaves nothing, unless a limiter is in the chain; the options and the
/// `[render]` table's keys are refused in the same words.
@Suite(.serialized) struct RenderLoudnessTests {
    static let amp = "http://lv2plug.in/plugins/eg-amp"
    static let dpl = "http://gareus.org/oss/lv2/dpl#stereo"
    static var hasAmp: Bool { PluginHost.shared.plugin(amp) != nil }
    static var hasFFmpeg: Bool { hasAmp && TestEnvironment.hasProgram("ffmpeg") }
    static var hasLimiter: Bool { hasFFmpeg && PluginHost.shared.plugin(dpl) != nil }
    static let rate = 48000

    static func tandem(_ args: [String]) throws -> (code: Int32, output: String) {
        try TestEnvironment.run([TestEnvironment.product("tandem")] + args, timeout: 120)
    }

    /// Music-like stereo: chords of three notes with their harmonics, each swelling and decaying over 2 s, the
    /// second half 10 dB down; about -25 LUFS, peaks near -12 dBFS.
    static func music(seconds: Double = 12) -> [Float] {
        let frames = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: frames * 2)
        let chords: [[Double]] = [[220, 277.18, 329.63], [196, 246.94, 293.66], [174.61, 220, 261.63]]
        for n in 0..<frames {
            let t = Double(n) / Double(rate)
            let chord = chords[Int(t / 2) % chords.count]
            let phase = t.truncatingRemainder(dividingBy: 2)
            let envelope = min(1, phase / 0.05) * exp(-phase * 1.2) * (t < seconds / 2 ? 1 : 0.316)
            var l = 0.0, r = 0.0
            for (k, f) in chord.enumerated() {
                for h in 1...3 {
                    let v = sin(2 * Double.pi * f * Double(h) * t) / Double(h * h)
                    l += v * (k == 0 ? 1 : 0.8)
                    r += v * (k == 2 ? 1 : 0.8)
                }
            }
            out[2 * n] = Float(0.05 * envelope * l)
            out[2 * n + 1] = Float(0.05 * envelope * r)
        }
        return out
    }

    /// A quiet hum (about -33 LUFS) with a click near full scale every second: normalized to -16 its true peak
    /// would be far past -1 dBTP.
    static func peaky(seconds: Double = 10) -> [Float] {
        var out = [Float](repeating: 0, count: Int(seconds) * rate * 2)
        for n in 0..<(out.count / 2) {
            let t = Double(n) / Double(rate)
            let v = Float(0.03 * sin(2 * Double.pi * 220 * t) * (0.6 + 0.4 * sin(2 * Double.pi * 0.5 * t)))
            out[2 * n] = v
            out[2 * n + 1] = v
        }
        for s in 0..<Int(seconds) {
            for k in 0..<48 {
                let v = Float(0.9 * 0.5 * (1 - cos(2 * Double.pi * Double(k) / 47)))
                out[2 * (s * rate + 1000 + k)] += v
                out[2 * (s * rate + 1000 + k) + 1] += v
            }
        }
        return out
    }

    static func file(_ samples: [Float], _ dir: URL, _ name: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try TestEnvironment.writeWAV(samples, channels: 2, sampleRate: rate, path: path, sample: .float32)
        return path
    }

    /// `tandem loudness --json FILE`'s object.
    static func loudness(_ path: String) throws -> [String: Any] {
        let r = try tandem(["loudness", "--json", path])
        try #require(r.code == 0, "\(r.output)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [[String: Any]])
        return try #require(list.first)
    }

    /// ffmpeg's ebur128 summary (one decimal): integrated LUFS and true peak dBFS.
    static func ffmpeg(_ path: String) throws -> (integrated: Double, truePeak: Double) {
        let r = try TestEnvironment.run(["ffmpeg", "-nostats", "-hide_banner", "-i", path, "-af", "ebur128=peak=true",
                                         "-f", "null", "-"])
        try #require(r.code == 0, "\(r.output)")
        let summary = try #require(r.output.range(of: "Summary:").map { String(r.output[$0.upperBound...]) })
        func value(after label: String) -> Double? {
            guard let at = summary.range(of: label) else { return nil }
            return Double(summary[at.upperBound...].trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return (try #require(value(after: "I:")), try #require(value(after: "Peak:")))
    }

    static func listing(_ dir: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
    }

    @Test(.enabled(if: hasAmp))
    func everyReportHoldsItsOutputsLoudnessAsTandemLoudnessMeasuresIt() throws {
        let dir = TestEnvironment.temporaryDirectory("render-loudness")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(Self.music(), dir, "music.wav")
        for (name, extra) in [("plain.wav", [String]()), ("int24.wav", ["--sample", "int24"]),
                              ("n16.wav", ["--normalize", "-16"])] {
            let out = dir.appendingPathComponent(name).path
            let r = try Self.tandem(["render", "--plugin", "\(Self.amp),gain=-3", "--inputs", "2", input, "-o", out] + extra)
            #expect(r.code == 0, "\(r.output)")
            let report = try RenderReport.read(from: (out as NSString).deletingPathExtension + ".json")
            let l = try #require(report.loudness)
            let file = try Self.loudness(out)
            for (key, ours) in [("integrated", l.integrated), ("range", l.range), ("truePeak", l.truePeak),
                                ("momentaryMax", l.momentaryMax), ("shortTermMax", l.shortTermMax)] {
                let measured = try #require(file[key] as? Double, "\(name): \(key)")
                #expect(abs(try #require(ours) - measured) <= 0.01, "\(name): report's \(key) \(ours ?? .nan), file \(measured)")
            }
            print("render report vs tandem loudness of \(name): I \(l.integrated ?? .nan) / \(file["integrated"] ?? "-"),"
                  + " LRA \(l.range ?? .nan) / \(file["range"] ?? "-"), TP \(l.truePeak ?? .nan) / \(file["truePeak"] ?? "-")")
        }
        // A silent output: no integrated loudness, and the note says why.
        let silent = try Self.file([Float](repeating: 0, count: Self.rate * 2 * 2), dir, "silent.wav")
        let out = dir.appendingPathComponent("silent-out.wav").path
        let r = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "2", "--tail", "0", silent, "-o", out])
        #expect(r.code == 0, "\(r.output)")
        let report = try RenderReport.read(from: (out as NSString).deletingPathExtension + ".json")
        #expect(report.loudness?.integrated == nil && report.loudness?.note?.contains("silence") == true)
    }

    /// Four channels are not one programme: the report measures them as stereo pairs, as a player's outputs are,
    /// and says so; a target for them is refused.
    @Test(.enabled(if: hasAmp))
    func fourChannelsAreMeasuredAsPairs() throws {
        let dir = TestEnvironment.temporaryDirectory("render-loudness-4")
        defer { try? FileManager.default.removeItem(at: dir) }
        let stereo = Self.music(seconds: 6)
        var four = [Float](repeating: 0, count: stereo.count * 2)
        for n in 0..<(stereo.count / 2) {
            four[4 * n] = stereo[2 * n]
            four[4 * n + 1] = stereo[2 * n + 1]
            four[4 * n + 2] = stereo[2 * n] * 0.5        // the second pair 6 dB down
            four[4 * n + 3] = stereo[2 * n + 1] * 0.5
        }
        let input = dir.appendingPathComponent("four.wav").path
        try TestEnvironment.writeWAV(four, channels: 4, sampleRate: Self.rate, path: input, sample: .float32)
        let pair = try Self.file(stereo, dir, "pair.wav")
        let out = dir.appendingPathComponent("out.wav").path
        let r = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "4", input, "-o", out])
        #expect(r.code == 0, "\(r.output)")
        let report = try RenderReport.read(from: dir.appendingPathComponent("out.json").path)
        #expect(report.loudness?.integrated == nil && report.loudness?.note?.contains("4 channels") == true
                && report.loudness?.note?.contains("stereo pairs") == true, "\(String(describing: report.loudness))")
        let groups = try #require(report.loudnessGroups)
        #expect(groups.map(\.channels) == [["1", "2"], ["3", "4"]])
        let whole = try #require(try Self.loudness(pair)["integrated"] as? Double)
        let first = try #require(groups[0].integrated), second = try #require(groups[1].integrated)
        #expect(abs(first - whole) <= 0.01 && abs(second - (whole - 6.02)) <= 0.02, "\(first) \(second) \(whole)")
        let n = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "4", input, "-o",
                                 dir.appendingPathComponent("n.wav").path, "--normalize", "-16"])
        #expect(n.code == 2 && n.output.contains("cannot normalize") && n.output.contains("4 channels"), "\(n.output)")
    }

    @Test(.enabled(if: hasFFmpeg))
    func normalizeReachesTheTargetAsFFmpegMeasuresIt() throws {
        let dir = TestEnvironment.temporaryDirectory("render-normalize")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(Self.music(), dir, "music.wav")
        for (target, expected, name) in [("-16", -16.0, "n16.wav"), ("ebu", -23.0, "ebu.flac")] {
            let out = dir.appendingPathComponent(name).path
            let r = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "2", input, "-o", out, "--normalize", target])
            #expect(r.code == 0, "\(r.output)")
            #expect(r.output.contains("note: normalized to \(String(format: "%.1f", expected)) LUFS"), "\(r.output)")
            let ff = try Self.ffmpeg(out)
            #expect(abs(ff.integrated - expected) <= 0.1, "\(name): ffmpeg measures \(ff.integrated) LUFS")
            let report = try RenderReport.read(from: (out as NSString).deletingPathExtension + ".json")
            let n = try #require(report.normalization)
            #expect(n.target == expected && n.limiter == nil && n.passes == 1 && n.appliedAt == "output")
            let measured = try #require(n.measured.integrated)
            #expect(abs(measured + n.gainDB - expected) < 1e-9, "one gain: the target less what was measured")
            #expect(abs(try #require(report.loudness?.integrated) - expected) <= 0.02)
            print("render --normalize \(target): measured \(measured), gain \(n.gainDB) dB, report"
                  + " \(report.loudness?.integrated ?? .nan), ffmpeg \(ff.integrated) LUFS, TP \(ff.truePeak) dBTP")
        }
        #expect(!Self.listing(dir).contains { $0.hasPrefix(".") }, "no spool or partial file is left: \(Self.listing(dir))")
    }

    @Test(.enabled(if: hasAmp))
    func aGainPastTheCeilingIsRefusedInWordsAndLeavesNothing() throws {
        let dir = TestEnvironment.temporaryDirectory("render-ceiling")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(Self.peaky(), dir, "peaky.wav")
        let out = dir.appendingPathComponent("out.wav").path
        let r = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "2", input, "-o", out, "--normalize", "-16"])
        #expect(r.code == 2, "\(r.output)")
        #expect(r.output.contains("cannot normalize 'out.wav' to -16.0 LUFS: it measures -3")
                && r.output.contains("past the ceiling of -1.0 dBTP; put a limiter in the chain (an LV2 plugin of class"
                                     + " lv2:LimiterPlugin), lower the target, or raise --true-peak-ceiling"), "\(r.output)")
        #expect(Self.listing(dir) == ["peaky.wav"], "nothing is left: \(Self.listing(dir))")
        // A target its peaks allow (a gain down) is met.
        let down = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "2", input, "-o", out, "--normalize", "-40"])
        #expect(down.code == 0, "a target the peaks allow: \(down.output)")
    }

    @Test(.enabled(if: hasLimiter))
    func aLimiterInTheChainTakesTheGainAndMeetsTargetAndCeiling() throws {
        let dir = TestEnvironment.temporaryDirectory("render-limiter")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(Self.peaky(), dir, "peaky.wav")
        let out = dir.appendingPathComponent("limited.wav").path
        let r = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "2", "--plugin", "\(Self.dpl),threshold=-2,truepeak=1",
                                 input, "-o", out, "--normalize", "-16"])
        #expect(r.code == 0, "\(r.output)")
        let report = try RenderReport.read(from: dir.appendingPathComponent("limited.json").path)
        let n = try #require(report.normalization)
        #expect(n.limiter == "stereo" && n.appliedAt == "input" && n.passes >= 2, "\(n)")
        let l = try #require(report.loudness)
        let integrated = try #require(l.integrated), truePeak = try #require(l.truePeak)
        #expect(abs(integrated + 16) <= 0.1 && truePeak <= -1, "\(l)")
        let ff = try Self.ffmpeg(out)
        #expect(abs(ff.integrated + 16) <= 0.1 && ff.truePeak <= -1, "ffmpeg: \(ff)")
        print("render --normalize -16 into dpl: \(n.passes) passes, gain \(n.gainDB) dB at the input; report I"
              + " \(l.integrated ?? .nan) TP \(l.truePeak ?? .nan); ffmpeg I \(ff.integrated) TP \(ff.truePeak)")
        // A limiter that holds the output below the target: refused after its passes, nothing left.
        let held = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "2", "--plugin", "\(Self.dpl),threshold=-10",
                                    input, "-o", dir.appendingPathComponent("held.wav").path, "--normalize", "-3",
                                    "--true-peak-ceiling", "0"])
        #expect(held.code == 1 && held.output.contains("cannot normalize 'held.wav' to -3.0 LUFS through the limiter"
                                                       + " 'stereo': after 8 passes it measures"), "\(held.output)")
        #expect(!Self.listing(dir).contains { $0.hasPrefix("held") || $0.hasPrefix(".") }, "\(Self.listing(dir))")
        // A bypassed limiter is no limiter.
        let bypassed = try Self.tandem(["render", "--plugin", Self.amp, "--inputs", "2",
                                        "--plugin", "\(Self.dpl),bypass", input, "-o", dir.appendingPathComponent("b.wav").path,
                                        "--normalize", "-16"])
        #expect(bypassed.code == 2 && bypassed.output.contains("put a limiter in the chain"), "\(bypassed.output)")
    }

    @Test(.enabled(if: hasAmp))
    func optionsAndTheRenderTableAreRefusedInTheSameWords() throws {
        let dir = TestEnvironment.temporaryDirectory("render-normalize-bad")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(Self.music(seconds: 1), dir, "in.wav")
        let out = dir.appendingPathComponent("o.wav").path
        let base = ["render", "--plugin", Self.amp, "--inputs", "2", input, "-o", out]
        let cases: [([String], String)] = [
            (["--normalize", "-80"], "-80 LUFS is not a loudness target: give -70 to 0 LUFS, or ebu (-23)"),
            (["--normalize", "3"], "3 LUFS is not a loudness target"),
            (["--normalize", "nan"], "nan LUFS is not a loudness target"),
            (["--normalize", ""], "'' is not a loudness target"),
            (["--normalize", "loud"], "'loud' is not a loudness target: give LUFS (-70 to 0, e.g. -16) or ebu (-23)"),
            (["--normalize", "-16", "--true-peak-ceiling", "3"], "3 dBTP is not a true-peak ceiling: give -60 to 0 dBTP"),
            (["--normalize", "-16", "--true-peak-ceiling", "nan"], "nan dBTP is not a true-peak ceiling"),
            (["--normalize", "-16", "--true-peak-ceiling", ""], "The value '' is invalid for '--true-peak-ceiling <DBTP>'"),
            (["--true-peak-ceiling", "-1"], "--true-peak-ceiling is the ceiling of a normalized render: give --normalize too"),
        ]
        for (args, words) in cases {
            let r = try Self.tandem(base + args)
            #expect(r.code == 2 && r.output.contains(words), "\(args): exit \(r.code): \(r.output)")
        }
        #expect(Self.listing(dir) == ["in.wav"])

        // The [render] table: preset check says what render says.
        for (value, words) in [("-80", "-80 LUFS is not a loudness target: give -70 to 0 LUFS, or ebu (-23)"),
                               ("\"loud\"", "'loud' is not a loudness target"),
                               ("true", "expected LUFS (e.g. -16) or \"ebu\", found true or false")] {
            let preset = dir.appendingPathComponent("p.toml").path
            try """
                [[rack]]
                name = "fx"
                inputs = 2
                outputs = 2
                [[rack.plugins]]
                uri = "\(Self.amp)"

                [render]
                normalize = \(value)
                true_peak_ceiling = -1.5
                """.write(toFile: preset, atomically: true, encoding: .utf8)
            let check = try Self.tandem(["preset", "check", preset])
            #expect(check.code == 2 && check.output.contains("render.normalize: \(words)"), "\(value): \(check.output)")
        }
        let good = dir.appendingPathComponent("good.toml").path
        try """
            [[rack]]
            name = "fx"
            inputs = 2
            outputs = 2
            [[rack.plugins]]
            uri = "\(Self.amp)"

            [render]
            normalize = "ebu"
            true_peak_ceiling = 5
            """.write(toFile: good, atomically: true, encoding: .utf8)
        let ceiling = try Self.tandem(["preset", "check", good])
        #expect(ceiling.code == 2 && ceiling.output.contains("render.true_peak_ceiling: 5 dBTP is not a true-peak ceiling"),
                "\(ceiling.output)")
        try String(contentsOfFile: good, encoding: .utf8).replacingOccurrences(of: "= 5", with: "= -2")
            .write(toFile: good, atomically: true, encoding: .utf8)
        let ok = try Self.tandem(["render", good, input, "-o", out])
        #expect(ok.code == 0 && ok.output.contains("normalized to -23.0 LUFS"), "\(ok.output)")
        let report = try RenderReport.read(from: dir.appendingPathComponent("o.json").path)
        #expect(report.normalization?.target == -23 && report.normalization?.truePeakCeiling == -2)
        #expect(ok.output.contains("  loudness: -23.0 LUFS"), "the job's line says its loudness: \(ok.output)")

        // A ceiling without a target is refused in a preset as on the command line: never a setting ignored.
        try String(contentsOfFile: good, encoding: .utf8).replacingOccurrences(of: "normalize = \"ebu\"\n", with: "")
            .write(toFile: good, atomically: true, encoding: .utf8)
        let alone = try Self.tandem(["preset", "check", good])
        #expect(alone.code == 2 && alone.output.contains("render.true_peak_ceiling: 'true_peak_ceiling' is the ceiling of a normalized render"),
                "\(alone.output)")

        // --json: the done line carries the output's loudness.
        let json = try Self.tandem(["render", "--json", "--plugin", Self.amp, "--inputs", "2", input, "-o",
                                    dir.appendingPathComponent("j.wav").path])
        let done = json.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "done" }
        let loudness = try #require(done?["loudness"] as? [String: Any], "\(json.output)")
        #expect(loudness["integrated"] is Double && loudness["truePeak"] is Double, "\(loudness)")
    }
}
