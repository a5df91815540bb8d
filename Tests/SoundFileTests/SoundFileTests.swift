import Testing
import Foundation
import SoundFile
import TestSupport

@Suite struct SoundFileTests {
    @Test(arguments: [SampleFormat.float32, .int24])
    func wavRoundTripIsBitExact(sample: SampleFormat) throws {
        let dir = TestEnvironment.temporaryDirectory("sf")
        let path = dir.appendingPathComponent("a.wav").path
        let noise = Signals.noise(frames: 4800, channels: 3)
        try TestEnvironment.writeWAV(noise, channels: 3, path: path, sample: sample)
        let back = try TestEnvironment.readAudio(path)
        #expect(back.channels == 3 && back.sampleRate == 48000)
        #expect(back.samples.count == noise.count)
        let differing = zip(back.samples, noise).filter { $0.0.bitPattern != $0.1.bitPattern }.count
        #expect(differing == 0)
    }

    @Test func int16KeepsSixteenBits() throws {
        let path = TestEnvironment.temporaryDirectory("sf16").appendingPathComponent("a.wav").path
        let quantized: [Float] = (0..<1000).map { Float(($0 * 37) % 65536 - 32768) / 32768 }
        try TestEnvironment.writeWAV(quantized, channels: 1, path: path, sample: .int16)
        #expect(try TestEnvironment.readAudio(path).samples == quantized)
    }

