import ArgumentParser
import Foundation
import Loudness
import Presets
import SoundFile

/// `tandem loudness FILE...`: each file's ITU-R BS.1770-4 / EBU R128 loudness, loudness range and true peak, at the
/// file's own rate (docs/LOUDNESS.md); with `--max-true-peak` or `--target`, a check for a delivery pipeline.
struct LoudnessCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loudness",
        abstract: "Measure files' loudness (EBU R128: integrated, range, true peak, momentary and short-term maximum).",
        discussion: """
            Reads any file the player plays, at its own rate, and prints a table or, with --json, an array with one \
            object per file. A value that cannot be had prints as -inf (JSON: null) and the note says why (shorter \
            than 400 ms, silence). Mono, stereo, 5 channels (L R C Ls Rs) and 5.1 (L R C LFE Ls Rs) are measured as \
            one programme with BS.1770's channel weights; other channel counts are refused. Exit codes: 0 every file \
            measured and met the checks given, 1 a file missed --max-true-peak or --target/--tolerance (each miss \
            is named on stderr), 2 bad input (a file that cannot be read or measured, an option out of range; it \
            comes before 1).
            """)

    @Argument(help: ArgumentHelp("Audio files to measure.", valueName: "FILE"))
    var files: [String] = []

    @Flag(name: .long, help: "Print a JSON array, one object per file, instead of a table.")
    var json = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Fail (exit 1) when a file's true peak is above this (dBTP, -60 to 0).", valueName: "DBTP"))
    var maxTruePeak: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Fail (exit 1) when a file's integrated loudness is further than --tolerance from this (LUFS, -70 to 0, or 'ebu' for -23).", valueName: "LUFS|ebu"))
    var target: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("How far from --target a file may be, in LU (0.01 to 10; default 1).", valueName: "LU"))
    var tolerance: Double?

    static let toleranceRange: ClosedRange<Double> = 0.01...10

    func validate() throws {
        if files.isEmpty { throw ValidationError("give one or more audio files to measure") }
        if let bad = files.first(where: { $0.isEmpty }) { throw ValidationError("an empty file name ('\(bad)')") }
        if let m = maxTruePeak, case .failure(let why) = RenderSection.truePeakCeiling(m) {
            throw ValidationError("--max-true-peak: " + why.description.replacingOccurrences(of: "true-peak ceiling", with: "true-peak limit"))
        }
        if let t = target, case .failure(let why) = RenderSection.loudnessTarget(t) {
            throw ValidationError("--target \(t): \(why.description)")
        }
        if let t = tolerance {
            guard target != nil else { throw ValidationError("--tolerance is how far from --target a file may be: give --target too") }
            guard Limits.contains(Self.toleranceRange, t) else {
                throw ValidationError("--tolerance must be \(Limits.describe(Self.toleranceRange, unit: " LU")), not \(Limits.number(t))")
            }
        }
    }

    /// One file's measurement, or why there is none.
    struct Measured {
        var file: String
        var reading: LoudnessReading?
        var channels = 0
        var rate = 0
        var error: String?
        var misses: [String] = []
    }

    func run() throws {
        let goal = target.flatMap { try? RenderSection.loudnessTarget($0).get() }
        let within = tolerance ?? 1
        var results: [Measured] = []
        for file in files {
            var m = Self.measure(file)
            if let r = m.reading {
                if let limit = maxTruePeak, let tp = r.truePeak, tp > limit {
                    m.misses.append(String(format: "true peak %.2f dBTP is above --max-true-peak %@ dBTP", tp,
                                           Limits.number(limit)))
                }
                if let goal {
                    if let i = r.integrated {
                        if abs(i - goal) > within {
                            m.misses.append(String(format: "integrated %.2f LUFS is %.2f LU from --target %@ LUFS (--tolerance %@ LU)",
                                                   i, abs(i - goal), Limits.number(goal), Limits.number(within)))
                        }
                    } else {
                        m.misses.append("no integrated loudness to hold to --target \(Limits.number(goal)) LUFS ("
                                        + (r.note ?? "nothing above the gate") + ")")
                    }
                }
            }
            results.append(m)
        }
        if json { say(Self.json(results, checked: maxTruePeak != nil || goal != nil)) } else { Self.table(results).forEach(say) }
        for m in results {
            if let e = m.error { Console.err("tandem: \(e)\n") }
            for miss in m.misses { Console.err("tandem: \(m.file): \(miss)\n") }
        }
        let status: ExitStatus = results.contains { $0.error != nil } ? .badInput
            : results.contains { !$0.misses.isEmpty } ? .failure : .ok
        Foundation.exit(status.rawValue)
    }

    /// Reads `file` whole through a meter, a chunk at a time.
    static func measure(_ file: String) -> Measured {
        var m = Measured(file: file)
        let reader: SoundFileReader
        do throws(SoundFileError) { reader = try SoundFileReader(path: file) } catch {
            m.error = "cannot read '\(file)': \(error.message)"
            return m
        }
        defer { reader.close() }
        m.channels = reader.channels
        m.rate = reader.sampleRate
        if let cut = reader.truncation {
            m.error = "'\(file)' is cut short (\(cut)): refusing to measure part of it"
            return m
        }
        let meter: LoudnessMeter
        do throws(LoudnessError) {
            meter = try LoudnessMeter(channels: reader.channels, sampleRate: Double(reader.sampleRate))
        } catch {
            m.error = "'\(file)': \(error.description)"
            return m
        }
        let chunk = 8192
        var buffer = [Float](repeating: 0, count: chunk * reader.channels)
        do throws(SoundFileError) {
            while true {
                let n = try buffer.withUnsafeMutableBufferPointer { (b) throws(SoundFileError) -> Int in
                    try reader.read(into: b.baseAddress!, frames: chunk)
                }
                if n == 0 { break }
                buffer.withUnsafeBufferPointer { meter.add($0.baseAddress!, frames: n, stride: reader.channels) }
            }
        } catch {
            m.error = "cannot read '\(file)': \(error.message)"
            return m
        }
        m.reading = meter.reading
        return m
    }

    static func table(_ results: [Measured]) -> [String] {
        let header = ["file", "integrated LUFS", "range LU", "true peak dBTP", "momentary max LUFS", "short-term max LUFS", "note"]
        var rows: [[String]] = []
        for m in results {
            guard let r = m.reading else {
                rows.append([m.file, "", "", "", "", "", "not measured"])
                continue
            }
            let t = LoudnessReading.text
            rows.append([m.file, t(r.integrated), t(r.range), t(r.truePeak), t(r.momentaryMax), t(r.shortTermMax),
                         r.note ?? ""])
        }
        let widths = (0..<header.count).map { c in ([header] + rows).map { $0[c].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { c, text in
                let pad = String(repeating: " ", count: widths[c] - text.count)
                return c == 0 || c == cells.count - 1 ? text + pad : pad + text
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return [line(header)] + rows.map(line)
    }

    static func json(_ results: [Measured], checked: Bool) -> String {
        func value(_ v: Double?) -> Any { v.map { $0 as Any } ?? NSNull() }
        let list: [[String: Any]] = results.map { m in
            let r = m.reading
            var o: [String: Any] = [
                "file": m.file, "integrated": value(r?.integrated), "range": value(r?.range),
                "truePeak": value(r?.truePeak), "samplePeak": value(r?.samplePeak),
                "momentaryMax": value(r?.momentaryMax), "shortTermMax": value(r?.shortTermMax),
                "seconds": value(r?.seconds), "channels": m.reading == nil ? NSNull() : m.channels,
                "rate": m.reading == nil ? NSNull() : m.rate, "note": r?.note ?? NSNull(),
            ]
            if let e = m.error { o["error"] = e }
            if checked && m.error == nil { o["misses"] = m.misses }
            return o
        }
        guard let data = try? JSONSerialization.data(withJSONObject: list,
                                                     options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]),
              let text = String(data: data, encoding: .utf8) else { return "[]" }
        return text
    }
}
