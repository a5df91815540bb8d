import Foundation
import Testing
import TestSupport

/// The programs the loudness tests run: `tandem loudness`, sox to make signals, ffmpeg's `ebur128` filter to measure
/// them independently.
enum LoudnessTools {
    static var available: Bool { TestEnvironment.hasProgram("sox") && TestEnvironment.hasProgram("ffmpeg") }

    static func tandem(_ args: [String]) throws -> (code: Int32, output: String) {
        try TestEnvironment.run([TestEnvironment.product("tandem")] + args, timeout: 120)
    }

    /// Runs sox with `args`; a failure fails the test with its words.
    static func sox(_ args: [String]) throws {
        let r = try TestEnvironment.run(["sox", "-R"] + args)   // -R: the same noise every run
        try #require(r.code == 0, "sox \(args.joined(separator: " ")): \(r.output)")
    }

    /// What ffmpeg's ebur128 filter (with true peak) measures: its per-100 ms metadata, three decimals, the last
    /// frame's integrated loudness and range and the highest true peak of any frame (linear, in dB here).
    struct FFmpeg {
        var integrated: Double
        var range: Double
        var truePeak: Double
        /// Its short-term loudness every 100 ms once 3 s are in (LUFS).
        var shortTerm: [Double]

        /// EBU Tech 3342's loudness range over `shortTerm`: of the values above -70 LUFS and above the relative gate
        /// (20 LU below their mean energy), the 95th percentile less the 10th, ranks rounded as libebur128 does.
        var rangeOfShortTerm: Double? {
            let above = shortTerm.filter { $0 > -70 }
            guard !above.isEmpty else { return nil }
            let mean = -0.691 + 10 * log10(above.map { pow(10, ($0 + 0.691) / 10) }.reduce(0, +) / Double(above.count))
            let gated = above.filter { $0 >= mean - 20 }.sorted()
            let n = Double(gated.count - 1)
            return gated[Int(n * 0.95 + 0.5)] - gated[Int(n * 0.10 + 0.5)]
        }
    }

    static func ffmpeg(_ file: String, scratch: URL) throws -> FFmpeg {
        let meta = scratch.appendingPathComponent("ebur128-\(UUID().uuidString.prefix(8)).txt").path
        let r = try TestEnvironment.run(["ffmpeg", "-nostats", "-hide_banner", "-i", file, "-af",
                                         "ebur128=peak=true:metadata=1,ametadata=mode=print:file=\(meta)", "-f", "null", "-"])
        try #require(r.code == 0, "ffmpeg on \(file): \(r.output)")
        let text = try String(contentsOfFile: meta, encoding: .utf8)
        var i: Double?, lra: Double?, peak = 0.0, shortTerm: [Double] = []
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let v = Double(parts[1]) else { continue }
            switch parts[0] {
            case "lavfi.r128.I": i = v
            case "lavfi.r128.LRA": lra = v
            case "lavfi.r128.true_peak": peak = max(peak, v)
            case "lavfi.r128.S": if v > -100 { shortTerm.append(v) }   // -120.7 until 3 s are in
            default: break
            }
        }
        return FFmpeg(integrated: try #require(i), range: try #require(lra), truePeak: 20 * log10(peak),
                      shortTerm: shortTerm)
    }

    /// `tandem loudness --json` of `files`: one object per file.
    static func measure(_ files: [String]) throws -> [[String: Any]] {
        let r = try tandem(["loudness", "--json"] + files)
        try #require(r.code == 0, "tandem loudness: \(r.output)")
        let data = Data(r.output.utf8)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]], "\(r.output)")
    }
}
