import Foundation

extension MIDIFile {
    /// Files larger than this are refused before they are read (a MIDI file of 64 MiB is already absurd).
    public static let maximumFileBytes = 64 << 20

    /// Reads and parses the file at `path`. Every problem is a `MIDIFileError` naming the file.
    public static func read(path: String) throws(MIDIFileError) -> MIDIFile {
        let attrs = try? FileManager.default.attributesOfItem(atPath: path)
        guard let size = (attrs?[.size] as? NSNumber)?.intValue else {
            throw MIDIFileError(path: path, reason: "cannot be opened (missing or unreadable)")
        }
        guard size <= maximumFileBytes else {
            throw MIDIFileError(path: path, reason: "is \(size) bytes, more than the \(maximumFileBytes) a MIDI file may have")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MIDIFileError(path: path, reason: "cannot be read")
        }
        return try parse([UInt8](data), path: path)
    }

    /// Parses the bytes of a Standard MIDI File (format 0 or 1). `path` names the source in errors.
    public static func parse(_ bytes: [UInt8], path: String = "<data>") throws(MIDIFileError) -> MIDIFile {
        var p = SMFParser(bytes: bytes, path: path)
        return try p.file()
    }
}

/// A cursor over the bytes of a file; every read is bounds-checked and fails with the file's name and offset.
struct SMFParser {
    let bytes: [UInt8]
    let path: String
    var pos = 0

    init(bytes: [UInt8], path: String) {
        self.bytes = bytes
        self.path = path
    }

    func fail(_ reason: String, at offset: Int? = nil) -> MIDIFileError {
        MIDIFileError(path: path, offset: offset ?? pos, reason: reason)
    }

    mutating func u8(limit: Int, what: String) throws(MIDIFileError) -> UInt8 {
        guard pos < limit else { throw fail("\(what) runs past the end of the \(limit == bytes.count ? "file (truncated)" : "track chunk")") }
        defer { pos += 1 }
        return bytes[pos]
    }

    mutating func bigEndian(_ count: Int, what: String) throws(MIDIFileError) -> Int {
        var v = 0
        for _ in 0..<count { v = v << 8 | Int(try u8(limit: bytes.count, what: what)) }
        return v
    }

    /// A variable-length quantity: at most 4 bytes (28 bits), as the standard allows.
    mutating func vlq(limit: Int, what: String) throws(MIDIFileError) -> Int {
        let start = pos
        var v = 0
        for _ in 0..<4 {
            let b = try u8(limit: limit, what: what)
            v = v << 7 | Int(b & 0x7F)
            if b & 0x80 == 0 { return v }
        }
        throw fail("\(what) is a variable-length number longer than 4 bytes (a delta time or length beyond 2^28)", at: start)
    }

    mutating func take(_ count: Int, limit: Int, what: String) throws(MIDIFileError) -> [UInt8] {
        guard count >= 0, count <= limit - pos else {
            throw fail("\(what) of \(count) bytes runs past the end of the \(limit == bytes.count ? "file" : "track chunk") (\(max(0, limit - pos)) bytes left; truncated?)")
        }
        defer { pos += count }
        return Array(bytes[pos..<(pos + count)])
    }

    mutating func file() throws(MIDIFileError) -> MIDIFile {
        guard bytes.count >= 4 else { throw fail("is too short to be a MIDI file (\(bytes.count) bytes)", at: 0) }
        guard bytes[0..<4].elementsEqual(Array("MThd".utf8)) else {
            throw fail("is not a Standard MIDI File (no MThd header)", at: 0)
        }
        pos = 4
        let headerLength = try bigEndian(4, what: "the header length")
        guard headerLength >= 6 else { throw fail("the header chunk says \(headerLength) bytes; it needs at least 6", at: 4) }
        guard headerLength <= bytes.count - pos else {
            throw fail("the header chunk says \(headerLength) bytes but only \(bytes.count - pos) remain (truncated or wrong chunk length)", at: 4)
        }
        let headerEnd = pos + headerLength
        let format = try bigEndian(2, what: "the format")
        let trackCount = try bigEndian(2, what: "the track count")
        let rawDivision = try bigEndian(2, what: "the division")
        pos = headerEnd
        guard format == 0 || format == 1 else {
            throw fail(format == 2 ? "format 2 (independent sequences) is not supported; use format 0 or 1"
                                   : "unknown format \(format) (0, 1 or 2 exist)", at: 8)
        }
        guard trackCount >= 1 else { throw fail("the header declares no tracks", at: 10) }
        guard format == 1 || trackCount == 1 else { throw fail("format 0 must have one track, the header says \(trackCount)", at: 10) }
        let division: MIDIDivision
        if rawDivision & 0x8000 != 0 {
            let fps = 256 - (rawDivision >> 8)
            let tpf = rawDivision & 0xFF
            guard [24, 25, 29, 30].contains(fps), tpf > 0 else {
                throw fail("SMPTE division of \(fps) frames a second and \(tpf) ticks a frame is not valid", at: 12)
            }
            division = .smpte(framesPerSecond: fps, ticksPerFrame: tpf)
        } else {
            guard rawDivision > 0 else { throw fail("the division is 0 ticks per quarter note", at: 12) }
            division = .ticksPerQuarter(rawDivision)
        }

        var tracks: [[MIDITrackEvent]] = []
        while tracks.count < trackCount {
            guard pos < bytes.count else {
                throw fail("the header declares \(trackCount) tracks but the file ends after \(tracks.count) (truncated)")
            }
            let chunkStart = pos
            let id = try take(4, limit: bytes.count, what: "a chunk type")
            let length = try bigEndian(4, what: "a chunk length")
            guard length <= bytes.count - pos else {
                throw fail("chunk \(Self.printable(id)) says \(length) bytes but only \(bytes.count - pos) remain (truncated or wrong chunk length)", at: chunkStart)
            }
            let end = pos + length
            if id.elementsEqual(Array("MTrk".utf8)) {
                tracks.append(try track(end: end, index: tracks.count))
            }   // other chunk types are skipped, as the standard asks
            pos = end
        }
        return MIDIFile(format: format, division: division, tracks: tracks)
    }

