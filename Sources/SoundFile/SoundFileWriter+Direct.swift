import CSndFile
#if canImport(Glibc)
import Glibc
#endif

// The direct path (see `SoundFileWriter`): the samples' bytes written with `pwritev` in pieces that end on the
// file's boundaries, and, once `writeUnbuffered`, past the page cache. Disk-writer thread, as the writer's owner.
extension SoundFileWriter {
    /// Whether `format` takes the direct path: a WAV or RF64 (both by libsndfile's RF64 writer, which keeps the
    /// data's offset when it turns a WAV into an RF64 past 4 GiB) on a little-endian machine, where the file's float
    /// samples are the caller's bytes and its integer ones are little-endian too.
    static func writesDirectly(_ format: AudioFormat) -> Bool {
        (format.container == .wav || format.container == .rf64) && 1.littleEndian == 1
    }

    /// Writes the header as it will stay (its size is fixed once the format and broadcast facts are set) and starts
    /// the direct path where it ends. Without a header of the expected shape, libsndfile keeps writing the samples.
    func startDirect(_ f: OpaquePointer) {
        sf_command(f, Int32(SFC_UPDATE_HEADER_NOW), nil, 0)
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 0 else { return }
        dataOffset = Int64(st.st_size)
        blockOffset = dataOffset
        sampleBytes = format.sample == .int16 ? 2 : format.sample == .int24 ? 3 : MemoryLayout<Float>.size
        frameBytes = channels * sampleBytes
        // Room past the boundary for the bytes of a sample the boundary cuts.
        block = UnsafeMutableRawPointer.allocate(byteCount: Self.directBlockBytes + 4, alignment: 4096)
    }

    /// From here on, the samples' whole pieces go to the disk past the page cache (O_DIRECT, pieces of about 50 ms
    /// of audio, 4 KiB-aligned in the file and in memory): a buffered write costs the kernel a page-cache page per
    /// 4 KiB (allocated, copied into, accounted dirty, written back, freed), which at 128 channels was two thirds of
    /// the disk writer's CPU; a direct write only pins the block and hands it to the device (docs/notes/architecture-history.md,
    /// "Wide recorders"), `directWriteMax` bytes at a time. What stays buffered: the header, the piece from the header
    /// to the first boundary, and the part-page a `flush` or `close` ends on (a flush's whole pages go past the page
    /// cache, and its piece is written again, whole, at its boundary; `putBlockInFile`). The header is still
    /// rewritten every 50 ms, counting what the file holds: a killed process loses at most the piece being gathered
    /// as well.
    /// Call before the first write. False, and nothing changes, where the format takes libsndfile's path, its 50 ms
    /// are less than `unbufferedPieceRange` allows, or the file system refuses (then the page cache serves as before).
    @discardableResult
    public func writeUnbuffered() -> Bool {
        guard block != nil, framesWritten == 0, blockBytes == 0, unbufferedFD < 0, frameBytes > 0 else { return false }
        let fiftyMs = (frameBytes * sampleRate / 20 + 4095) / 4096 * 4096
        guard fiftyMs >= Self.unbufferedPieceRange.lowerBound else { return false }
        let fd = tandem_open_unbuffered(path)
        guard fd >= 0 else { return false }
        let piece = min(fiftyMs, Self.unbufferedPieceRange.upperBound)
        block?.deallocate()
        // Room past the boundary for the bytes of a sample the boundary cuts, as the buffered block has.
        block = UnsafeMutableRawPointer.allocate(byteCount: piece + 4, alignment: 4096)
        pieceBytes = piece
        unbufferedFD = fd
        return true
    }

    /// Whether whole pieces go past the page cache.
    public var isUnbuffered: Bool { unbufferedFD >= 0 }

    func closeUnbuffered() {
        if unbufferedFD >= 0 { Glibc.close(unbufferedFD) }
        unbufferedFD = -1
    }

    /// The direct path: writes the samples' bytes in pieces that end on the file's boundaries (16 KiB; unbuffered,
    /// `pieceBytes`) and gathers the rest in the block. Buffered float samples are the file's bytes: what the block
    /// gathered before, then the samples themselves, go out in one `pwritev`. Otherwise the samples are gathered in
    /// the block (integers converted by libsndfile's conversion; unbuffered floats copied, since the aligned block
    /// is what goes out) and the block goes out whenever it reaches a boundary, a sample cut there carried over.
    func writeDirectly(_ samples: UnsafePointer<Float>, frames: Int) throws(SoundFileError) {
        if let directFailure { throw SoundFileError(.writeFailed, path: path, message: directFailure) }
        guard let block else { return }
        let boundary = Int64(pieceBytes)
        if sampleBytes == MemoryLayout<Float>.size && unbufferedFD < 0 {
            var source = UnsafeRawPointer(samples)
            var left = frames * frameBytes
            while left > 0 {
                let room = Int(boundary - blockOffset % boundary) - blockBytes
                if left < room {
                    (block + blockBytes).copyMemory(from: source, byteCount: left)
                    blockBytes += left
                    break
                }
                try writeOut(blockBytes, then: source, bytes: room)
                source += room
                left -= room
            }
        } else {
            var source = samples
            var left = frames * channels
            while left > 0 {
                let toBoundary = Int(boundary - blockOffset % boundary)
                let k = min(left, (toBoundary - blockBytes + sampleBytes - 1) / sampleBytes)
                if sampleBytes == MemoryLayout<Float>.size {
                    (block + blockBytes).copyMemory(from: source, byteCount: k * sampleBytes)
                } else {
                    tandem_float_to_pcm_le(source, block.assumingMemoryBound(to: UInt8.self) + blockBytes, k,
                                           Int32(sampleBytes))
                }
                blockBytes += k * sampleBytes
                source += k
                left -= k
                if blockBytes >= toBoundary { try writeOut(toBoundary) }
            }
        }
        try counted(frames: frames, bytes: frames * frameBytes)
    }

