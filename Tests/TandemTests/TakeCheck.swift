import Foundation
import Engine
import Jack
import SoundFile
import Takes
import TestSupport

/// What a test asks of every take a run left behind: its report is final, every chunk file opens in libsndfile with
/// the frames the report gives, and the audio is the source's, frame for frame.
struct TakeCheck: CustomStringConvertible {
    var report: String
    var ended: TakeEnd?
    var frames = 0
    var audio = LoopedSourceCheck()
    var problems: [String] = []

    var description: String {
        "\((report as NSString).lastPathComponent): \(ended?.rawValue ?? "?") \(frames) frames, \(audio)"
            + (problems.isEmpty ? "" : " PROBLEMS: " + problems.joined(separator: "; "))
    }

    /// The take reports (`*.json`) directly in `dir`.
    static func reports(in dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
            .map { (dir as NSString).appendingPathComponent($0) }
    }

    /// Checks one take. `ended`: the endings accepted. Discontinuities in the audio are accepted only where the report
    /// owns up to a loss (xruns, missed cycles, drops).
    static func verify(report path: String, source: LoopedSourceCheck.Index, ended: Set<TakeEnd> = [.stopped])
        -> TakeCheck {
        var check = TakeCheck(report: path)
        let report: TakeReport
        do { report = try TakeReport.read(from: path) } catch {
            check.problems.append("report unreadable: \(error)")
            return check
        }
        check.ended = report.ended
        check.frames = report.frames
        if !ended.contains(report.ended) {
            check.problems.append("report says '\(report.ended.rawValue)', wanted \(ended.map(\.rawValue).sorted())")
        }
        var samples: [Float] = []
        var sum = 0
        for chunk in report.chunks {
            guard let file = chunk.files.first else { continue }
            let full = file.hasPrefix("/") ? file : ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(file)
            do {
                let reader = try SoundFileReader(path: full)
                if reader.frames != chunk.frames {
                    check.problems.append("\(full): \(reader.frames) frames in the file, \(chunk.frames) in the report")
                }
                samples += try reader.readAll()
            } catch {
                check.problems.append("\(full) does not open: \(error)")
            }
            sum += chunk.frames
        }
        if sum != report.frames { check.problems.append("chunks hold \(sum) frames, the report says \(report.frames)") }
        check.audio = LoopedSourceCheck.check(recorded: samples, against: source)
        if check.audio.foreignFrames > 0 { check.problems.append("audio not from the source: \(check.audio)") }
        let lossReported = report.xruns > 0 || (report.missedFrames ?? 0) > 0 || !report.drops.isEmpty
        if check.audio.discontinuities > 0 && !lossReported {
            check.problems.append("audio jumps with no loss reported: \(check.audio)")
        }
        return check
    }
}

/// A source for a recorder: `tandem play` looping a noise file into `pattern` (a regular expression of input ports),
/// gapless, so every take is a contiguous stretch of the loop.
struct LoopedNoise {
    let path: String
    let samples: [Float]
    let index: LoopedSourceCheck.Index

    init(dir: URL, channels: Int = 2, seconds: Double = 1, seed: UInt64 = 0xF0_22ED) throws {
        path = dir.appendingPathComponent("noise.wav").path
        samples = Signals.noise(frames: Int(seconds * 48000), channels: channels, seed: seed)
        try TestEnvironment.writeWAV(samples, channels: channels, path: path)
        index = LoopedSourceCheck.Index(source: samples, channels: channels)
    }

    func play(into pattern: String, server: JackServer, client: String, log: String) throws -> TandemProcess {
        try TandemProcess(["play", "--client", client, "--loop", "item", "--connect", pattern, path],
                          server: server, log: log)
    }
}