    @Test func neverOverwritesAnExistingFile() throws {
        let path = TestEnvironment.temporaryDirectory("sfx").appendingPathComponent("take.wav").path
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SoundFileWriter(path: path, format: AudioFormat(), channels: 1, sampleRate: 48000)
        } throws: { ($0 as? SoundFileError)?.code == .alreadyExists }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
    }

    /// A recorder's writer starts the kernel's writeback every `writebackBytes` (so the periodic fsync does not push
    /// a whole second at once): on Linux the kernel accepts each request, the requests cover the file as it grew, and
    /// the file is unchanged by them.
    @Test func writebackIsStartedAsTheFileGrows() throws {
        let path = TestEnvironment.temporaryDirectory("wb").appendingPathComponent("w.wav").path
        let noise = Signals.noise(frames: 48000, channels: 8)    // 1,536,000 bytes of float samples
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: .wav, sample: .float32), channels: 8,
                                    sampleRate: 48000)
        w.writebackBytes = SoundFileWriter.recordingWriteback
        try noise.withUnsafeBufferPointer { b throws(SoundFileError) in
            for start in stride(from: 0, to: 48000, by: 480) { try w.write(b.baseAddress! + start * 8, frames: 480) }
        }
        let started = w.writebacksStarted, covered = w.writebackFrom
        try w.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(started == 5, "1,536,000 bytes in steps of 262,144")
        #expect(covered >= 5 * 256 << 10 && covered <= Int64(size), "\(covered) of \(size) bytes")
        let back = try TestEnvironment.readAudio(path)
        #expect(back.samples.elementsEqual(noise) { $0.bitPattern == $1.bitPattern })
    }

    /// While a WAV grows, another reader (a killed process's next start, sox) finds a header that counts all but the
    /// last 50 ms written, and after `flush` all of it; the header is rewritten once per 50 ms of audio, not after
    /// every write (at 128 channels that was 1,500 rewrites a second).
    @Test(arguments: [Container.wav, .rf64])
    func headerFollowsTheFileWithin50ms(container: Container) throws {
        let path = TestEnvironment.temporaryDirectory("hdr").appendingPathComponent("h.\(container.fileExtension)").path
        let noise = Signals.noise(frames: 48000, channels: 4)
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: container, sample: .float32),
                                    channels: 4, sampleRate: 48000)
        var checked = 0, lagging = 0
        try noise.withUnsafeBufferPointer { b throws(SoundFileError) in
            for start in stride(from: 0, to: 48000, by: 256) {
                try w.write(b.baseAddress! + start * 4, frames: min(256, 48000 - start))
                let counted = try SoundFileReader(path: path).frames
                #expect(counted <= w.framesWritten && w.framesWritten - counted < 2400,
                        "header counts \(counted) of \(w.framesWritten) frames")
                checked += 1
                if counted < w.framesWritten { lagging += 1 }
            }
        }
        w.flush()
        #expect(try SoundFileReader(path: path).frames == 48000)
        try w.close()
        let back = try TestEnvironment.readAudio(path)
        #expect(lagging > 150, "the header was rewritten after \(checked - lagging) of \(checked) writes")
        #expect(checked == 188 && back.samples.elementsEqual(noise) { $0.bitPattern == $1.bitPattern })
    }

    /// The direct path (WAV and RF64) leaves files byte for byte the same as libsndfile's own path: float, 24- and
    /// 16-bit samples (out of range, NaN, infinite, ties of the rounding and the smallest steps among them), any
    /// channel count, writes of any length, periodic flushes, a broadcast header; float read back bit-exact.
    @Test(arguments: [Container.wav, .rf64], [SampleFormat.float32, .int24, .int16])
    func directWritesMakeTheSameFileAsLibsndfile(container: Container, sample: SampleFormat) throws {
        let dir = TestEnvironment.temporaryDirectory("direct")
        var rng = SystemRandomNumberGenerator()
        for (round, channels) in [1, 2, 3, 128].enumerated() {
            let frames = channels == 128 ? 9000 : 60000
            var noise = Signals.noise(frames: frames, channels: channels, seed: UInt64(round + 1))
            let special: [Float] = [.nan, -.nan, 4, -4, .infinity, -.infinity, 1, -1, 0.99999994, -0.99999994,
                                    -0.0, .leastNonzeroMagnitude, 1e-30, 0.5 / 8_388_608, 1.5 / 8_388_608,
                                    -0.5 / 8_388_608, 0.5 / 32768, 1.5 / 32768, 128.5 / 2_147_483_648,
                                    255.5 / 2_147_483_648, -127.5 / 2_147_483_648, 65535.5 / 2_147_483_648]
            for (i, v) in special.enumerated() { noise[(i * 7919) % noise.count] = v }
            var cuts = [0]
            while cuts.last! < frames { cuts.append(min(frames, cuts.last! + Int.random(in: 1...5000, using: &rng))) }
            let bext = round % 2 == 0 ? BroadcastInfo(timeReference: 48000 * 3600, description: "take \(round)",
                                                      originator: "Tandem", originationDate: "2026-11-23",
                                                      originationTime: "09:00:00") : nil
            var files: [Data] = []
            for viaLibrary in [false, true] {
                let path = dir.appendingPathComponent("\(round)-\(viaLibrary).\(container.fileExtension)").path
                let w = try SoundFileWriter(path: path, format: AudioFormat(container: container, sample: sample),
                                            channels: channels, sampleRate: 48000, broadcast: bext,
                                            throughLibsndfile: viaLibrary)
                w.writebackBytes = SoundFileWriter.recordingWriteback
                try noise.withUnsafeBufferPointer { b throws(SoundFileError) in
                    for (i, (from, to)) in zip(cuts, cuts.dropFirst()).enumerated() {
                        try w.write(b.baseAddress! + from * channels, frames: to - from)
                        if i % 7 == 6 { w.flush() }
                    }
                }
                #expect(w.framesWritten == frames)
                try w.close()
                files.append(try Data(contentsOf: URL(fileURLWithPath: path)))
                let back = try TestEnvironment.readAudio(path)
                #expect(back.channels == channels && back.samples.count == noise.count)
                if sample == .float32 {
                    #expect(back.samples.elementsEqual(noise) { $0.bitPattern == $1.bitPattern })
                }
            }
            let differ = zip(files[0], files[1]).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(files[0].count == files[1].count && differ == nil,
                    "\(channels) ch: \(files[0].count) vs \(files[1].count) bytes, first difference at \(differ ?? -1)")
        }
    }

    /// The unbuffered path (a recorder's wide files: whole pieces of about 50 ms past the page cache, O_DIRECT)
    /// leaves files byte for byte the same as libsndfile's own path, with writes of any length and flushes between
    /// them, and float read back bit-exact. A flush sends the whole pages of the piece being gathered past the page
    /// cache too and keeps the pieces on their boundaries: only the first piece (from the header to the first
    /// boundary) and a part-page per flush and at the close go through the page cache.
    @Test(arguments: [Container.wav, .rf64], [SampleFormat.float32, .int24, .int16])
    func unbufferedWritesMakeTheSameFileAsLibsndfile(container: Container, sample: SampleFormat) throws {
        let dir = TestEnvironment.temporaryDirectory("unbuffered")
        var rng = SystemRandomNumberGenerator()
        let channels = sample == .int16 ? 128 : 64
        let frames = 48000
        var noise = Signals.noise(frames: frames, channels: channels, seed: 7)
        for (i, v) in [Float.nan, 4, -4, .infinity, 1, -1, 0.5 / 8_388_608].enumerated() { noise[i * 1009] = v }
        var cuts = [0]
        while cuts.last! < frames { cuts.append(min(frames, cuts.last! + Int.random(in: 1...3000, using: &rng))) }
        var files: [Data] = []
        for viaLibrary in [false, true] {
            let path = dir.appendingPathComponent("\(sample)-\(viaLibrary).\(container.fileExtension)").path
            let w = try SoundFileWriter(path: path, format: AudioFormat(container: container, sample: sample),
                                        channels: channels, sampleRate: 48000, throughLibsndfile: viaLibrary)
            #expect(w.writeUnbuffered() == !viaLibrary, "the file system here (ext4) takes O_DIRECT")
            var flushes = 0
            try noise.withUnsafeBufferPointer { b throws(SoundFileError) in
                for (i, (from, to)) in zip(cuts, cuts.dropFirst()).enumerated() {
                    try w.write(b.baseAddress! + from * channels, frames: to - from)
                    if i % 7 == 6 {
                        w.flush()
                        flushes += 1
                    }
                }
            }
            if !viaLibrary {
                #expect(w.isUnbuffered && w.unbufferedWrites > 5, "\(w.unbufferedWrites) pieces")
                // A piece (600 KiB here at 64 float channels) goes out in writes the kernel can end soon.
                #expect(w.largestDirectWrite > 0 && w.largestDirectWrite <= SoundFileWriter.directWriteMax,
                        "largest direct write \(w.largestDirectWrite) bytes")
            }
            try w.close()
            // 50 ms of these files is at most 600 KiB; a piece that followed a flush through the page cache, as
            // they did before, would put this over.
            let bound = (600 << 10) + (flushes + 1) * 4096
            #expect(viaLibrary || w.bufferedBytes <= bound,
                    "\(w.bufferedBytes) bytes through the page cache, \(flushes) flushes, bound \(bound)")
            files.append(try Data(contentsOf: URL(fileURLWithPath: path)))
            if sample == .float32 {
                let back = try TestEnvironment.readAudio(path)
                #expect(back.samples.elementsEqual(noise) { $0.bitPattern == $1.bitPattern })
            }
        }
        let differ = zip(files[0], files[1]).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(files[0].count == files[1].count && differ == nil,
                "\(files[0].count) vs \(files[1].count) bytes, first difference at \(differ ?? -1)")
    }

    /// A file whose 50 ms are too few bytes for a direct write to pay stays buffered; so does every file of a
    /// format libsndfile writes itself (FLAC: at most 8 channels).
    @Test func smallOrEncodedFilesStayBuffered() throws {
        let dir = TestEnvironment.temporaryDirectory("unbuffered-small")
        let stereo = try SoundFileWriter(path: dir.appendingPathComponent("s.wav").path,
                                         format: AudioFormat(container: .wav, sample: .float32), channels: 2,
                                         sampleRate: 48000)
        #expect(!stereo.writeUnbuffered() && !stereo.isUnbuffered)
        try stereo.close()
        let flac = try SoundFileWriter(path: dir.appendingPathComponent("w.flac").path,
                                       format: AudioFormat(container: .flac, sample: .int24), channels: 8,
                                       sampleRate: 48000)
        #expect(!flac.writeUnbuffered())
        try flac.close()
    }

    /// A `.wav` take past 4 GiB (a 128-channel float take crosses it after about three minutes): libsndfile turns
    /// the header into RF64 in place (its JUNK chunk becomes ds64, the data stays where it was), so the direct path's
    /// samples before and after the boundary read back bit-exact and the header counts every frame. 4.3 GB written
    /// and removed again.
    @Test func aWavPastFourGiBBecomesRF64WithEveryFrameInPlace() throws {
        let dir = TestEnvironment.temporaryDirectory("past4g")
        let path = dir.appendingPathComponent("big.wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let channels = 8, block = 1 << 17                        // 4 MiB of float frames per write
        let noise = Signals.noise(frames: block, channels: channels, seed: 4)
        let blocks = Int((UInt64(1) << 32) / UInt64(block * channels * 4)) + 4
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: .wav, sample: .float32),
                                    channels: channels, sampleRate: 48000)
        w.writebackBytes = SoundFileWriter.recordingWriteback
        try noise.withUnsafeBufferPointer { b throws(SoundFileError) in
            for k in 0..<blocks {
                // Each block starts at a different frame of the noise, so a shifted or repeated block shows.
                let shift = (k * 977) % block
                try w.write(b.baseAddress! + shift * channels, frames: block - shift)
                try w.write(b.baseAddress!, frames: shift)
            }
        }
        try w.close()
        let head = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped).prefix(4)
        #expect(String(decoding: head, as: UTF8.self) == "RF64")
        let r = try SoundFileReader(path: path)
        #expect(r.frames == blocks * block, "\(r.frames) of \(blocks * block) frames")
        // The block that straddles 4 GiB, one before it and the last one, each read back whole.
        let boundaryBlock = Int((UInt64(1) << 32) / UInt64(block * channels * 4))
        var buffer = [Float](repeating: 0, count: block * channels)
        for k in [0, boundaryBlock - 1, boundaryBlock, blocks - 1] {
            try r.seek(to: k * block)
            let n = try buffer.withUnsafeMutableBufferPointer { p throws(SoundFileError) in
                try r.read(into: p.baseAddress!, frames: block)
            }
            let shift = (k * 977) % block
            let expected = Array(noise[(shift * channels)...]) + Array(noise[..<(shift * channels)])
            #expect(n == block && buffer.elementsEqual(expected) { $0.bitPattern == $1.bitPattern }, "block \(k)")
        }
    }

    /// The direct path on a full disk (a 1 MiB tmpfs, root only): the write that does not fit throws, naming the
    /// frames kept; the file ends at a whole frame and its header counts exactly the frames in it, bit-exact.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"), arguments: [SampleFormat.float32, .int24])
    func aFullDiskLeavesWholeFramesCountedByTheHeader(sample: SampleFormat) throws {
        let mount = TestEnvironment.temporaryDirectory("direct-full").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 1)
        defer { TestEnvironment.unmount(mount) }
        let path = mount + "/full.wav"
        let noise = Signals.noise(frames: 48000, channels: 3)     // 576,000 bytes per pass
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: .wav, sample: sample), channels: 3,
                                    sampleRate: 48000)
        var failure: SoundFileError?
        noise.withUnsafeBufferPointer { b in
            outer: for _ in 0..<4 {
                for start in stride(from: 0, to: 48000, by: 1000) {
                    do throws(SoundFileError) { try w.write(b.baseAddress! + start * 3, frames: 1000) } catch {
                        failure = error
                        break outer
                    }
                }
            }
        }
        let error = try #require(failure, "1 MiB cannot hold 1.7 or 2.3 MB")
        #expect(error.code == .writeFailed && error.message.contains("write failed after"), "\(error)")
        try? w.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let r = try SoundFileReader(path: path)
        let frameBytes = sample == .int24 ? 9 : 12
        // An odd-sized data chunk gets its pad byte.
        #expect(r.frames > 40000 && (0...1).contains(size - 112 - r.frames * frameBytes),
                "\(r.frames) frames in \(size) bytes")
        let back = try r.readAll()
        #expect(back.indices.allSatisfy { back[$0].bitPattern == noise[$0 % noise.count].bitPattern })
        #expect(error.message.contains("after \(r.frames) frames"), "\(error)")
    }

    /// The unbuffered path on a full disk (a 4 MiB tmpfs, which takes O_DIRECT since Linux 6.6): the direct write
    /// that does not fit hands over to the page cache's path, which keeps what fits and throws, naming the frames
    /// kept; the file ends at a whole frame, its header counts them, bit-exact.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskUnbufferedLeavesWholeFramesCountedByTheHeader() throws {
        let mount = TestEnvironment.temporaryDirectory("unbuffered-full").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 4)
        defer { TestEnvironment.unmount(mount) }
        let path = mount + "/full.wav"
        let channels = 64
        let noise = Signals.noise(frames: 4800, channels: channels)     // 1,228,800 bytes per pass
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: .wav, sample: .float32),
                                    channels: channels, sampleRate: 48000)
        let unbuffered = w.writeUnbuffered()
        var failure: SoundFileError?
        noise.withUnsafeBufferPointer { b in
            outer: for _ in 0..<6 {
                for start in stride(from: 0, to: 4800, by: 480) {
                    do throws(SoundFileError) { try w.write(b.baseAddress! + start * channels, frames: 480) } catch {
                        failure = error
                        break outer
                    }
                }
            }
        }
        let error = try #require(failure, "4 MiB cannot hold 7.4 MB")
        #expect(error.code == .writeFailed && error.message.contains("write failed after"), "\(error)")
        #expect(!unbuffered || w.unbufferedWrites > 0, "unbuffered \(unbuffered): \(w.unbufferedWrites) pieces")
        try? w.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let r = try SoundFileReader(path: path)
        #expect(r.frames > 10000 && size - 112 == r.frames * channels * 4, "\(r.frames) frames in \(size) bytes")
        let back = try r.readAll()
        #expect(back.indices.allSatisfy { back[$0].bitPattern == noise[$0 % noise.count].bitPattern })
        #expect(error.message.contains("after \(r.frames) frames"), "\(error)")
        try? "unbuffered \(unbuffered), \(w.unbufferedWrites) pieces, \(r.frames) frames kept\n"
            .write(toFile: "/tmp/tandem-unbuffered-full.txt", atomically: true, encoding: .utf8)
    }

    /// Samples still in the block when the disk is full: the flush that cannot write them does not throw, so `close`
    /// reports it (a take that ends there is a disk error, not a quiet loss).
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aBlockAFlushCouldNotWriteIsReportedAtClose() throws {
        let mount = TestEnvironment.temporaryDirectory("direct-flush").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 1)
        defer { TestEnvironment.unmount(mount) }
        let w = try SoundFileWriter(path: mount + "/late.wav", format: AudioFormat(container: .wav, sample: .float32),
                                    channels: 2, sampleRate: 48000)
        // Fill what is left of the tmpfs, then hand over frames that wait in the block, under a boundary.
        let filler = FileManager.default.createFile(atPath: mount + "/filler", contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: mount + "/filler"), "\(filler)")
        while (try? handle.write(contentsOf: Data(count: 64 << 10))) != nil {}
        while (try? handle.write(contentsOf: Data(count: 4 << 10))) != nil {}
        try? handle.close()
        // 2000 frames (16,000 bytes) stay under the first 16 KiB boundary and need pages the disk no longer has.
        let noise = Signals.noise(frames: 2000, channels: 2)
        try noise.withUnsafeBufferPointer { b throws(SoundFileError) in try w.write(b.baseAddress!, frames: 2000) }
        w.flush()
        #expect(throws: SoundFileError.self) { try w.close() }
    }

    @Test func broadcastTimeReferenceIsStored() throws {
        let path = TestEnvironment.temporaryDirectory("bext").appendingPathComponent("b.wav").path
        let w = try SoundFileWriter(path: path, format: AudioFormat(), channels: 1, sampleRate: 48000,
                                    broadcast: BroadcastInfo(timeReference: 123_456_789_012, description: "take 1",
                                                             originator: "Tandem", originationDate: "2026-11-21",
                                                             originationTime: "08:30:00"))
        var zero: Float = 0
        try w.write(&zero, frames: 1)
        try w.close()
        #expect(try SoundFileReader(path: path).broadcastTimeReference == 123_456_789_012)
    }

    @Test(arguments: [Container.flac, .ogg, .opus, .mp3])
    func encodedFormatsWriteReadableFiles(container: Container) throws {
        let path = TestEnvironment.temporaryDirectory("enc").appendingPathComponent("x.\(container.fileExtension)").path
        let sine = Signals.sine(frames: 48000, channels: 2, frequency: 440, sampleRate: 48000, peak: 0.5)
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: container, sample: .int24, quality: 0.5),
                                    channels: 2, sampleRate: 48000)
        try sine.withUnsafeBufferPointer { b throws(SoundFileError) in try w.write(b.baseAddress!, frames: 48000) }
        try w.close()
        let r = try SoundFileReader(path: path)
        #expect(r.channels == 2)
        let back = try r.readAll()
        #expect(back.count / 2 >= 47000)
        if container == .flac { #expect(back == sine) }
    }

    @Test func unreadableInputsGetNamedErrors() throws {
        let dir = TestEnvironment.temporaryDirectory("bad")
        let junk = dir.appendingPathComponent("junk.wav").path
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: junk))
        for path in [junk, dir.path, dir.appendingPathComponent("missing.wav").path] {
            #expect {
                _ = try SoundFileReader(path: path)
            } throws: { e in
                let e = e as! SoundFileError
                return e.code == .cannotOpen && e.description.hasPrefix(path) && !e.message.isEmpty
            }
        }
    }

    @Test func flacRefusesFloat() {
        #expect(AudioFormat(container: .flac, sample: .float32).check(channels: 2, sampleRate: 48000) != nil)
        #expect(AudioFormat(container: .flac, sample: .int24).check(channels: 2, sampleRate: 48000) == nil)
    }
}
