import ArgumentParser
import Engine
import Foundation
import SoundFile

/// Offline writer throughput: how many times faster than real time each format is encoded and written, with the
/// same writer the disk thread uses. Used by `make bench`.
struct BenchWriterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-writer", abstract: "Measure offline writer throughput per format (used by make bench).",
        shouldDisplay: false)

    @Option(name: [.short, .long], help: "Channels.")
    var channels = 16

    @Option(name: .long, help: "Seconds of audio per format.")
    var seconds: Double = 20

    @Option(name: [.short, .long], help: "Scratch directory (files are removed afterwards).")
    var dir = NSTemporaryDirectory()

    func run() throws {
        let rate = 48000
        let chunk = 8192
        // Music-like material: the demo signal per channel pair, so encoders do realistic work.
        let stereo = TestSignal.make(seconds: Double(chunk * 16) / Double(rate), sampleRate: rate)
        let blockFrames = stereo.count / 2
        var block = [Float](repeating: 0, count: blockFrames * channels)
        for f in 0..<blockFrames { for c in 0..<channels { block[f * channels + c] = stereo[f * 2 + (c & 1)] * (1 - Float(c) / Float(channels * 2)) } }
        let formats: [(String, AudioFormat)] = [
            ("wav float32", AudioFormat(container: .wav, sample: .float32)),
            ("wav int24", AudioFormat(container: .wav, sample: .int24)),
            ("flac int24", AudioFormat(container: .flac, sample: .int24)),
            ("ogg vorbis q0.5", AudioFormat(container: .ogg, quality: 0.5)),
            ("opus q0.5", AudioFormat(container: .opus, quality: 0.5)),
            ("mp3 q0.5", AudioFormat(container: .mp3, quality: 0.5)),
        ]
        let total = Int(seconds * Double(rate))
        for (label, format) in formats {
            let path = (dir as NSString).appendingPathComponent("tandem-bench-writer-\(getpid()).\(format.container.fileExtension)")
            unlink(path)
            let started = Date()
            do {
                let w = try SoundFileWriter(path: path, format: format, channels: channels, sampleRate: rate)
                var done = 0
                try block.withUnsafeBufferPointer { (b) throws(SoundFileError) in
                    while done < total {
                        let n = min(chunk, total - done)
                        let offset = (done % blockFrames) + n <= blockFrames ? done % blockFrames : 0
                        try w.write(b.baseAddress! + offset * channels, frames: n)
                        done += n
                    }
                }
                try w.close()
                let elapsed = Date().timeIntervalSince(started)
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                say(String(format: "writer format=%@ channels=%d seconds=%.0f elapsed=%.3f x_realtime=%.1f bytes=%d",
                           label.replacingOccurrences(of: " ", with: "_"), channels, seconds, elapsed,
                           seconds / elapsed, size))
            } catch {
                say("writer format=\(label.replacingOccurrences(of: " ", with: "_")) error=\"\(error)\"")
            }
            unlink(path)
        }
    }
}
