import Foundation
import MIDIFile
import Testing

/// Builders for hand-made files.
enum SMF {
    static func vlq(_ v: Int) -> [UInt8] {
        var out: [UInt8] = [UInt8(v & 0x7F)]
        var r = v >> 7
        while r > 0 { out.insert(UInt8(r & 0x7F) | 0x80, at: 0); r >>= 7 }
        return out
    }
    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func header(format: Int = 0, tracks: Int = 1, division: Int = 480) -> [UInt8] {
        Array("MThd".utf8) + be32(6) + [0, UInt8(format), 0, UInt8(tracks), UInt8(division >> 8), UInt8(division & 0xFF)]
    }
    static func track(_ body: [UInt8], endOfTrack: Bool = true, length: Int? = nil) -> [UInt8] {
        let b = body + (endOfTrack ? [0x00, 0xFF, 0x2F, 0x00] : [])
        return Array("MTrk".utf8) + be32(length ?? b.count) + b
    }
    static func tempo(_ us: Int) -> [UInt8] { [0xFF, 0x51, 0x03, UInt8(us >> 16), UInt8(us >> 8 & 0xFF), UInt8(us & 0xFF)] }
}

@Suite struct MIDIFileReaderTests {
    @Test func format0WithRunningStatusAndTempoChange() throws {
        // 480 ticks a quarter, 120 BPM, then 60 BPM from tick 960.
        let body: [UInt8] = [0x00] + SMF.tempo(500_000)
            + [0x00, 0x90, 60, 100]          // tick 0: note on
            + SMF.vlq(480) + [62, 100]       // tick 480: running status note on
            + SMF.vlq(480) + SMF.tempo(1_000_000)   // tick 960: tempo 60 BPM
            + SMF.vlq(480) + [0x80, 60, 0]   // tick 1440
            + [0x00, 62, 0]                  // tick 1440, running status
        let file = try MIDIFile.parse(SMF.header() + SMF.track(body))
        let events = try file.timedEvents(sampleRate: 48000)
        #expect(events.map(\.frame) == [0, 24000, 96000, 96000])
        #expect(events.map(\.message) == [.channel([0x90, 60, 100]), .channel([0x90, 62, 100]),
                                          .channel([0x80, 60, 0]), .channel([0x80, 62, 0])])
        #expect(try file.lengthInFrames(sampleRate: 48000) == 96000)
    }

    @Test func format1TempoInTrackZeroAppliesToAllTracks() throws {
        let conductor = [0x00] + SMF.tempo(600_000) + SMF.vlq(96) + SMF.tempo(300_000)
        let notes: [UInt8] = [0x00, 0x91, 64, 90] + SMF.vlq(96) + [0x81, 64, 0] + SMF.vlq(96) + [0xC1, 5]
        let file = try MIDIFile.parse(SMF.header(format: 1, tracks: 2, division: 96) + SMF.track(conductor) + SMF.track(notes))
        let events = try file.timedEvents(sampleRate: 44100)
        // 96 ticks at 0.6 s, then 96 ticks at 0.3 s.
        #expect(events.map(\.frame) == [0, 26460, 39690])
        #expect(events.allSatisfy { $0.track == 1 })
    }

    @Test func smpteDivision() throws {
        // 25 fps, 40 ticks a frame: a tick is a millisecond.
        var bytes = Array("MThd".utf8) + SMF.be32(6) + [0, 0, 0, 1, 0xE7, 40]
        bytes += SMF.track([0x00, 0x90, 1, 1] + SMF.vlq(1500) + [0x80, 1, 0])
        let events = try MIDIFile.parse(bytes).timedEvents(sampleRate: 48000)
        #expect(events.map(\.frame) == [0, 72000])
    }

    @Test func sysExWithEscapeContinuation() throws {
        let body: [UInt8] = [0x00, 0xF0, 0x03, 0x43, 0x12, 0x00]    // F0 43 12 00 ... (no F7 yet)
            + [0x10, 0xF7, 0x02, 0x33, 0xF7]                       // continuation ends it
            + [0x00, 0xF7, 0x01, 0xF8]                              // an escaped real-time message
            + [0x00, 0xF0, 0x02, 0x7E, 0xF7]
        let file = try MIDIFile.parse(SMF.header() + SMF.track(body))
        #expect(file.tracks[0].map(\.message) == [.sysex([0xF0, 0x43, 0x12, 0x00]), .escape([0x33, 0xF7]),
                                                  .escape([0xF8]), .sysex([0xF0, 0x7E, 0xF7]),
                                                  .meta(type: 0x2F, data: [])])
    }

    /// Every malformed input gets an error naming the file and the problem, and never a trap.
    @Test(arguments: [
        ("wrong chunk length", SMF.header() + SMF.track([0x00, 0x90, 1, 1], length: 400), "truncated or wrong chunk length"),
        ("missing end of track", SMF.header() + SMF.track([0x00, 0x90, 1, 1], endOfTrack: false), "no end-of-track"),
        ("running status without status", SMF.header() + SMF.track([0x00, 0x40, 0x40]), "running status without a status"),
        ("huge delta time", SMF.header() + SMF.track([0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x90, 1, 1]), "longer than 4 bytes"),
        ("sysex without end", SMF.header() + SMF.track([0x00, 0xF0, 0x02, 0x43, 0x12]), "never ends with F7"),
        ("sysex past the chunk", SMF.header() + SMF.track([0x00, 0xF0, 0x7F, 0x43], endOfTrack: false), "runs past the end"),
        ("truncated file", Array((SMF.header() + SMF.track([0x00, 0x90, 1, 1])).prefix(20)), "truncated"),
        ("missing track", SMF.header(format: 1, tracks: 2) + SMF.track([]), "file ends after 1"),
        ("not a MIDI file", Array("RIFF....WAVE".utf8), "no MThd header"),
        ("zero division", SMF.header(division: 0) + SMF.track([]), "0 ticks per quarter"),
        ("bad status", SMF.header() + SMF.track([0x00, 0xF4]), "cannot appear"),
        ("status where data belongs", SMF.header() + SMF.track([0x00, 0x90, 0x90, 1]), "where a data byte"),
        ("bad tempo", SMF.header() + SMF.track([0x00, 0xFF, 0x51, 0x02, 1, 2]), "tempo event with 2"),
        ("format 2", SMF.header(format: 2) + SMF.track([]), "format 2"),
        ("data after end", SMF.header() + SMF.track([0x00, 0xFF, 0x2F, 0x00, 0x00, 0x90, 1, 1], endOfTrack: false), "after its end-of-track"),
    ] as [(String, [UInt8], String)])
    func malformedInputIsAClearError(name: String, bytes: [UInt8], expected: String) throws {
        let dir = NSTemporaryDirectory() + "tandem-midi-bad-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/\(name.replacingOccurrences(of: " ", with: "-")).mid"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            _ = try MIDIFile.read(path: path)
            Issue.record("\(name): read without error")
        } catch {
            #expect(error.path == path)
            #expect(error.description.hasPrefix(path))
            #expect(error.reason.contains(expected), "\(name): \(error)")
        }
    }

    @Test func missingFileIsAnError() {
        #expect(throws: MIDIFileError.self) { try MIDIFile.read(path: "/nonexistent/x.mid") }
    }
}
