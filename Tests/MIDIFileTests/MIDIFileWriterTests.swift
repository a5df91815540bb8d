import Foundation
@testable import MIDIFile
import Testing
import TestSupport

@Suite struct MIDIFileWriterTests {
    @Test(arguments: [8000, 22050, 32000, 44100, 48000, 88200, 96000, 176400, 192000, 384000])
    func timeBaseMakesOneTickOneFrame(rate: Int) {
        let base = MIDITimeBase.forSampleRate(rate)
        #expect(base.exact)
        #expect(base.division >= 1 && base.division <= 32767 && base.tempo >= 1 && base.tempo <= 0xFFFFFF)
        // A tick lasts tempo / (division · 10^6) seconds: exactly one frame.
        #expect(base.division * 1_000_000 == base.tempo * rate)
    }

    @Test func everyEventKeepsItsFrame() throws {
        let path = TestEnvironment.temporaryDirectory("smfw").appendingPathComponent("t.mid").path
        let w = try MIDIFileWriter(path: path, sampleRate: 48000, trackName: "midi_in")
        var frames: [Int] = []
        var frame = 0
        for i in 0..<2000 {
            frame += (i * 7919) % 3001
            frames.append(frame)
            w.append(frame: frame, bytes: [0x90 | UInt8(i % 16), UInt8(i % 128), 64])
        }
        w.append(frame: frame + 5, bytes: [0xF0, 0x7E, 0x01, 0xF7])
        w.append(frame: frame + 6, bytes: [0xF8])
        frames += [frame + 5, frame + 6]
        try w.close()
        let events = try MIDIFile.read(path: path).timedEvents(sampleRate: 48000)
        #expect(events.map(\.frame) == frames)
        #expect(events[2000].message == .sysex([0xF0, 0x7E, 0x01, 0xF7]))
        #expect(events[2001].message == .escape([0xF8]))
        #expect(w.events == 2002 && w.reordered == 0)
    }

    @Test func deltasBeyondTwentyEightBitsAreSplit() throws {
        let path = TestEnvironment.temporaryDirectory("smfbig").appendingPathComponent("t.mid").path
        let w = try MIDIFileWriter(path: path, sampleRate: 48000)
        let far = 3 * 0x0FFF_FFFF + 17     // about 7 hours at 48 kHz
        w.append(frame: far, bytes: [0x90, 60, 1])
        try w.close()
        #expect(try MIDIFile.read(path: path).timedEvents(sampleRate: 48000).map(\.frame) == [far])
    }

    @Test func portsAreMarkedAndFramesNeverGoBack() throws {
        let path = TestEnvironment.temporaryDirectory("smfp").appendingPathComponent("t.mid").path
        let w = try MIDIFileWriter(path: path, sampleRate: 44100)
        w.append(frame: 10, port: 0, bytes: [0x90, 1, 1])
        w.append(frame: 20, port: 1, bytes: [0x90, 2, 1])
        w.append(frame: 15, port: 1, bytes: [0x90, 3, 1])
        try w.close()
        let events = try MIDIFile.read(path: path).timedEvents(sampleRate: 44100)
        #expect(events.map(\.frame) == [10, 20, 20])
        #expect(events.map(\.port) == [0, 1, 1])
        #expect(w.reordered == 1)
    }

    @Test func neverOverwrites() throws {
        let path = TestEnvironment.temporaryDirectory("smfx").appendingPathComponent("t.mid").path
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: MIDIFileError.self) { try MIDIFileWriter(path: path, sampleRate: 48000) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
    }

    /// After each flush the file on disk is complete; a kill between the two writes of a flush leaves a file that
    /// `recover` completes with every event of that flush.
    @Test func fileIsCompleteAfterEachFlushAndRecoverable() throws {
        let path = TestEnvironment.temporaryDirectory("smfr").appendingPathComponent("t.mid").path
        let w = try MIDIFileWriter(path: path, sampleRate: 48000)
        #expect(try MIDIFile.read(path: path).timedEvents(sampleRate: 48000).isEmpty)
        for i in 0..<10 { w.append(frame: i * 100, bytes: [0x90, UInt8(i), 1]) }
        try w.flush()
        #expect(try MIDIFile.read(path: path).timedEvents(sampleRate: 48000).count == 10)
        for i in 10..<20 { w.append(frame: i * 100, bytes: [0x90, UInt8(i), 1]) }
        try w.flush()
        let complete = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(try MIDIFile.read(path: path).timedEvents(sampleRate: 48000).count == 20)

        // The state between the data write and the length write of the second flush: the old length.
        var torn = [UInt8](complete)
        let firstLength = 7 + 10 * 4 + 4   // tempo + ten events + end of track
        torn.replaceSubrange(18..<22, with: [0, 0, 0, UInt8(firstLength)])
        try Data(torn).write(to: URL(fileURLWithPath: path))
        #expect(throws: MIDIFileError.self) { try MIDIFile.read(path: path) }
        #expect(try MIDIFileWriter.recover(path: path) == 21)     // the tempo event and twenty notes
        #expect(try MIDIFile.read(path: path).timedEvents(sampleRate: 48000).map(\.frame) == (0..<20).map { $0 * 100 })

        // A cut in the middle of an event: everything before it stays.
        try Data(complete.prefix(complete.count - 6)).write(to: URL(fileURLWithPath: path))
        try MIDIFileWriter.recover(path: path)
        #expect(try MIDIFile.read(path: path).timedEvents(sampleRate: 48000).count == 19)
    }

    @Test func serializedFilesReadBack() throws {
        let file = MIDIFile(format: 1, division: .ticksPerQuarter(960), tracks: [
            [MIDITrackEvent(tick: 0, message: .meta(type: 0x51, data: [0x07, 0xA1, 0x20])),
             MIDITrackEvent(tick: 1920, message: .meta(type: 0x51, data: [0x03, 0xD0, 0x90]))],
            [MIDITrackEvent(tick: 0, message: .channel([0x90, 60, 100])),
             MIDITrackEvent(tick: 3840, message: .channel([0x80, 60, 0]))],
        ])
        let back = try MIDIFile.parse(file.serialized())
        #expect(try back.timedEvents(sampleRate: 48000).map(\.frame) == [0, 48000 + 24000])
    }
}
