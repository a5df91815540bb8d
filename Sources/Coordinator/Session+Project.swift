import Engine
import Foundation
import Presets
#if canImport(Glibc)
import Glibc
#endif

/// Saving the running setup over a project's own preset file, as a session manager's `save` asks: written to a
/// temporary file beside it, synced, then renamed over the old one, so a crash or a full disk leaves the previous
/// file whole. (`saveRunningPreset(name:)` never overwrites; this is for the one file a project owns.)
///
/// Threads: control side only, like the rest of `Session`.
extension Session {
    /// Writes `text` to `path` atomically (temporary file, fsync, rename, fsync of the folder).
    public static func writeAtomically(_ text: String, to path: String) throws(EngineError) {
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = (folder as NSString).appendingPathComponent(".\((path as NSString).lastPathComponent).\(getpid()).tmp")
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw EngineError(.file, "cannot write '\(temporary)': \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { b -> Int in
                guard let base = b.baseAddress else { return 0 }
                return write(fd, base + done, b.count - done)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let why = n < 0 ? String(cString: strerror(errno)) : "short write"
                Glibc.close(fd)
                unlink(temporary)
                throw EngineError(.file, "cannot write '\(path)': \(why)")
            }
            done += n
        }
        let synced = fsync(fd) == 0
        Glibc.close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(temporary)
            throw EngineError(.file, "cannot write '\(path)': \(why)")
        }
        let dir = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            Glibc.close(dir)
        }
    }
}
