import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A take's JSON report on disk, rewritten in place.
///
/// The file is created (never over an existing one) with room reserved beyond its first content, and every update
/// overwrites it from the start and pads with spaces to the reserved length. So the final report still fits when
/// the disk has filled up during the take, which is exactly when it matters most; a temporary-file-and-rename
/// update would fail there.
///
/// Threads: the disk-writer thread that owns the take.
public final class SidecarFile {
    public let path: String
    private var fd: Int32 = -1
    private var reserved = 0
    static let minimumReservation = 64 * 1024
    /// Whether the file holds a whole report (a write has succeeded). A file this object created whose first write
    /// failed (a full disk at the take's start) is removed again: a 0-byte file named like a report is no report.
    public private(set) var written = false

    init(path: String) {
        self.path = path
    }

    /// Opens an existing report to rewrite it in place (completing an interrupted take).
    init(existing path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CLOEXEC)
        if fd < 0 { throw SidecarError(message: "\(path): \(String(cString: strerror(errno)))") }
        written = true
        var st = stat()
        reserved = fstat(fd, &st) == 0 ? Int(st.st_size) : 0
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Writes `data` as the file's whole content. Throws a message naming the file on failure.
    func write(_ data: Data) throws {
        var created = false
        if fd < 0 {
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd < 0 { throw SidecarError(message: "\(path): \(String(cString: strerror(errno)))") }
            created = true
        }
        let wanted = max(SidecarFile.minimumReservation, data.count * 2)
        var body = data
        // The content plus its closing newline must fit: exactly `reserved` bytes of JSON grows the reservation
        // (it used to ask for -1 bytes of padding, which trapped the writer thread).
        if data.count < reserved {
            body.append(Data(repeating: 0x20, count: reserved - data.count - 1))
            body.append(0x0A)
        } else {
            // Grow the reservation (this may fail on a full disk; the old content then stays as it was).
            body.append(Data(repeating: 0x20, count: wanted - data.count - 1))
            body.append(0x0A)
        }
        let count = body.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        if count != body.count {
            let why = count < 0 ? String(cString: strerror(errno)) : "short write"
            if created { removeUnwritten() }
            throw SidecarError(message: "\(path): \(why)")
        }
        written = true
        reserved = max(reserved, body.count)
        fsync(fd)
    }
}

extension SidecarFile {
    /// Removes the file this object has just created and could not write, once it is proven to be that file (the
    /// same inode as the descriptor, and no report in it): never a file someone else made at the path.
    private func removeUnwritten() {
        var mine = stat(), there = stat()
        if fstat(fd, &mine) == 0, stat(path, &there) == 0, mine.st_ino == there.st_ino, mine.st_dev == there.st_dev,
           !written {
            unlink(path)
        }
        Glibc.close(fd)
        fd = -1
        reserved = 0
    }
}

struct SidecarError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
