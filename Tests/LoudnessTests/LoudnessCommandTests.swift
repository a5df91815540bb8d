import Foundation
import SoundFile
import Testing
import TestSupport

/// `tandem loudness` as a pipeline's check runs it: the table and the JSON, the exit codes (0 met, 1 a file missed
/// a check, 2 bad input) and the words of every refusal.
@Suite(.serialized) struct LoudnessCommandTests {
    static let rate = 48000

    /// Interleaved 1 kHz sine frames at `dbfs` on every channel.
    static func sine(seconds: Double, dbfs: Double, channels: Int = 2) -> [Float] {
        let frames = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: frames * channels)
        let a = pow(10, dbfs / 20)
        for n in 0..<frames {
            let v = Float(a * sin(2 * Double.pi * 1000 * Double(n) / Double(rate)))
            for c in 0..<channels { out[n * channels + c] = v }
        }
        return out
    }

    static func write(_ samples: [Float], channels: Int = 2, to path: String) throws {
        try TestEnvironment.writeWAV(samples, channels: channels, sampleRate: rate, path: path, sample: .float32)
    }

    @Test func tableAndJSONSayWhatIsMissingAndWhy() throws {
        let dir = TestEnvironment.temporaryDirectory("loudness-cli")
        defer { try? FileManager.default.removeItem(at: dir) }
        let tone = dir.appendingPathComponent("tone.wav").path
        let silence = dir.appendingPathComponent("silence.wav").path
        let short = dir.appendingPathComponent("short.wav").path
        try Self.write(Self.sine(seconds: 5, dbfs: -23), to: tone)
        try Self.write([Float](repeating: 0, count: 2 * Self.rate * 2), to: silence)
        try Self.write(Self.sine(seconds: 0.3, dbfs: -20), to: short)

        let table = try LoudnessTools.tandem(["loudness", tone, silence, short])
        #expect(table.code == 0, "\(table.output)")
        let lines = table.output.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains("integrated LUFS") == true && lines.count == 4, "\(table.output)")
        #expect(lines[1].contains("-23.0"), "a stereo -23 dBFS sine reads -23 LUFS: \(lines[1])")
        #expect(lines[2].contains("-inf") && lines[2].contains("silence"), "\(lines[2])")
        #expect(lines[3].contains("shorter than 400 ms"), "\(lines[3])")

        let json = try LoudnessTools.measure([tone, silence, short])
        #expect(json.count == 3)
        for key in ["file", "integrated", "range", "truePeak", "samplePeak", "momentaryMax", "shortTermMax", "seconds",
                    "channels", "rate", "note"] {
            #expect(json.allSatisfy { $0.keys.contains(key) }, "every object has \(key)")
        }
        #expect(abs((json[0]["integrated"] as? Double ?? 0) + 23) < 0.05 && json[0]["note"] is NSNull)
        #expect(json[1]["integrated"] is NSNull && json[1]["truePeak"] is NSNull && json[1]["range"] is NSNull)
        #expect((json[1]["note"] as? String)?.contains("silence") == true)
        #expect(json[2]["integrated"] is NSNull && (json[2]["seconds"] as? Double).map { abs($0 - 0.3) < 0.01 } == true)
        #expect(json[0]["channels"] as? Int == 2 && json[0]["rate"] as? Int == 48000)
    }

    @Test func checksExitOneNamingTheFileAndTheFigure() throws {
        let dir = TestEnvironment.temporaryDirectory("loudness-checks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let quiet = dir.appendingPathComponent("quiet.wav").path
        let hot = dir.appendingPathComponent("hot.wav").path
        try Self.write(Self.sine(seconds: 4, dbfs: -23), to: quiet)     // -23 LUFS, -23 dBTP
        try Self.write(Self.sine(seconds: 4, dbfs: -0.5), to: hot)      // -0.5 LUFS, -0.5 dBTP

        let tp = try LoudnessTools.tandem(["loudness", "--max-true-peak", "-1", quiet, hot])
        #expect(tp.code == 1, "\(tp.output)")
        #expect(tp.output.contains("\(hot): true peak -0.4") && tp.output.contains("dBTP is above --max-true-peak -1 dBTP"),
                "\(tp.output)")
        #expect(!tp.output.contains("\(quiet):"), "the quiet file passes")

        let target = try LoudnessTools.tandem(["loudness", "--target", "-16", "--tolerance", "1", quiet])
        #expect(target.code == 1 && target.output.contains("\(quiet): integrated -22.99 LUFS is 6.99 LU from --target -16"
                                                           + " LUFS (--tolerance 1 LU)"), "\(target.output)")
        let ebu = try LoudnessTools.tandem(["loudness", "--target", "ebu", "--tolerance", "0.5", "--max-true-peak", "-1", quiet])
        #expect(ebu.code == 0, "ebu is -23: \(ebu.output)")
        let json = try LoudnessTools.tandem(["loudness", "--json", "--max-true-peak", "-1", hot])
        #expect(json.code == 1 && json.output.contains("\"misses\""), "\(json.output)")

        // A file with no integrated loudness cannot meet a target.
        let silence = dir.appendingPathComponent("silence.wav").path
        try Self.write([Float](repeating: 0, count: 2 * Self.rate), to: silence)
        let none = try LoudnessTools.tandem(["loudness", "--target", "-23", silence])
        #expect(none.code == 1 && none.output.contains("no integrated loudness to hold to --target -23 LUFS"), "\(none.output)")
    }

    @Test func badInputIsExitTwoInWords() throws {
        let dir = TestEnvironment.temporaryDirectory("loudness-bad")
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("good.wav").path
        try Self.write(Self.sine(seconds: 1, dbfs: -20), to: good)
        let missing = dir.appendingPathComponent("nope.wav").path
        let garbage = dir.appendingPathComponent("garbage.wav").path
        try Data((0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: garbage))
        let three = dir.appendingPathComponent("three.wav").path
        try Self.write(Self.sine(seconds: 1, dbfs: -20, channels: 3), channels: 3, to: three)

        let cases: [([String], String)] = [
            ([missing], "cannot read '\(missing)': no such file"),
            ([garbage], "cannot read '\(garbage)'"),
            ([three], "'\(three)': 3 channels: BS.1770 weighs 1 (mono), 2 (stereo), 5 (L R C Ls Rs) or 6"),
            ([good, missing], "cannot read '\(missing)'"),
            (["--target", "-80", good], "--target -80: -80 LUFS is not a loudness target: give -70 to 0 LUFS, or ebu (-23)"),
            (["--target", "5", good], "5 LUFS is not a loudness target"),
            (["--target", "nan", good], "nan LUFS is not a loudness target"),
            (["--target", "", good], "'' is not a loudness target"),
            (["--target", "loud", good], "'loud' is not a loudness target"),
            (["--tolerance", "1", good], "--tolerance is how far from --target a file may be: give --target too"),
            (["--target", "-23", "--tolerance", "0", good], "--tolerance must be 0.01 to 10 LU, not 0"),
            (["--target", "-23", "--tolerance", "nan", good], "--tolerance must be 0.01 to 10 LU, not nan"),
            (["--max-true-peak", "nan", good], "nan dBTP is not a true-peak limit"),
            (["--max-true-peak", "3", good], "3 dBTP is not a true-peak limit: give -60 to 0 dBTP"),
            (["--max-true-peak", "", good], "The value '' is invalid for '--max-true-peak <DBTP>'"),
            (["--target", "-23", "--tolerance"], "Missing value for '--tolerance <LU>'"),
            ([], "give one or more audio files to measure"),
        ]
        for (args, words) in cases {
            let r = try LoudnessTools.tandem(["loudness"] + args)
            #expect(r.code == 2, "\(args): exit \(r.code)\n\(r.output)")
            #expect(r.output.contains(words), "\(args): \(r.output)")
        }
        // The good file is still measured beside a missing one.
        let both = try LoudnessTools.tandem(["loudness", good, missing])
        #expect(both.code == 2 && both.output.contains("good.wav") && both.output.contains("-20.0"), "\(both.output)")
    }
}
