import Foundation
import Loudness

/// Where a normalizing render puts the chain's output while it measures it: raw interleaved 32-bit floats in a file
/// with no name, in the output's folder (`O_TMPFILE`; where the file system has none, a hidden file removed as soon
/// as it is open). Nothing is left behind however the process ends: the file goes with its descriptor. Its frames
/// are then read back once, scaled, into the output.
///
/// Threads: one owner (the job).
final class RenderSpool: RenderSink {
    let channels: Int
    let meter: LoudnessMeter?
    private let fd: Int32
    private let label: String
    /// Frames written.
    private(set) var frames = 0

    /// A spool for `channels` channels in the folder of `output`, measured by `meter`.
    init(besides output: String, channels: Int, meter: LoudnessMeter?) throws(RenderError) {
        let folder = (output as NSString).deletingLastPathComponent
        let dir = folder.isEmpty ? "." : folder
        label = output
        var d = open(dir, Self.tmpFile | O_RDWR | O_CLOEXEC, 0o600)
        if d < 0 {
            // No O_TMPFILE here: a hidden name, gone from the folder the moment it is open.
            let name = (dir as NSString).appendingPathComponent(".\((output as NSString).lastPathComponent).spool-\(getpid())")
            d = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if d >= 0 { unlink(name) }
        }
        guard d >= 0 else {
            throw RenderError(.disk, "cannot measure '\(output)' before writing it: no room for its samples in '\(dir)'"
                              + " (\(String(cString: strerror(errno))))")
        }
        fd = d
        self.channels = channels
        self.meter = meter
    }

    deinit { close(fd) }

    /// Linux's O_TMPFILE (`__O_TMPFILE | O_DIRECTORY`; a macro Swift does not import).
    static let tmpFile: Int32 = 0o20000000 | O_DIRECTORY

    /// Appends interleaved frames, measured as they go.
    func write(_ samples: UnsafePointer<Float>, frames count: Int) throws(RenderError) {
        meter?.add(samples, frames: count, stride: channels)
        var bytes = UnsafeRawPointer(samples)
        var left = count * channels * MemoryLayout<Float>.size
        while left > 0 {
            let n = Foundation.write(fd, bytes, left)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = n < 0 ? String(cString: strerror(errno)) : "nothing written"
                throw RenderError(.disk, "cannot measure '\(label)' before writing it: \(e)")
            }
            bytes += n
            left -= n
        }
        frames += count
    }

    /// Reads the spooled frames back in order, `chunk` frames at a time, into `body`.
    func readBack(chunk: Int = 8192,
                  _ body: (UnsafeMutablePointer<Float>, Int) throws(RenderError) -> Void) throws(RenderError) {
        var buffer = [Float](repeating: 0, count: chunk * channels)
        var at = 0
        while at < frames {
            let n = min(chunk, frames - at)
            let want = n * channels * MemoryLayout<Float>.size
            var got = 0
            let ok = buffer.withUnsafeMutableBytes { raw -> Bool in
                while got < want {
                    let r = pread(fd, raw.baseAddress! + got, want - got,
                                  off_t((at * channels * MemoryLayout<Float>.size) + got))
                    if r < 0 && errno == EINTR { continue }
                    if r <= 0 { return false }
                    got += r
                }
                return true
            }
            guard ok else {
                throw RenderError(.disk, "cannot read back the measured samples of '\(label)': "
                                  + String(cString: strerror(errno)))
            }
            try buffer.withUnsafeMutableBufferPointer { (b) throws(RenderError) in try body(b.baseAddress!, n) }
            at += n
        }
    }
}

/// Where a render's cycle loop writes its output frames: the output file, or a normalizing render's spool.
protocol RenderSink: AnyObject {
    func write(_ samples: UnsafePointer<Float>, frames: Int) throws(RenderError)
}