    static func printable(_ id: [UInt8]) -> String {
        id.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) ? "'\(String(decoding: id, as: UTF8.self))'"
            : id.map { String(format: "%02X", $0) }.joined()
    }

    /// One track chunk from `pos` to `end`.
    mutating func track(end: Int, index: Int) throws(MIDIFileError) -> [MIDITrackEvent] {
        let start = pos
        var events: [MIDITrackEvent] = []
        var tick = 0
        var runningStatus: UInt8? = nil
        var openSysEx: Int? = nil     // offset of an F0 packet not yet ended by F7
        while pos < end {
            let eventStart = pos
            let message = try event(end: end, tick: &tick, runningStatus: &runningStatus)
            events.append(MIDITrackEvent(tick: tick, message: message))
            switch message {
            case .meta(0x2F, _):
                guard pos == end else {
                    throw fail("track \(index) has \(end - pos) bytes after its end-of-track event", at: pos)
                }
                guard openSysEx == nil else {
                    throw fail("track \(index) ends inside a SysEx message (it never ends with F7)", at: openSysEx)
                }
                return events
            case .sysex(let data):
                guard openSysEx == nil else {
                    throw fail("a new SysEx (F0) starts before the previous one ended with F7", at: eventStart)
                }
                if data.count < 2 || data.last != 0xF7 { openSysEx = eventStart }
            case .escape(let data):
                if openSysEx != nil && data.last == 0xF7 { openSysEx = nil }
            default:
                break
            }
        }
        throw fail("track \(index) has no end-of-track event (missing end of track, or wrong chunk length)", at: start)
    }

    /// The next event of a track (its delta added to `tick`), reading no further than `end`.
    mutating func event(end: Int, tick: inout Int, runningStatus: inout UInt8?) throws(MIDIFileError) -> MIDIMessage {
        let eventStart = pos
        tick += try vlq(limit: end, what: "a delta time")
        let first = try u8(limit: end, what: "an event")
        switch first {
        case 0xFF:
            let type = try u8(limit: end, what: "a meta event type")
            let length = try vlq(limit: end, what: "a meta event length")
            let data = try take(length, limit: end, what: "a meta event")
            if type == 0x51 && data.count != 3 {
                throw fail("tempo event with \(data.count) data bytes (it has 3)", at: eventStart)
            }
            return .meta(type: type, data: data)
        case 0xF0:
            let length = try vlq(limit: end, what: "a SysEx length")
            return .sysex([0xF0] + (try take(length, limit: end, what: "a SysEx message")))
        case 0xF7:
            let length = try vlq(limit: end, what: "a SysEx length")
            return .escape(try take(length, limit: end, what: "an F7 escape"))
        case 0x80...0xEF:
            runningStatus = first
            return .channel(try channel(status: first, firstData: nil, end: end))
        case 0x00...0x7F:
            guard let status = runningStatus else {
                throw fail("data byte \(String(format: "0x%02X", first)) with no status before it (running status without a status)", at: pos - 1)
            }
            return .channel(try channel(status: status, firstData: first, end: end))
        default:
            throw fail("status byte \(String(format: "0x%02X", first)) cannot appear in a MIDI file", at: pos - 1)
        }
    }

    /// A channel message's bytes: status and its 1 or 2 data bytes (each below 0x80).
    mutating func channel(status: UInt8, firstData: UInt8?, end: Int) throws(MIDIFileError) -> [UInt8] {
        let count = (status & 0xF0 == 0xC0 || status & 0xF0 == 0xD0) ? 1 : 2
        var out: [UInt8] = [status]
        if let firstData { out.append(firstData) }
        while out.count < count + 1 {
            let b = try u8(limit: end, what: "a channel message")
            guard b < 0x80 else {
                throw fail("status byte \(String(format: "0x%02X", b)) where a data byte of \(String(format: "0x%02X", status)) belongs", at: pos - 1)
            }
            out.append(b)
        }
        return out
    }
}
