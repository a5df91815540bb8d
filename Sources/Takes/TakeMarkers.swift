import Foundation
import SoundFile

/// A marker of a take, as its report lists it.
public struct TakeMarker: Codable, Sendable, Equatable {
    /// Frame within the take (0 = its first frame), where the request arrived.
    public var frame: Int
    public var label: String
    /// Where the request came from ("osc", "ctl", "signal", "midi"), if known.
    public var source: String?

    public init(frame: Int, label: String, source: String? = nil) {
        self.frame = frame
        self.label = label
        self.source = source
    }
}

/// Markers of a take put into its files: each goes into the chunk that holds its frame, as a cue point with a
/// label (`CueChunks`), at its frame within that chunk.
///
/// Threads: functions over finished files; call from the disk writer (after a chunk is closed) or the control side.
public enum TakeMarkers {
    /// The chunk (index into `chunks`) and the frame within it that hold take frame `frame`. A frame on a chunk
    /// boundary belongs to the chunk that starts there; the take's end (one past its last frame) to the last chunk.
    /// Nil outside the take.
    public static func place(_ frame: Int, in chunks: [TakeReport.Chunk]) -> (chunk: Int, offset: Int)? {
        for (i, c) in chunks.enumerated() where frame >= c.startFrame && frame < c.startFrame + c.frames {
            return (i, frame - c.startFrame)
        }
        if let last = chunks.last, frame == last.startFrame + last.frames { return (chunks.count - 1, last.frames) }
        return nil
    }

    /// The markers that fall into chunk `index`, at their frames within it.
    public static func cues(_ markers: [TakeMarker], chunk index: Int, of chunks: [TakeReport.Chunk]) -> [CueMarker] {
        markers.compactMap { m in
            guard let p = place(m.frame, in: chunks), p.chunk == index else { return nil }
            return CueMarker(frame: p.offset, label: m.label)
        }
    }

    /// Writes the markers into every WAV/RF64 file of every chunk (each stem file of a chunk gets the same cue
    /// points). Returns what could not be done, in words (a marker outside the take, a format without cue points:
    /// such markers stay in the report only).
    @discardableResult
    public static func write(_ markers: [TakeMarker], chunks: [TakeReport.Chunk]) -> [String] {
        var problems: [String] = []
        for m in markers where place(m.frame, in: chunks) == nil {
            problems.append("marker '\(m.label)' at frame \(m.frame) is outside the take")
        }
        for (i, chunk) in chunks.enumerated() {
            let cues = cues(markers, chunk: i, of: chunks)
            guard !cues.isEmpty else { continue }
            for file in chunk.files {
                do throws(SoundFileError) { try CueChunks.write(cues, to: file) } catch {
                    problems.append("\(file): \(error.message)")
                }
            }
        }
        return problems
    }
}
