import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The time base of files Tandem writes: a tempo and a division such that one tick is one frame.
public struct MIDITimeBase: Sendable, Equatable {
    /// Ticks per quarter note (1...32767).
    public var division: Int
    /// Microseconds per quarter note (1...0xFFFFFF).
    public var tempo: Int
    /// Whether one tick is exactly one frame at the rate it was made for.
    public var exact: Bool

    /// For `sampleRate`: 120 quarter notes a minute with `rate / 2` ticks each when that fits (every common rate up to
    /// 64 kHz: a tick is then exactly one frame and a DAW shows the file at 120 BPM); otherwise the largest division
    /// for which some tempo makes a tick exactly one frame (96 kHz: 24000 ticks at 250000 µs, 240 BPM). A rate
    /// with no such pair (a prime rate above 32767) gets 32767 ticks at 500000 µs and is rounded to the nearest
    /// tick (`exact` false).
    public static func forSampleRate(_ sampleRate: Int) -> MIDITimeBase {
        if sampleRate > 0, sampleRate % 2 == 0, sampleRate / 2 <= 32767 {
            return MIDITimeBase(division: sampleRate / 2, tempo: 500_000, exact: true)
        }
        if sampleRate > 0 {
            for d in stride(from: 32767, through: 1, by: -1) where (d * 1_000_000) % sampleRate == 0 {
                let t = d * 1_000_000 / sampleRate
                if t >= 1 && t <= 0xFFFFFF { return MIDITimeBase(division: d, tempo: t, exact: true) }
            }
        }
        return MIDITimeBase(division: 32767, tempo: 500_000, exact: false)
    }

    /// The tick of `frame` at `sampleRate` (the frame itself when exact).
    public func tick(frame: Int, sampleRate: Int) -> Int {
        if exact { return frame }
        let num = Int128(frame) * Int128(division) * 1_000_000
        let den = Int128(tempo) * Int128(max(1, sampleRate))
        return Int(clamping: (2 * num + den) / (2 * den))
    }
}

// MARK: - Encoding

