import Foundation
import SoundFile

/// Joins the chunk files of a rotated take into one continuous file per channel group.
public enum Stitcher {
    /// Writes the joined file(s) and returns their paths. Never overwrites.
    public static func stitch(reportPath: String, output: String? = nil) throws -> [String] {
        let report = try TakeReport.read(from: reportPath)
        guard let first = report.chunks.first else { throw StitchError(message: "\(reportPath): the take has no chunks") }
        let streams = first.files.count
        var outputs: [String] = []
        for stream in 0..<streams {
            let source = try SoundFileReader(path: first.files[stream])
            let ext = (first.files[stream] as NSString).pathExtension
            let base = (reportPath as NSString).deletingPathExtension
            var target = output ?? "\(base)-stitched.\(ext)"
            if streams > 1 {
                target = (target as NSString).deletingPathExtension + "-\(stream + 1)." + ext
            }
            let format = AudioFormat(container: Container(rawValue: report.format) ?? .wav,
                                     sample: SampleFormat(rawValue: report.sampleFormat) ?? .float32)
            let writer = try SoundFileWriter(path: target, format: format, channels: source.channels,
                                             sampleRate: source.sampleRate)
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 65536 * source.channels)
            defer { buffer.deallocate() }
            for chunk in report.chunks {
                let r = try SoundFileReader(path: chunk.files[stream])
                while true {
                    let n = try r.read(into: buffer, frames: 65536)
                    if n == 0 { break }
                    try writer.write(buffer, frames: n)
                }
            }
            try writer.close()
            outputs.append(target)
        }
        return outputs
    }
}

/// Why a take could not be stitched.
public struct StitchError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