    /// Writes out all the block holds.
    func writeBlock() throws(SoundFileError) { try writeOut(blockBytes) }

    /// Puts all the block holds into the file (for a `flush`). Unbuffered, the block keeps it: its whole pages go
    /// past the page cache and the last part-page through it, and the piece still goes out whole at its boundary,
    /// so the pieces after a flush stay aligned and unbuffered (a flush that gave up the block moved every piece's
    /// start off its boundary: up to two pieces a second, 2.4 MB each at 256 channels, took the page cache's path).
    func putBlockInFile() throws(SoundFileError) {
        try writeOut(blockBytes, keep: unbufferedFD >= 0)
    }

    /// Writes out the block's first `head` bytes followed by `bytes` from `tail`, past the `blockInFile` bytes the
    /// file has already; what the block holds past `head` moves to its start, unless `keep` (then the block stays
    /// as it is, all of it in the file). A failure leaves the file's samples at a whole frame and refuses what
    /// follows.
    private func writeOut(_ head: Int, then tail: UnsafeRawPointer? = nil, bytes tailBytes: Int = 0,
                          keep: Bool = false) throws(SoundFileError) {
        guard let block, head + tailBytes > 0, directFailure == nil else { return }
        let total = head + tailBytes
        var done = min(blockInFile, head)
        var failure: Int32 = 0
        while done < total {
            let offset = blockOffset + Int64(done)
            // The whole pages up to `head` go past the page cache (the pieces' boundaries are whole pages, so only
            // a flush or the close leaves a part-page, which the page cache takes).
            let pages = min((head - done) / 4096 * 4096, Self.directWriteMax)
            if unbufferedFD >= 0 && tail == nil && done % 4096 == 0 && offset % 4096 == 0 && pages > 0 {
                let n = pwrite(unbufferedFD, block + done, pages, off_t(offset))
                if n > 0 {
                    done += n
                    unbufferedWrites += 1
                    largestDirectWrite = max(largestDirectWrite, pages)
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                // Refused (a device with larger blocks, a file system that took the open but not the write) or
                // failed (a full disk): the page cache's path from here on, which keeps what fits and says why not.
                closeUnbuffered()
                continue
            }
            var pieces = (iovec(), iovec())
            let n = withUnsafeMutableBytes(of: &pieces) { raw -> Int in
                let iov = raw.bindMemory(to: iovec.self)
                var count = 0
                if done < head {
                    iov[0] = iovec(iov_base: block + done, iov_len: head - done)
                    count = 1
                }
                if let tail, tailBytes > 0 {
                    let from = max(0, done - head)
                    iov[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: tail + from),
                                       iov_len: tailBytes - from)
                    count += 1
                }
                return pwritev(fd, iov.baseAddress, Int32(count), off_t(offset))
            }
            if n > 0 {
                done += n
                bufferedBytes += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                failure = n < 0 ? errno : ENOSPC
                break
            }
        }
        if failure == 0 {
            if keep {
                // A part-page at the end goes out again with the piece, past the page cache this time (the kernel
                // writes back and drops its cached copy first), so the piece's next write starts on a page.
                blockInFile = blockOffset % 4096 == 0 ? head / 4096 * 4096 : head
                return
            }
            blockInFile = 0
            blockOffset += Int64(total)
            blockBytes -= head
            if blockBytes > 0 { block.copyMemory(from: block + head, byteCount: blockBytes) }
            return
        }
        let whole = (blockOffset + Int64(done) - dataOffset) / Int64(frameBytes)
        _ = ftruncate(fd, off_t(dataOffset + whole * Int64(frameBytes)))
        blockOffset = dataOffset + whole * Int64(frameBytes)
        blockBytes = 0
        blockInFile = 0
        let message = "write failed after \(whole) frames: \(String(cString: strerror(failure)))"
        directFailure = message
        throw SoundFileError(.writeFailed, path: path, message: message)
    }
}
