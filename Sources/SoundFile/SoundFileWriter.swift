import CSndFile
#if canImport(Glibc)
import Glibc
#endif

/// Writes one new audio file with libsndfile. Never replaces an existing file: the file is created with O_EXCL.
///
/// WAV and RF64 keep their header current as they grow, to within `headerFrames` (50 ms) of audio and at every
/// `flush` (so a killed process leaves a file any reader opens, counting all but the last moments written); `.wav` is
/// RF64 with auto-downgrade, which stays a plain WAV below 4 GiB.
///
/// WAV and RF64 (at 128 channels a recorder writes 24 MB a second of them) bypass libsndfile's sample path: the
/// samples go to the file with `pwritev` in pieces that end on the file's 16 KiB boundaries (float samples straight
/// from the caller, integer ones converted into a 16 KiB block exactly as libsndfile converts them; what a call leaves
/// short of a boundary waits in the block), and libsndfile still writes every header, from the file's length.
/// libsndfile's own path wrote 8 KiB pieces (its conversion buffer) straddling page boundaries (the data starts at
/// byte 112), which cost the kernel about 40 % more per byte (docs/notes/architecture-history.md, "Wide recorders"). A recorder's
/// wide files go further (`writeUnbuffered`): their whole pieces bypass the page cache. The files are byte for byte
/// libsndfile's (SoundFileTests).
///
/// Threads: one owner (the disk-writer thread once recording). Blocks on disk I/O.
public final class SoundFileWriter {
    public let path: String
    public let channels: Int
    public let sampleRate: Int
    public let format: AudioFormat
    private var file: OpaquePointer?
    /// The file's descriptor (libsndfile closes it with the file).
    let fd: Int32
    /// Start the kernel's writeback after this many bytes of samples were handed over (0: never; the periodic
    /// `flush` then writes everything at once). A recorder's takes use `recordingWriteback`.
    public var writebackBytes = 0
    /// The recorder's writeback step: 256 KiB, so the once-a-second `fsync` finds the second's audio already on its
    /// way to the disk instead of pushing it all at once (at 128 channels, 24 MB per second, whose writeback held a CPU
    /// for milliseconds beside the real-time threads; docs/notes/architecture-history.md, "Wide recorders").
    public static let recordingWriteback = 256 << 10
    private var bytesSinceWriteback = 0
    /// Rewrite the header after this many frames (nil: only at `close`). WAV and RF64: 50 ms of audio, the ring's
    /// own horizon. libsndfile's automatic update after every write cost a seek, an `fstat`, a header write and a seek
    /// back per 16 KiB write: at 128 channels 1,500 times a second, half the writer's system calls.
    private var headerFrames: Int?
    private var framesSinceHeader = 0
    /// The file's bytes whose writeback was started, from the start (the kernel accepted the request).
    public private(set) var writebackFrom: Int64 = 0
    /// Writeback requests the kernel accepted.
    public private(set) var writebacksStarted = 0
    /// Frames written so far.
    public private(set) var framesWritten: Int = 0
    /// The direct path's block (nil: libsndfile writes the samples), and where its bytes go.
    var block: UnsafeMutableRawPointer?
    /// Bytes gathered in `block`, and the file offset of its first byte.
    var blockBytes = 0
    var blockOffset: Int64 = 0
    /// Of those, the bytes at the block's start that are in the file already (unbuffered: a `flush` put the whole
    /// pages of a piece being gathered there, and the piece still goes out from the block at its boundary).
    var blockInFile = 0
    /// Bytes per sample and per frame in the file, and where the first frame's bytes are (after the header).
    var sampleBytes = 0
    var frameBytes = 0
    var dataOffset: Int64 = 0
    /// The size of one direct write, and the boundaries it keeps to: at most what the disk writer hands over at once
    /// (a buffered `write` is not preempted; DiskWriter.writeBytes), and page-aligned.
    public static let directBlockBytes = 16 << 10
    /// The boundary the direct path's pieces end on: `directBlockBytes`, or once unbuffered, about 50 ms of audio.
    var pieceBytes = SoundFileWriter.directBlockBytes
    /// The descriptor that bypasses the page cache (`writeUnbuffered`); -1: none.
    var unbufferedFD: Int32 = -1
    /// Direct writes that went to the disk past the page cache (a piece takes one per `directWriteMax` bytes).
    public internal(set) var unbufferedWrites = 0
    /// The most bytes one direct write handed the kernel (at most `directWriteMax`).
    public internal(set) var largestDirectWrite = 0
    /// Bytes of samples the direct path wrote through the page cache.
    public internal(set) var bufferedBytes = 0
    /// Unbuffered pieces: 50 ms of audio, within these bounds (4 KiB multiples). Below 256 KiB a direct write's fixed
    /// cost (about 27 µs here) outweighs what it saves; a file whose 50 ms are less stays buffered.
    public static let unbufferedPieceRange = (256 << 10)...(4 << 20)
    /// The most one direct `pwrite` hands the kernel. Pinning a piece's pages and building its requests runs in the
    /// kernel without a rescheduling point on a kernel that does not preempt system calls, so a real-time thread
    /// woken onto the writer's CPU waits for it: a 1.2 MB piece held a CPU for up to 0.5 ms at 128 channels. A piece
    /// goes out in writes of at most this many bytes (docs/notes/architecture-history.md, "Wide recorders").
    public static let directWriteMax = 256 << 10
    /// A direct write failed: what follows is refused, with this message.
    var directFailure: String?

