import CSndFile
#if canImport(Glibc)
import Glibc
#endif

/// Broadcast-WAV (`bext`) facts written into a WAV/RF64 file's header.
public struct BroadcastInfo: Sendable {
    /// Samples since midnight at the start of the recording (the BWF time reference).
    public var timeReference: UInt64
    public var description: String
    public var originator: String
    /// "yyyy-mm-dd".
    public var originationDate: String
    /// "hh:mm:ss".
    public var originationTime: String

    public init(timeReference: UInt64, description: String, originator: String, originationDate: String,
                originationTime: String) {
        self.timeReference = timeReference
        self.description = description
        self.originator = originator
        self.originationDate = originationDate
        self.originationTime = originationTime
    }
}

/// Writes one new audio file with libsndfile. Never replaces an existing file: the file is created with O_EXCL.
///
/// WAV and RF64 keep their header current after every write (so a killed process leaves a file any reader opens);
/// `.wav` is RF64 with auto-downgrade, which stays a plain WAV below 4 GiB.
///
/// Threads: one owner (the disk-writer thread once recording). Blocks on disk I/O.
public final class SoundFileWriter {
    public let path: String
    public let channels: Int
    public let sampleRate: Int
    public let format: AudioFormat
    private var file: OpaquePointer?
    /// The file's descriptor (libsndfile closes it with the file).
    private let fd: Int32
    /// Start the kernel's writeback after this many bytes of samples were handed over (0: never; the periodic
    /// `flush` then writes everything at once). A recorder's takes use `recordingWriteback`.
    public var writebackBytes = 0
    /// The recorder's writeback step: 256 KiB, so the once-a-second `fsync` finds the second's audio already on its
    /// way to the disk instead of pushing it all at once (at 128 channels, 24 MB per second, whose writeback held a CPU
    /// for milliseconds beside the real-time threads; docs/ARCHITECTURE.md, "Wide recorders").
    public static let recordingWriteback = 256 << 10
    private var bytesSinceWriteback = 0
    /// The file's bytes whose writeback was started, from the start (the kernel accepted the request).
    public private(set) var writebackFrom: Int64 = 0
    /// Writeback requests the kernel accepted.
    public private(set) var writebacksStarted = 0
    /// Frames written so far.
    public private(set) var framesWritten: Int = 0

    /// Creates `path` (which must not exist) for writing.
    public init(path: String, format: AudioFormat, channels: Int, sampleRate: Int,
                broadcast: BroadcastInfo? = nil) throws(SoundFileError) {
        self.path = path
        self.channels = channels
        self.sampleRate = sampleRate
        self.format = format
        let word: Int32
        switch format.sndfileFormat() {
        case .success(let w): word = w
        case .failure(let e): throw SoundFileError(e.code, path: path, message: e.message)
        }
        var info = SF_INFO()
        info.format = word
        info.channels = Int32(channels)
        info.samplerate = Int32(sampleRate)
        guard sf_format_check(&info) != 0 else {
            throw SoundFileError(.unsupportedFormat, path: path,
                                 message: "libsndfile cannot write \(format.container.rawValue) "
                                        + "(\(format.sample.rawValue)) with \(channels) channels at \(sampleRate) Hz")
        }
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 {
            let err = errno
            throw SoundFileError(err == EEXIST ? .alreadyExists : .cannotOpen, path: path,
                                 message: err == EEXIST ? "file exists; Tandem never overwrites a file"
                                                        : String(cString: strerror(err)))
        }
        self.fd = fd
        guard let f = sf_open_fd(fd, Int32(SFM_WRITE), &info, 1) else {
            let message = SoundFileError.libraryMessage(nil)
            unlink(path)
            Glibc.close(fd)
            throw SoundFileError(.cannotOpen, path: path, message: message)
        }
        file = f
        if format.container == .wav {
            sf_command(f, Int32(SFC_RF64_AUTO_DOWNGRADE), nil, Int32(SF_TRUE))
        }
        if let q = format.quality {
            var level = min(1, max(0, q))
            switch format.container {
            case .ogg, .opus, .mp3:
                sf_command(f, Int32(SFC_SET_VBR_ENCODING_QUALITY), &level, Int32(MemoryLayout<Double>.size))
            case .flac:
                var compression = 1 - level
                sf_command(f, Int32(SFC_SET_COMPRESSION_LEVEL), &compression, Int32(MemoryLayout<Double>.size))
            default: break
            }
        }
        if let broadcast, format.container == .wav || format.container == .rf64 {
            var bext = SF_BROADCAST_INFO()
            Self.copy(broadcast.description, into: &bext.description)
            Self.copy(broadcast.originator, into: &bext.originator)
            Self.copy(broadcast.originationDate, into: &bext.origination_date)
            Self.copy(broadcast.originationTime, into: &bext.origination_time)
            bext.time_reference_low = UInt32(truncatingIfNeeded: broadcast.timeReference)
            bext.time_reference_high = UInt32(truncatingIfNeeded: broadcast.timeReference >> 32)
            bext.version = 1
            sf_command(f, Int32(SFC_SET_BROADCAST_INFO), &bext, Int32(MemoryLayout<SF_BROADCAST_INFO>.size))
        }
        // Clipping instead of wrap-around when float input exceeds full scale in an integer file.
        sf_command(f, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        if format.container.updatesHeaderAsItGoes {
            sf_command(f, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(SF_TRUE))
        }
    }

    private static func copy<T>(_ s: String, into field: inout T) {
        withUnsafeMutableBytes(of: &field) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            let bytes = Array(s.utf8.prefix(raw.count))
            raw.copyBytes(from: bytes)
        }
    }

    deinit { try? close() }

    /// Writes `frames` interleaved frames. A short write (disk full, I/O error) throws after keeping what fitted.
    public func write(_ samples: UnsafePointer<Float>, frames: Int) throws(SoundFileError) {
        guard let file else { throw SoundFileError(.writeFailed, path: path, message: "file already closed") }
        guard frames > 0 else { return }
        let n = Int(sf_writef_float(file, samples, sf_count_t(frames)))
        if n > 0 {
            framesWritten += n
            bytesSinceWriteback += n * channels * MemoryLayout<Float>.size
            if writebackBytes > 0 && bytesSinceWriteback >= writebackBytes { startWriteback() }
        }
        if n != frames {
            let message = SoundFileError.libraryMessage(file)
            throw SoundFileError(.writeFailed, path: path,
                                 message: "write failed after \(framesWritten) frames: \(message)")
        }
    }

    /// Pushes buffered data and the header to the kernel.
    public func flush() {
        if let file { sf_write_sync(file) }
    }

    /// Starts the writeback of what the file grew by since the last call and returns without waiting for it
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`). A failure changes nothing: `flush` writes it all anyway.
    public func startWriteback() {
        bytesSinceWriteback = 0
        guard file != nil else { return }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return }
        let size = Int64(st.st_size)
        guard size > writebackFrom else { return }
        if tandem_start_writeback(fd, writebackFrom, size - writebackFrom) == 0 {
            writebackFrom = size
            writebacksStarted += 1
        }
    }

    /// Finalizes the header and closes the file. Safe to call twice.
    public func close() throws(SoundFileError) {
        guard let f = file else { return }
        file = nil
        if sf_close(f) != 0 {
            throw SoundFileError(.closeFailed, path: path, message: SoundFileError.libraryMessage(nil))
        }
    }

    /// The version string of the libsndfile in use.
    public static var libraryVersion: String { String(cString: sf_version_string()) }
}
