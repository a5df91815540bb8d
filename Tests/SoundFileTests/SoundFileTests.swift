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
