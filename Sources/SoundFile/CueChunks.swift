import CSndFile
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A marker in an audio file: a frame and a label.
public struct CueMarker: Sendable, Equatable, Codable {
    /// Frame within the file (0 = the first frame; the file's length = just past the last).
    public var frame: Int
    public var label: String

    public init(frame: Int, label: String) {
        self.frame = frame
        self.label = label
    }
}

/// Cue points with labels in WAV and RF64 files, written as the chunks DAWs read: a `cue ` chunk (one point per
/// marker: id, position and sample offset = the frame, in the `data` chunk) followed by a `LIST` chunk of type
/// `adtl` holding one `labl` per marker (id, NUL-terminated UTF-8 text): the standard RIFF layout (Sound Forge and
/// REAPER write markers this way). Checked here against libsndfile (which Ardour and Audacity import through) and an
/// independent parser; not yet checked in a DAW itself.
///
/// Why not libsndfile: `SFC_SET_CUE` is refused once audio has been written (markers arrive during a take), it
/// writes no labels, and its RF64 writer writes no cue chunk at all. So the chunks are appended after the `data`
/// chunk of a finished file (closed by libsndfile), and the RIFF size (or, for RF64, the `ds64` RIFF size) is
/// updated. libsndfile reads them back (`SoundFileReader.cues`) from WAV files (its RF64 reader ignores cue chunks).
///
/// Threads: functions over closed files; any thread, one call per file at a time.
public enum CueChunks {
    /// The longest label kept (libsndfile reads up to 255 bytes of a label).
    public static let labelBytes = 255

