import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether files can be made in a folder, asked the one way every surface asks it (a preset's `directory`, a render's
/// output folder, `demo -d`), before anything starts.
public enum WritableFolder {
    /// Why no file can be made in `directory` (nil: one can). A real probe: a file is created and removed, because
    /// `access(W_OK)` says yes to root in folders such as /proc, or on a read-only mount, where no file can be made.
    public static func problem(_ directory: String) -> String? {
        let probe = (directory as NSString).appendingPathComponent(".tandem-check-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        close(fd)
        unlink(probe)
        return nil
    }
}