    /// Creates `path` (which must not exist) for writing. `throughLibsndfile`: the samples take libsndfile's own path
    /// even where the direct one applies (tests compare the two).
    public init(path: String, format: AudioFormat, channels: Int, sampleRate: Int,
                broadcast: BroadcastInfo? = nil, throughLibsndfile: Bool = false) throws(SoundFileError) {
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
        if format.container.updatesHeaderAsItGoes { headerFrames = max(1, sampleRate / 20) }
        if Self.writesDirectly(format) && !throughLibsndfile { startDirect(f) }
    }

    private static func copy<T>(_ s: String, into field: inout T) {
        withUnsafeMutableBytes(of: &field) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            let bytes = Array(s.utf8.prefix(raw.count))
            raw.copyBytes(from: bytes)
        }
    }

    deinit {
        try? close()
        closeUnbuffered()
        block?.deallocate()
    }

    /// Writes `frames` interleaved frames. A short write (disk full, I/O error) throws after keeping what fitted.
    public func write(_ samples: UnsafePointer<Float>, frames: Int) throws(SoundFileError) {
        guard let file else { throw SoundFileError(.writeFailed, path: path, message: "file already closed") }
        guard frames > 0 else { return }
        if block != nil {
            try writeDirectly(samples, frames: frames)
            return
        }
        let n = Int(sf_writef_float(file, samples, sf_count_t(frames)))
        if n > 0 { try counted(frames: n, bytes: n * channels * MemoryLayout<Float>.size) }
        if n != frames {
            let message = SoundFileError.libraryMessage(file)
            throw SoundFileError(.writeFailed, path: path,
                                 message: "write failed after \(framesWritten) frames: \(message)")
        }
    }

    /// Counts frames handed to the file and, when due, rewrites the header and starts the writeback, each after the
    /// direct path's block is written out (on libsndfile's path there is no block: `writeBlock` does nothing).
    func counted(frames: Int, bytes: Int) throws(SoundFileError) {
        framesWritten += frames
        framesSinceHeader += frames
        if let every = headerFrames, framesSinceHeader >= every {
            // Unbuffered, the piece being gathered stays in memory (written now, it would take the page cache's
            // path and push the next piece there too): the header counts what the file holds.
            if unbufferedFD < 0 { try writeBlock() }
            updateHeader()
        }
        bytesSinceWriteback += bytes
        if writebackBytes > 0 && unbufferedFD < 0 && bytesSinceWriteback >= writebackBytes {
            try writeBlock()
            startWriteback()
        }
    }

    /// Pushes the header (WAV, RF64) and buffered data to the kernel, and syncs the file.
    public func flush() {
        guard let file else { return }
        try? putBlockInFile()
        if headerFrames != nil { updateHeader() }
        sf_write_sync(file)
    }

    /// Rewrites the header for the frames written so far (the direct path's: for the frames in the file).
    private func updateHeader() {
        framesSinceHeader = 0
        if let file { sf_command(file, Int32(SFC_UPDATE_HEADER_NOW), nil, 0) }
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
        var unwritten: SoundFileError?
        if block != nil {
            // libsndfile's closing header keeps the data size of the last update (it counts the samples it wrote
            // itself, none here): one more update makes it the file's.
            do throws(SoundFileError) { try writeBlock() } catch { unwritten = error }
            // A block that a flush could not write (flush does not throw) is reported here, at the latest.
            if unwritten == nil, let directFailure {
                unwritten = SoundFileError(.writeFailed, path: path, message: directFailure)
            }
            closeUnbuffered()
            updateHeader()
        }
        file = nil
        if sf_close(f) != 0 {
            throw SoundFileError(.closeFailed, path: path, message: SoundFileError.libraryMessage(nil))
        }
        if let unwritten { throw unwritten }
    }

    /// The version string of the libsndfile in use.
    public static var libraryVersion: String { String(cString: sf_version_string()) }
}
