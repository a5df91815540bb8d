import CSndFile
import Foundation

/// Reads an audio file of any format libsndfile reads, as interleaved `Float` frames.
///
/// Threads: one owner (the disk-reader thread once playing). Blocks on disk I/O.
public final class SoundFileReader {
    public let path: String
    public let channels: Int
    public let sampleRate: Int
    /// Total frames in the file (as its header says).
    public let frames: Int
    /// libsndfile's format word.
    public let formatWord: Int32
    private var file: OpaquePointer?
    /// The open libsndfile handle (nil once closed), for extensions in this module.
    var handle: OpaquePointer? { file }

    /// Opens `path`. Errors name the file and say what is wrong with it.
    public init(path: String) throws(SoundFileError) {
        self.path = path
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            throw SoundFileError(.cannotOpen, path: path, message: "no such file")
        }
        if isDirectory.boolValue {
            throw SoundFileError(.cannotOpen, path: path, message: "is a directory, not an audio file")
        }
        var info = SF_INFO()
        guard let f = sf_open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError(.cannotOpen, path: path, message: SoundFileError.libraryMessage(nil))
        }
        file = f
        channels = Int(info.channels)
        sampleRate = Int(info.samplerate)
        frames = Int(info.frames)
        formatWord = info.format
    }

    deinit { close() }

    /// Reads up to `count` frames into `buffer` (room for `count * channels` samples). Returns frames read; 0 at
    /// the end. A read error throws.
    public func read(into buffer: UnsafeMutablePointer<Float>, frames count: Int) throws(SoundFileError) -> Int {
        guard let file else { throw SoundFileError(.readFailed, path: path, message: "file already closed") }
        let n = Int(sf_readf_float(file, buffer, sf_count_t(count)))
        if n < count && sf_error(file) != 0 {
            throw SoundFileError(.readFailed, path: path, message: SoundFileError.libraryMessage(file))
        }
        return n
    }

    /// Moves the read position to `frame`.
    public func seek(to frame: Int) throws(SoundFileError) {
        guard let file, sf_seek(file, sf_count_t(frame), Int32(SEEK_SET)) >= 0 else {
            throw SoundFileError(.seekFailed, path: path, message: "cannot seek to frame \(frame)")
        }
    }

    /// Reads the whole file (for tests and verification; not for playback).
    public func readAll() throws(SoundFileError) -> [Float] {
        var out = [Float](repeating: 0, count: frames * channels)
        var done = 0
        while done < frames {
            let n = try out.withUnsafeMutableBufferPointer { (buf) throws(SoundFileError) -> Int in
                try read(into: buf.baseAddress! + done * channels, frames: min(65536, frames - done))
            }
            if n == 0 { break }
            done += n
        }
        if done < frames { out.removeLast((frames - done) * channels) }
        return out
    }

    /// When the header promises more audio than the file holds (a half-copied file), what libsndfile noticed, e.g.
    /// "data : 18000 (should be 9000)"; libsndfile then reads only what is there.
    public var truncation: String? {
        guard let file else { return nil }
        var log = [CChar](repeating: 0, count: 8192)
        sf_command(file, Int32(SFC_GET_LOG_INFO), &log, Int32(log.count))
        let text = log.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return text.split(separator: "\n").first { $0.hasPrefix("data") && $0.contains("should be") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// The BWF time reference stored in the file's `bext` chunk, if any.
    public var broadcastTimeReference: UInt64? {
        guard let file else { return nil }
        var bext = SF_BROADCAST_INFO()
        guard sf_command(file, Int32(SFC_GET_BROADCAST_INFO), &bext, Int32(MemoryLayout<SF_BROADCAST_INFO>.size)) != 0
        else { return nil }
        return UInt64(bext.time_reference_high) << 32 | UInt64(bext.time_reference_low)
    }

    public func close() {
        if let f = file { sf_close(f) }
        file = nil
    }
}
