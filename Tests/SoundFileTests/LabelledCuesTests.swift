import Foundation
import SoundFile
import Testing
import TestSupport

/// The cue points the player reads from each file it opens (`SoundFileReader.labelledCues`): libsndfile's, with the
/// `labl` labels it fills `SF_CUE_POINT.name` with, and for RF64 files (whose cue chunks libsndfile ignores) the
/// module's own bounded chunk walker; malformed chunks give fewer cues, never an error or a long loop.
struct LabelledCuesTests {
    static let marks = [CueMarker(frame: 100, label: "scene verse"), CueMarker(frame: 9_000, label: "scene chorus")]

    @Test func wavAndRF64FilesGiveTheirLabelledCues() throws {
        let (wav, _) = try CueChunkTests.file("cued.wav", frames: 9_600, channels: 1, format: AudioFormat())
        try CueChunks.write(Self.marks.reversed(), to: wav)
        let w = try SoundFileReader(path: wav)
        #expect(w.cues == Self.marks)                    // libsndfile gives the labl text as the name
        #expect(w.labelledCues == Self.marks)
        let (rf64, _) = try CueChunkTests.file("cued.rf64", frames: 9_600, channels: 1,
                                               format: AudioFormat(container: .rf64, sample: .float32))
        try CueChunks.write(Self.marks, to: rf64)
        let r = try SoundFileReader(path: rf64)
        #expect(r.cues == nil)                           // libsndfile's RF64 reader ignores cue chunks
        #expect(r.labelledCues == Self.marks)
        let (plain, _) = try CueChunkTests.file("plain.wav", frames: 100, channels: 1, format: AudioFormat())
        #expect(try SoundFileReader(path: plain).labelledCues == [])
        let (flac, _) = try CueChunkTests.file("plain.flac", frames: 100, channels: 1,
                                               format: AudioFormat(container: .flac, sample: .int16))
        #expect(try SoundFileReader(path: flac).labelledCues == [])
    }

    /// A cue chunk claiming 2^32-1 points, and a labl whose size runs past its list: what is there is read, at once.
    @Test func malformedChunksGiveWhatIsThere() throws {
        let (path, _) = try CueChunkTests.file("bad.rf64", frames: 1_000, channels: 1,
                                               format: AudioFormat(container: .rf64, sample: .float32))
        try CueChunks.write([CueMarker(frame: 10, label: "scene a"), CueMarker(frame: 20, label: "scene b")], to: path)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let cue = try #require((0..<(bytes.count - 4)).last { bytes[$0..<($0 + 4)].elementsEqual("cue ".utf8) })
        for i in 0..<4 { bytes[cue + 8 + i] = 0xFF }      // the count
        let labl = try #require((0..<(bytes.count - 4)).last { bytes[$0..<($0 + 4)].elementsEqual("labl".utf8) })
        bytes[labl + 4] = 0xF0                            // the last labl's size, past the list
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let began = Date()
        let read = try SoundFileReader(path: path).labelledCues
        #expect(Date().timeIntervalSince(began) < 1)
        #expect(read == [CueMarker(frame: 10, label: "scene a"), CueMarker(frame: 20, label: "")], "\(read)")
    }
}
