import Foundation
import SoundFile
#if canImport(Glibc)
import Glibc
#endif

/// What a take's report records of one chunk file once the chunk is closed, so that retention can prove a file is
/// the one Tandem wrote before it deletes it: the file system's identity of the file (device and inode), its size
/// and modification time, and the frames libsndfile reads in it. A file that was replaced, edited, touched, grown or
/// cut since (or a folder, a symlink, a file of another length) no longer matches, and is kept.
public struct FileIdentity: Codable, Sendable, Equatable {
    public var device: UInt64
    public var inode: UInt64
    public var bytes: Int64
    /// Modification time in nanoseconds since 1970.
    public var modified: Int64
    /// Frames libsndfile reads in the file.
    public var frames: Int

    public init(device: UInt64, inode: UInt64, bytes: Int64, modified: Int64, frames: Int) {
        self.device = device
        self.inode = inode
        self.bytes = bytes
        self.modified = modified
        self.frames = frames
    }

    /// The identity of the regular file at `path` as it is now (a symlink is not followed), or nil when there is no
    /// such file or libsndfile cannot read it.
    public static func of(path: String) -> FileIdentity? {
        guard case .success(var id) = stat(path) else { return nil }
        guard let reader = try? SoundFileReader(path: path) else { return nil }
        id.frames = reader.frames
        return id
    }

    /// Why the file at `path` is not the file this identity describes, or nil when it is.
    public func mismatch(at path: String) -> String? {
        let now: FileIdentity
        switch Self.stat(path) {
        case .failure(let why): return why.text
        case .success(let id): now = id
        }
        if now.device != device || now.inode != inode { return "another file than the one recorded (device/inode)" }
        if now.bytes != bytes { return "\(now.bytes) bytes, the report recorded \(bytes)" }
        if now.modified != modified { return "modified since the report recorded it" }
        guard let reader = try? SoundFileReader(path: path) else { return "not an audio file libsndfile reads" }
        if reader.frames != frames { return "\(reader.frames) frames, the report recorded \(frames)" }
        return nil
    }

    /// `lstat` of a regular file; frames left 0.
    private static func stat(_ path: String) -> Result<FileIdentity, Why> {
        var st = Glibc.stat()
        guard lstat(path, &st) == 0 else { return .failure(Why(String(cString: strerror(errno)))) }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFLNK: return .failure(Why("a symbolic link"))
        case S_IFDIR: return .failure(Why("a folder"))
        default: return .failure(Why("not a regular file"))
        }
        return .success(FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), bytes: Int64(st.st_size),
                                     modified: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                                     frames: 0))
    }

    struct Why: Error {
        let text: String
        init(_ text: String) { self.text = text }
    }
}
