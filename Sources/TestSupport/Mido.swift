import Foundation

/// Python's mido (`make deps` installs it): the independent MIDI file implementation tests compare against.
public enum Mido {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `script` with python3 and `args`; its standard output. Throws (never skips) when python3 or mido is
    /// missing, so a machine without them fails the test instead of passing it silently.
    public static func run(_ script: String, _ args: [String]) throws -> String {
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
            throw Failure(description: "python3 with mido failed (run `make deps`): \(String(decoding: errData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A type-1 file with tempo changes in its first track and notes, a controller, a program change and a SysEx in
    /// its second; written by mido to `path`.
    public static let writeType1 = """
    import sys, mido
    f = mido.MidiFile(type=1, ticks_per_beat=480)
    a = mido.MidiTrack(); b = mido.MidiTrack(); f.tracks += [a, b]
    a.append(mido.MetaMessage('set_tempo', tempo=500000, time=0))
    a.append(mido.MetaMessage('set_tempo', tempo=410000, time=1920))
    a.append(mido.MetaMessage('set_tempo', tempo=730001, time=1920))
    b.append(mido.Message('program_change', program=5, time=0))
    for i in range(int(sys.argv[2])):
        b.append(mido.Message('note_on', note=40 + i % 40, velocity=64 + i % 60, time=0 if i == 0 else 97 + i % 11))
        if i % 9 == 0: b.append(mido.Message('control_change', control=7, value=i % 128, time=13))
        if i % 25 == 0: b.append(mido.Message('sysex', data=[0x7D, i % 128, 1, 2], time=0))
        b.append(mido.Message('note_off', note=40 + i % 40, velocity=0, time=31))
    f.save(sys.argv[1])
    """

    /// mido's reading of a file: per message that is not meta, its time in seconds and its bytes in hex; the last
    /// line is the file's length in seconds ("end <seconds>").
    public static let dump = """
    import sys, mido
    f = mido.MidiFile(sys.argv[1])
    t = 0.0
    for m in f:
        t += m.time
        if m.is_meta: continue
        print(repr(t), bytes(m.bytes()).hex())
    print('end', repr(f.length))
    """

    /// Events of a file as mido reads them, at frames of `rate` (round(seconds · rate)), and its length in frames.
    public static func frames(_ path: String, rate: Int) throws -> (events: [(frame: Int, hex: String)], length: Int) {
        var events: [(Int, String)] = []
        var length = 0
        for line in try run(dump, [path]).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            if parts[0] == "end" {
                length = Int(((Double(parts[1]) ?? 0) * Double(rate)).rounded())
            } else {
                events.append((Int(((Double(parts[0]) ?? -1) * Double(rate)).rounded()), String(parts[1])))
            }
        }
        return (events, length)
    }

    public static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
}