    /// Writes `markers` into the closed WAV/RF64 file at `path`, replacing cue points an earlier call appended.
    /// Markers must lie in 0...frames of the file and below 2^32 (the cue format's limit).
    public static func write(_ markers: [CueMarker], to path: String) throws(SoundFileError) {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SoundFileError(.cannotOpen, path: path, message: String(cString: strerror(errno))) }
        defer { close(fd) }
        let layout = try Layout.read(fd: fd, path: path)
        for m in markers where m.frame < 0 || m.frame > layout.frames || m.frame > Int(UInt32.max) {
            throw SoundFileError(.writeFailed, path: path,
                                 message: "marker '\(m.label)' at frame \(m.frame) is outside the file (0 to \(layout.frames))")
        }
        // Drop cue points appended before (a `cue ` chunk after the data, and the adtl list after it).
        var end = layout.appendOffset
        if let cue = layout.trailingCue { end = cue }
        var bytes: [UInt8] = []
        if end % 2 == 1 { bytes.append(0) }   // the chunk before ends on an odd byte: its pad
        bytes += chunks(for: markers.sorted { $0.frame < $1.frame })
        guard ftruncate(fd, off_t(end)) == 0, pwriteAll(fd, bytes, at: end) else {
            throw SoundFileError(.writeFailed, path: path, message: String(cString: strerror(errno)))
        }
        let length = end + bytes.count
        if layout.isRF64 {
            guard pwriteAll(fd, le64(UInt64(length - 8)), at: layout.ds64RiffSizeOffset) else {
                throw SoundFileError(.writeFailed, path: path, message: String(cString: strerror(errno)))
            }
        } else {
            guard length - 8 <= Int(UInt32.max) else {
                throw SoundFileError(.writeFailed, path: path, message: "the cue points would take the file past 4 GiB (a WAV's limit)")
            }
            guard pwriteAll(fd, le32(UInt32(length - 8)), at: 4) else {
                throw SoundFileError(.writeFailed, path: path, message: String(cString: strerror(errno)))
            }
        }
        fsync(fd)
    }

    /// Reads cue points and their labels by walking the file's chunks (independently of libsndfile), sorted by
    /// frame. A point without a label has label "".
    public static func read(from path: String) throws(SoundFileError) -> [CueMarker] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SoundFileError(.cannotOpen, path: path, message: String(cString: strerror(errno))) }
        defer { close(fd) }
        let layout = try Layout.read(fd: fd, path: path)
        var positions: [(id: UInt32, frame: Int)] = []
        var labels: [UInt32: String] = [:]
        for c in layout.chunks {
            if c.id == "cue ", let body = readBytes(fd, at: c.offset + 8, count: min(c.size, 1 << 24)), body.count >= 4 {
                let count = min(Int(u32(body, 0)), (body.count - 4) / 24)   // a count past the chunk is malformed
                for i in 0..<count {
                    let at = 4 + i * 24
                    positions.append((u32(body, at), Int(u32(body, at + 20))))
                }
            }
            if c.id == "LIST", let body = readBytes(fd, at: c.offset + 8, count: min(c.size, 1 << 24)), body.count >= 4,
               String(decoding: body[0..<4], as: UTF8.self) == "adtl" {
                var at = 4
                while at + 8 <= body.count {
                    let id = String(decoding: body[at..<(at + 4)], as: UTF8.self)
                    let size = Int(u32(body, at + 4))
                    let start = at + 8
                    guard start + size <= body.count else { break }
                    if id == "labl" && size >= 4 {
                        let text = body[(start + 4)..<(start + size)].prefix { $0 != 0 }
                        labels[u32(body, start)] = String(decoding: text, as: UTF8.self)
                    }
                    at = start + size + (size & 1)
                }
            }
        }
        return positions.map { CueMarker(frame: $0.frame, label: labels[$0.id] ?? "") }.sorted { $0.frame < $1.frame }
    }

    // MARK: Chunk layout

    static func chunks(for markers: [CueMarker]) -> [UInt8] {
        guard !markers.isEmpty else { return [] }
        var cue: [UInt8] = Array("cue ".utf8) + le32(UInt32(4 + 24 * markers.count)) + le32(UInt32(markers.count))
        for (i, m) in markers.enumerated() {
            let frame = UInt32(clamping: m.frame)
            cue += le32(UInt32(i + 1)) + le32(frame) + Array("data".utf8) + le32(0) + le32(0) + le32(frame)
        }
        var list: [UInt8] = Array("adtl".utf8)
        for (i, m) in markers.enumerated() where !m.label.isEmpty {
            let text = Array(truncated(m.label).utf8) + [0]
            list += Array("labl".utf8) + le32(UInt32(4 + text.count)) + le32(UInt32(i + 1)) + text
            if text.count % 2 == 1 { list.append(0) }
        }
        return list.count > 4 ? cue + Array("LIST".utf8) + le32(UInt32(list.count)) + list : cue
    }

    /// At most `labelBytes` bytes, cut at a character boundary, without NULs.
    static func truncated(_ label: String) -> String {
        var out = ""
        for ch in label.replacingOccurrences(of: "\0", with: " ") {
            if out.utf8.count + String(ch).utf8.count > labelBytes { break }
            out.append(ch)
        }
        return out
    }

    struct Chunk {
        var id: String
        /// Offset of the chunk's id; its body starts 8 bytes later.
        var offset: Int
        var size: Int
    }

    /// Where the chunks of a RIFF/RF64 file are.
    struct Layout {
        var isRF64: Bool
        var chunks: [Chunk]
        var frames: Int
        /// Where new chunks go: just past the last chunk (before any bytes past the RIFF size).
        var appendOffset: Int
        /// The offset of a `cue ` chunk after `data` that only `LIST` chunks follow (appended by `write`).
        var trailingCue: Int?
        var ds64RiffSizeOffset: Int

        static func read(fd: Int32, path: String) throws(SoundFileError) -> Layout {
            var st = stat()
            guard fstat(fd, &st) == 0, let head = readBytes(fd, at: 0, count: 12), head.count == 12 else {
                throw SoundFileError(.cannotOpen, path: path, message: "not a WAV or RF64 file (too short)")
            }
            let fileLength = Int(st.st_size)
            let magic = String(decoding: head[0..<4], as: UTF8.self)
            guard (magic == "RIFF" || magic == "RF64"), String(decoding: head[8..<12], as: UTF8.self) == "WAVE" else {
                throw SoundFileError(.unsupportedFormat, path: path, message: "cue points go into WAV and RF64 files only")
            }
            let isRF64 = magic == "RF64"
            var riffEnd = isRF64 ? fileLength : min(fileLength, 8 + Int(u32(head, 4)))
            var dataSize64: Int?
            var ds64At = 0
            var chunks: [Chunk] = []
            var at = 12
            var blockAlign = 0
            var dataSize = 0
            while at + 8 <= riffEnd, let h = readBytes(fd, at: at, count: 8), h.count == 8 {
                let id = String(decoding: h[0..<4], as: UTF8.self)
                var size = Int(u32(h, 4))
                if id == "ds64", let body = readBytes(fd, at: at + 8, count: 24), body.count == 24 {
                    ds64At = at + 8
                    riffEnd = min(fileLength, 8 + Int(u64(body, 0)))
                    dataSize64 = Int(u64(body, 8))
                }
                if id == "data" {
                    if isRF64 && size == 0xFFFF_FFFF, let d = dataSize64 { size = d }
                    dataSize = size
                }
                if id == "fmt ", let body = readBytes(fd, at: at + 8, count: 16), body.count == 16 {
                    blockAlign = Int(body[12]) | Int(body[13]) << 8
                }
                chunks.append(Chunk(id: id, offset: at, size: size))
                at += 8 + size + (size & 1)
            }
            guard chunks.contains(where: { $0.id == "data" }), blockAlign > 0 else {
                throw SoundFileError(.unsupportedFormat, path: path, message: "no fmt or data chunk")
            }
            if isRF64 && ds64At == 0 {
                throw SoundFileError(.unsupportedFormat, path: path, message: "RF64 file without a ds64 chunk")
            }
            var trailing: Int?
            if let d = chunks.firstIndex(where: { $0.id == "data" }),
               let c = chunks.indices.first(where: { $0 > d && chunks[$0].id == "cue " }),
               chunks[(c + 1)...].allSatisfy({ $0.id == "LIST" }) {
                trailing = chunks[c].offset
            }
            return Layout(isRF64: isRF64, chunks: chunks, frames: dataSize / blockAlign,
                          appendOffset: min(at, max(riffEnd, 12)), trailingCue: trailing, ds64RiffSizeOffset: ds64At)
        }
    }

    // MARK: Bytes

    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func u32(_ b: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * $1) }
    }
    static func u64(_ b: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * $1) }
    }

    static func readBytes(_ fd: Int32, at offset: Int, count: Int) -> [UInt8]? {
        guard count >= 0 else { return nil }
        var out = [UInt8](repeating: 0, count: count)
        let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        guard n >= 0 else { return nil }
        return Array(out.prefix(n))
    }

    static func pwriteAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { b -> Int in
                guard let base = b.baseAddress else { return 0 }
                return pwrite(fd, base + done, b.count - done, off_t(offset + done))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }
}

