import Testing
import Foundation
import SoundFile
import TestSupport

/// Cue points with labels appended to finished WAV/RF64 files, read back by libsndfile, by the module's own chunk
/// walker and by an independent parser (Python, written here from the RIFF layout), with the audio untouched.
@Suite struct CueChunkTests {
    static let markers = [CueMarker(frame: 0, label: "start"), CueMarker(frame: 1_234, label: "verse 1"),
                          CueMarker(frame: 24_000, label: "Übergang – chorus"), CueMarker(frame: 47_999, label: "x"),
                          CueMarker(frame: 48_000, label: "end")]

    /// An independent reader: walks the chunks in Python (no libsndfile) and prints "frame<TAB>label" per cue.
    static let pythonParser = #"""
    import struct, sys
    d = open(sys.argv[1], 'rb').read()
    assert d[8:12] == b'WAVE', 'not WAVE'
    riff = len(d) if d[0:4] == b'RF64' else 8 + struct.unpack('<I', d[4:8])[0]
    assert riff == len(d), 'RIFF size %d != file length %d' % (riff, len(d))
    pos, cues, labels, datasize = 12, {}, {}, None
    while pos + 8 <= len(d):
        cid, size = d[pos:pos+4], struct.unpack('<I', d[pos+4:pos+8])[0]
        if cid == b'ds64': datasize = struct.unpack('<Q', d[pos+16:pos+24])[0]
        if cid == b'data' and size == 0xFFFFFFFF: size = datasize
        body = d[pos+8:pos+8+size]
        if cid == b'cue ':
            n = struct.unpack('<I', body[:4])[0]
            for i in range(n):
                ident, position, fcc, cs, bs, off = struct.unpack('<II4sIII', body[4+24*i:28+24*i])
                assert fcc == b'data' and position == off
                cues[ident] = off
        if cid == b'LIST' and body[:4] == b'adtl':
            p = 4
            while p + 8 <= len(body):
                sid, ssize = body[p:p+4], struct.unpack('<I', body[p+4:p+8])[0]
                if sid == b'labl':
                    labels[struct.unpack('<I', body[p+8:p+12])[0]] = body[p+12:p+8+ssize].split(b'\0')[0].decode()
                p += 8 + ssize + (ssize & 1)
        pos += 8 + size + (size & 1)
    for ident in sorted(cues, key=lambda i: cues[i]):
        print('%d\t%s' % (cues[ident], labels.get(ident, '')))
    """#

    static func python(_ path: String) throws -> [CueMarker]? {
        guard TestEnvironment.hasProgram("python3") else { return nil }
        let script = TestEnvironment.temporaryDirectory("cuepy").appendingPathComponent("cues.py")
        try pythonParser.write(to: script, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script.path, path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let parts = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            return CueMarker(frame: Int(parts[0]) ?? -1, label: parts.count > 1 ? String(parts[1]) : "")
        }
    }

    static func file(_ name: String, frames: Int, channels: Int, format: AudioFormat) throws -> (String, [Float]) {
        let path = TestEnvironment.temporaryDirectory("cue").appendingPathComponent(name).path
        let samples = Signals.noise(frames: frames, channels: channels)
        let w = try SoundFileWriter(path: path, format: format, channels: channels, sampleRate: 48_000)
        try samples.withUnsafeBufferPointer { b throws(SoundFileError) in try w.write(b.baseAddress!, frames: frames) }
        try w.close()
        return (path, try SoundFileReader(path: path).readAll())
    }

    @Test func fiveMarkersLandAsCuePointsEveryReaderAgreesOn() throws {
        let (path, before) = try Self.file("take.wav", frames: 48_000, channels: 2, format: AudioFormat())
        try CueChunks.write(Self.markers, to: path)
        let reader = try SoundFileReader(path: path)
        #expect(reader.cues == Self.markers)                   // libsndfile
        #expect(reader.frames == 48_000)
        #expect(try reader.readAll() == before)                // the audio is untouched
        #expect(try CueChunks.read(from: path) == Self.markers)
        if let independent = try Self.python(path) { #expect(independent == Self.markers) }
    }

    @Test func anOddSizedDataChunkGetsItsPadByte() throws {
        // 24-bit mono, an odd number of frames: the data chunk ends on an odd byte.
        let (path, before) = try Self.file("odd.wav", frames: 4_801, channels: 1,
                                           format: AudioFormat(container: .wav, sample: .int24))
        let marks = [CueMarker(frame: 17, label: "a"), CueMarker(frame: 4_801, label: "bb")]
        try CueChunks.write(marks, to: path)
        let reader = try SoundFileReader(path: path)
        #expect(reader.cues == marks)
        #expect(try reader.readAll() == before)
        if let independent = try Self.python(path) { #expect(independent == marks) }
    }

    @Test func rf64FilesCarryThemToo() throws {
        // A real RF64 header (no downgrade): libsndfile's RF64 reader ignores cue chunks, the others read them.
        let (path, before) = try Self.file("big.rf64", frames: 9_600, channels: 2,
                                           format: AudioFormat(container: .rf64, sample: .float32))
        let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)).readData(ofLength: 4)
        #expect(String(decoding: head, as: UTF8.self) == "RF64")
        let marks = [CueMarker(frame: 100, label: "one"), CueMarker(frame: 9_000, label: "two")]
        try CueChunks.write(marks, to: path)
        #expect(try CueChunks.read(from: path) == marks)
        #expect(try SoundFileReader(path: path).readAll() == before)
        if let independent = try Self.python(path) { #expect(independent == marks) }
    }

    @Test func writingAgainReplacesTheMarkers() throws {
        let (path, _) = try Self.file("again.wav", frames: 1_000, channels: 1, format: AudioFormat())
        try CueChunks.write([CueMarker(frame: 1, label: "old")], to: path)
        let length = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        try CueChunks.write([CueMarker(frame: 1, label: "new"), CueMarker(frame: 999, label: "")], to: path)
        #expect(try CueChunks.read(from: path) == [CueMarker(frame: 1, label: "new"), CueMarker(frame: 999, label: "")])
        #expect(try SoundFileReader(path: path).cues == [CueMarker(frame: 1, label: "new"), CueMarker(frame: 999, label: "")])
        try CueChunks.write([CueMarker(frame: 1, label: "old")], to: path)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == length)
    }

    @Test func markersOutsideTheFileAndOtherFormatsAreRefused() throws {
        let (path, _) = try Self.file("short.wav", frames: 100, channels: 1, format: AudioFormat())
        #expect(throws: SoundFileError.self) { try CueChunks.write([CueMarker(frame: 101, label: "late")], to: path) }
        #expect(try CueChunks.read(from: path).isEmpty)
        let (flac, _) = try Self.file("a.flac", frames: 100, channels: 1, format: AudioFormat(container: .flac, sample: .int16))
        #expect { try CueChunks.write([CueMarker(frame: 1, label: "x")], to: flac) } throws: {
            ($0 as? SoundFileError)?.code == .unsupportedFormat
        }
    }
}