enum SMFEncoding {
    /// A variable-length quantity (at most 0x0FFFFFFF).
    static func vlq(_ value: Int, into out: inout [UInt8]) {
        var v = max(0, min(value, 0x0FFF_FFFF))
        var stack: [UInt8] = [UInt8(v & 0x7F)]
        v >>= 7
        while v > 0 {
            stack.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(contentsOf: stack.reversed())
    }

    /// A delta of any size: deltas beyond the 28 bits a file can hold are split by empty marker meta events.
    static func delta(_ value: Int, into out: inout [UInt8]) {
        var rest = max(0, value)
        while rest > 0x0FFF_FFFF {
            vlq(0x0FFF_FFFF, into: &out)
            out.append(contentsOf: [0xFF, 0x06, 0x00])
            rest -= 0x0FFF_FFFF
        }
        vlq(rest, into: &out)
    }

    /// Event bytes after the delta. Wire bytes from a port become a channel message when they are one (status
    /// 0x80–0xEF with its data bytes), a SysEx event when they run F0 … F7, and an F7 escape otherwise (real-time
    /// and other system messages, anything malformed): the file never says more or less than what arrived.
    static func event(_ message: MIDIMessage, into out: inout [UInt8]) {
        switch message {
        case .channel(let b):
            if isChannelMessage(b) { out.append(contentsOf: b) } else { escape(b, into: &out) }
        case .sysex(let b):
            if b.first == 0xF0 {
                out.append(0xF0)
                vlq(b.count - 1, into: &out)
                out.append(contentsOf: b.dropFirst())
            } else {
                escape(b, into: &out)
            }
        case .escape(let b):
            escape(b, into: &out)
        case .meta(let type, let data):
            out.append(contentsOf: [0xFF, type])
            vlq(data.count, into: &out)
            out.append(contentsOf: data)
        }
    }

    static func escape(_ b: [UInt8], into out: inout [UInt8]) {
        out.append(0xF7)
        vlq(b.count, into: &out)
        out.append(contentsOf: b)
    }

    static func isChannelMessage(_ b: [UInt8]) -> Bool {
        guard let s = b.first, s >= 0x80, s < 0xF0 else { return false }
        let need = (s & 0xF0 == 0xC0 || s & 0xF0 == 0xD0) ? 2 : 3
        return b.count == need && b.dropFirst().allSatisfy { $0 < 0x80 }
    }

    /// The message wire bytes from a port stand for.
    static func message(wire b: [UInt8]) -> MIDIMessage {
        if isChannelMessage(b) { return .channel(b) }
        if b.count >= 2 && b.first == 0xF0 && b.last == 0xF7 && b.dropFirst().dropLast().allSatisfy({ $0 < 0x80 }) {
            return .sysex(b)
        }
        return .escape(b)
    }

    static let endOfTrack: [UInt8] = [0x00, 0xFF, 0x2F, 0x00]

    static func header(format: Int, tracks: Int, division: MIDIDivision) -> [UInt8] {
        var out = Array("MThd".utf8) + [0, 0, 0, 6, 0, UInt8(format), UInt8(tracks >> 8), UInt8(tracks & 0xFF)]
        switch division {
        case .ticksPerQuarter(let d):
            out += [UInt8((d >> 8) & 0x7F), UInt8(d & 0xFF)]
        case .smpte(let fps, let tpf):
            out += [UInt8(truncatingIfNeeded: -fps), UInt8(tpf & 0xFF)]
        }
        return out
    }

    static func bigEndian32(_ v: Int) -> [UInt8] {
        [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }
}

extension MIDIFile {
    /// The file as bytes (full status bytes, no running status). Events of a track must be in tick order; a track
    /// without an end-of-track event gets one at its last tick.
    public func serialized() -> [UInt8] {
        var out = SMFEncoding.header(format: format, tracks: tracks.count, division: division)
        for track in tracks {
            var body: [UInt8] = []
            var last = 0
            var ended = false
            for e in track where !ended {
                SMFEncoding.delta(e.tick - last, into: &body)
                last = max(last, e.tick)
                SMFEncoding.event(e.message, into: &body)
                if case .meta(0x2F, _) = e.message { ended = true }
            }
            if !ended { body += SMFEncoding.endOfTrack }
            out += Array("MTrk".utf8) + SMFEncoding.bigEndian32(body.count) + body
        }
        return out
    }
}

// MARK: - The recorder's writer

/// Writes a Standard MIDI File as events arrive, with one tick per frame (see `MIDITimeBase`): format 0, one track
/// that starts with the tempo event, events in the order given. Events from several ports are told apart by MIDI
/// port meta events (FF 21) before each change of port.
///
/// Crash promise: after every `flush` the file on disk is complete (the events so far, an end-of-track event and a
/// track length that covers them), so a process killed between flushes leaves a file every reader opens, holding
/// everything up to the last flush. The next flush overwrites the end-of-track event and then updates the length;
/// a kill between those two writes leaves a track whose length is short by the new events, which
/// `MIDIFileWriter.recover` completes.
///
/// Threads: one owner (the recorder's disk thread). Never overwrites a file (O_EXCL).
public final class MIDIFileWriter {
    public let path: String
    public let sampleRate: Int
    public let timeBase: MIDITimeBase
    private var fd: Int32
    /// Bytes of the track data on disk before `pending`, not counting the end-of-track event.
    private var dataLength: Int
    private var pending: [UInt8] = []
    private var lastTick = 0
    private var lastPort = 0
    /// Events appended, and those whose frame lay before the previous event's (written at the previous one's tick).
    public private(set) var events = 0
    public private(set) var reordered = 0

    /// Offset of the track chunk's length field, and of its data.
    static let lengthOffset = 18
    static let dataOffset = 22

    /// Creates `path` (never overwriting) and writes the header, the tempo event and an end-of-track event, so
    /// even an empty take is a valid file. `trackName` goes into a track-name meta event when given.
    public init(path: String, sampleRate: Int, trackName: String? = nil) throws(MIDIFileError) {
        self.path = path
        self.sampleRate = sampleRate
        timeBase = MIDITimeBase.forSampleRate(sampleRate)
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw MIDIFileError(path: path, reason: "cannot be created: \(String(cString: strerror(errno)))")
        }
        let t = timeBase.tempo
        var head = SMFEncoding.header(format: 0, tracks: 1, division: .ticksPerQuarter(timeBase.division))
        head += Array("MTrk".utf8) + [0, 0, 0, 0]
        var body: [UInt8] = [0x00, 0xFF, 0x51, 0x03, UInt8(t >> 16), UInt8((t >> 8) & 0xFF), UInt8(t & 0xFF)]
        if let trackName {
            body += [0x00]
            SMFEncoding.event(.meta(type: 0x03, data: Array(trackName.utf8.prefix(1000))), into: &body)
        }
        dataLength = body.count
        do {
            try write(head, at: 0)
            try write(body + SMFEncoding.endOfTrack, at: Int(Self.dataOffset))
            try write(SMFEncoding.bigEndian32(dataLength + 4), at: Self.lengthOffset)
        } catch {
            Glibc.close(fd)
            fd = -1
            throw error
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Adds an event at `frame` (from the start of the take) from port `port`. Frames must not go back; one that
    /// does is written at the previous event's tick and counted in `reordered`. Kept in memory until `flush`.
    public func append(frame: Int, port: Int = 0, bytes: [UInt8]) {
        var tick = timeBase.tick(frame: max(0, frame), sampleRate: sampleRate)
        if tick < lastTick {
            tick = lastTick
            reordered += 1
        }
        if port != lastPort {
            SMFEncoding.delta(tick - lastTick, into: &pending)
            pending += [0xFF, 0x21, 0x01, UInt8(truncatingIfNeeded: port & 0x7F)]
            lastTick = tick
            lastPort = port
        }
        SMFEncoding.delta(tick - lastTick, into: &pending)
        SMFEncoding.event(SMFEncoding.message(wire: bytes), into: &pending)
        lastTick = tick
        events += 1
    }

    /// Writes what was appended, a new end-of-track event and the new track length. Afterwards the file is
    /// complete up to here.
    public func flush() throws(MIDIFileError) {
        guard fd >= 0 else { throw MIDIFileError(path: path, reason: "is already closed") }
        guard !pending.isEmpty else { return }
        let newLength = dataLength + pending.count
        guard newLength + 4 <= Int(UInt32.max) else {
            throw MIDIFileError(path: path, reason: "the track would pass 4 GiB, the most a MIDI file can hold")
        }
        try write(pending + SMFEncoding.endOfTrack, at: Self.dataOffset + dataLength)
        try write(SMFEncoding.bigEndian32(newLength + 4), at: Self.lengthOffset)
        dataLength = newLength
        pending.removeAll(keepingCapacity: true)
    }

    /// Flushes and closes. Further calls do nothing.
    public func close() throws(MIDIFileError) {
        guard fd >= 0 else { return }
        defer {
            Glibc.close(fd)
            fd = -1
        }
        try flush()
    }

    private func write(_ bytes: [UInt8], at offset: Int) throws(MIDIFileError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw MIDIFileError(path: path, reason: "write failed: \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }

    /// Completes a file a killed writer left: keeps every whole event of its (single, last) track up to the first
    /// that is cut off or malformed or an end-of-track event, then writes an end-of-track event after them and the
    /// track length that covers them. Returns the number of events kept (meta events included). A file that is
    /// already complete is left as it is. Throws when the file has no valid header and track start.
    @discardableResult
    public static func recover(path: String) throws(MIDIFileError) -> Int {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MIDIFileError(path: path, reason: "cannot be read")
        }
        let bytes = [UInt8](data)
        if let file = try? MIDIFile.parse(bytes, path: path) { return file.tracks.reduce(0) { $0 + $1.count } }
        // Header, then track chunks; the last track chunk is the one a writer grows.
        var p = SMFParser(bytes: bytes, path: path)
        guard bytes.count >= 22, bytes[0..<4].elementsEqual(Array("MThd".utf8)) else {
            throw MIDIFileError(path: path, reason: "has no MIDI header to recover from")
        }
        p.pos = 4
        let headerLength = (try? p.bigEndian(4, what: "")) ?? 0
        p.pos = 8 + headerLength
        var trackStart = -1
        while p.pos + 8 <= bytes.count {
            let id = Array(bytes[p.pos..<(p.pos + 4)])
            guard id.elementsEqual(Array("MTrk".utf8)) else { break }
            trackStart = p.pos
            p.pos += 4
            let length = (try? p.bigEndian(4, what: "")) ?? 0
            if p.pos + length > bytes.count || length == 0 { break }
            p.pos += length
        }
        guard trackStart >= 0 else { throw MIDIFileError(path: path, reason: "has no track to recover") }
        p.pos = trackStart + 8
        var kept = 0
        var goodEnd = p.pos
        var tick = 0
        var running: UInt8? = nil
        while p.pos < bytes.count {
            guard let m = try? p.event(end: bytes.count, tick: &tick, runningStatus: &running) else { break }
            if case .meta(0x2F, _) = m { break }
            kept += 1
            goodEnd = p.pos
        }
        let newLength = goodEnd - (trackStart + 8) + 4
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw MIDIFileError(path: path, reason: "cannot be opened for writing: \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        let tail = SMFEncoding.endOfTrack
        let lengthBytes = SMFEncoding.bigEndian32(newLength)
        let ok = tail.withUnsafeBytes { pwrite(fd, $0.baseAddress!, 4, off_t(goodEnd)) } == 4
            && lengthBytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, 4, off_t(trackStart + 4)) } == 4
            && ftruncate(fd, off_t(goodEnd + 4)) == 0
        guard ok else { throw MIDIFileError(path: path, reason: "cannot be completed: \(String(cString: strerror(errno)))") }
        return kept
    }
}