extension SoundFileReader {
    /// The file's cue points with their labels, sorted by frame: libsndfile's (`cues`), else, when it gives none or
    /// none with a label and the file is a WAV or RF64 (libsndfile's RF64 reader ignores cue chunks), those
    /// `CueChunks.read` finds walking the chunks itself. Empty when there are none; malformed chunks give fewer
    /// cues, never an error. Reads the file: not for real-time code.
    public var labelledCues: [CueMarker] {
        var list = cues ?? []
        let major = formatWord & Int32(SF_FORMAT_TYPEMASK)
        let riff = major == Int32(SF_FORMAT_WAV) || major == Int32(SF_FORMAT_RF64) || major == Int32(SF_FORMAT_WAVEX)
        if riff && list.allSatisfy({ $0.label.isEmpty }) {
            let read = (try? CueChunks.read(from: path)) ?? []
            if !read.isEmpty { list = read }
        }
        return list.sorted { $0.frame < $1.frame }
    }

    /// The file's cue points as libsndfile reads them (labels from a `LIST`/`adtl` chunk after the `cue ` chunk),
    /// or nil when it has none. libsndfile reads cue points of WAV files only.
    public var cues: [CueMarker]? {
        guard let file = handle else { return nil }
        var count: UInt32 = 0
        guard sf_command(file, Int32(SFC_GET_CUE_COUNT), &count, Int32(MemoryLayout<UInt32>.size)) != 0, count > 0 else {
            return nil
        }
        let stride = MemoryLayout<SF_CUE_POINT>.stride
        let offset = MemoryLayout<SF_CUES>.offset(of: \SF_CUES.cue_points) ?? 4
        let size = offset + Int(count) * stride
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { raw.deallocate() }
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        guard sf_command(file, Int32(SFC_GET_CUE), raw, Int32(size)) != 0 else { return nil }
        let n = Int(raw.load(as: UInt32.self))
        return (0..<min(n, Int(count))).map { i in
            let p = raw.load(fromByteOffset: offset + i * stride, as: SF_CUE_POINT.self)
            let name = withUnsafeBytes(of: p.name) { b in
                String(decoding: b.prefix { $0 != 0 }, as: UTF8.self)
            }
            return CueMarker(frame: Int(p.sample_offset), label: name)
        }
    }
}
