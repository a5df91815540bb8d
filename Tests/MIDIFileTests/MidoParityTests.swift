import Foundation
import MIDIFile
import Testing
import TestSupport

/// Tandem's reader and writer against an independent implementation: Python's mido (`make deps` installs it).
@Suite(.serialized) struct MidoParityTests {
    /// Runs a Python script with mido; fails the test (not skips) when mido is missing.
    static func python(_ script: String, _ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script] + args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw TestFailure("python3 with mido failed (run `make deps`): \(String(decoding: errData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self)
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// mido's reading of a file: per non-meta message, seconds (mido's tempo map, float) and the wire bytes in hex.
    static let midoDump = """
    import sys, mido
    f = mido.MidiFile(sys.argv[1])
    t = 0.0
    for m in f:
        t += m.time
        if m.is_meta: continue
        print(repr(t), bytes(m.bytes()).hex())
    """

    static func midoEvents(_ path: String) throws -> [(seconds: Double, bytes: String)] {
        try python(midoDump, [path]).split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            return (Double(parts[0]) ?? -1, String(parts[1]))
        }
    }

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

    /// Files Tandem writes: mido reads the same messages at the same times.
    @Test(arguments: [44100, 48000, 96000])
    func midoReadsWhatTandemWrites(rate: Int) throws {
        let path = TestEnvironment.temporaryDirectory("mido-w").appendingPathComponent("t.mid").path
        let w = try MIDIFileWriter(path: path, sampleRate: rate, trackName: "midi_in")
        var expected: [(Int, [UInt8])] = []
        var frame = 0
        for i in 0..<3000 {
            frame += (i * 104_729) % 4801
            let bytes: [UInt8]
            switch i % 7 {
            case 0: bytes = [0xB0 | UInt8(i % 16), UInt8(i % 120), UInt8(i % 128)]
            case 1: bytes = [0xC0 | UInt8(i % 16), UInt8(i % 128)]
            case 2: bytes = [0xF0, 0x7E, 0x7F, 0x06, 0x01, 0xF7]
            case 3: bytes = [0xE0, 0x00, 0x40]
            default: bytes = [0x90 | UInt8(i % 16), UInt8(i % 128), UInt8(1 + i % 127)]
            }
            w.append(frame: frame, bytes: bytes)
            expected.append((frame, bytes))
            if i % 500 == 0 { try w.flush() }
        }
        try w.close()
        let mido = try Self.midoEvents(path)
        #expect(mido.count == expected.count)
        var moved = 0, differing = 0
        for (m, e) in zip(mido, expected) {
            if Int((m.seconds * Double(rate)).rounded()) != e.0 { moved += 1 }
            if m.bytes != Self.hex(e.1) { differing += 1 }
        }
        #expect(moved == 0 && differing == 0)
    }

    /// Files mido writes (format 0 and 1, tempo changes, SysEx, running status as mido writes it): Tandem reads the
    /// same messages at the same absolute times.
    @Test(arguments: [0, 1])
    func tandemReadsWhatMidoWrites(format: Int) throws {
        let path = TestEnvironment.temporaryDirectory("mido-r").appendingPathComponent("t.mid").path
        let script = """
        import sys, mido
        path, fmt = sys.argv[1], int(sys.argv[2])
        f = mido.MidiFile(type=fmt, ticks_per_beat=384)
        a = mido.MidiTrack(); f.tracks.append(a)
        b = a
        if fmt == 1:
            b = mido.MidiTrack(); f.tracks.append(b)
        a.append(mido.MetaMessage('set_tempo', tempo=500000, time=0))
        tempos = [600000, 350000, 1000000, 437500]
        msgs = []
        for i in range(2000):
            delta = (i * 7919) % 197
            if i % 250 == 0:
                msgs.append(('tempo', i, mido.MetaMessage('set_tempo', tempo=tempos[(i // 250) % 4])))
            if i % 50 == 0:
                msgs.append(('msg', i, mido.Message('sysex', data=[0x43, i % 128])))
            msgs.append(('msg', i, mido.Message('note_on', channel=i % 16, note=i % 128, velocity=1 + i % 126, time=delta)))
        # Lay the messages on absolute ticks: tempo events go to track a, the rest to track b.
        tick = 0; last = {id(a): 0, id(b): 0}
        for kind, i, m in msgs:
            if m.type == 'note_on': tick += m.time
            tr = a if kind == 'tempo' else b
            tr.append(m.copy(time=tick - last[id(tr)])); last[id(tr)] = tick
        f.save(path)
        """
        _ = try Self.python(script, [path, String(format)])
        let mido = try Self.midoEvents(path)
        let rate = 48000
        let ours = try MIDIFile.read(path: path).timedEvents(sampleRate: rate)
        #expect(ours.count == mido.count && ours.count > 2000)
        var worst = 0.0, differing = 0
        for (o, m) in zip(ours, mido) {
            worst = max(worst, abs(Double(o.frame) - m.seconds * Double(rate)))
            if Self.hex(o.message.wireBytes ?? []) != m.bytes { differing += 1 }
        }
        // Our frames are exact rationals rounded once; mido's seconds are floats: they agree within rounding.
        #expect(worst <= 0.5 + 1e-6, "worst distance from mido's time: \(worst) frames")
        #expect(differing == 0)
    }
}
