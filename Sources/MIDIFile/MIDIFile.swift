/// One message of a track, as the file stores it.
public enum MIDIMessage: Sendable, Equatable {
    /// A channel message: its status byte and data bytes (running status already resolved).
    case channel([UInt8])
    /// A SysEx packet that began with F0 in the file: F0 followed by its data (which ends with F7 when the packet is
    /// complete; otherwise F7 escape packets continue it).
    case sysex([UInt8])
    /// An F7 escape: bytes sent as they are (a SysEx continuation or any other message).
    case escape([UInt8])
    /// A meta event (FF type length data): never sent to a port.
    case meta(type: UInt8, data: [UInt8])

    /// The bytes a MIDI port carries for this message, or nil for meta events.
    public var wireBytes: [UInt8]? {
        switch self {
        case .channel(let b), .sysex(let b), .escape(let b): return b
        case .meta: return nil
        }
    }
}

/// An event of a track at its absolute tick.
public struct MIDITrackEvent: Sendable, Equatable {
    public var tick: Int
    public var message: MIDIMessage
    public init(tick: Int, message: MIDIMessage) {
        self.tick = tick
        self.message = message
    }
}

/// How ticks map to time.
public enum MIDIDivision: Sendable, Equatable {
    /// Ticks per quarter note; the tempo map says how long a quarter note is.
    case ticksPerQuarter(Int)
    /// SMPTE: frames per second (24, 25, 29 = 29.97 drop-frame, 30) and ticks per frame; tempo does not apply.
    case smpte(framesPerSecond: Int, ticksPerFrame: Int)
}

/// An event at its place in time: a frame at a given sample rate, counted from the start of the file.
public struct TimedMIDIEvent: Sendable, Equatable {
    /// Frame at the sample rate asked for: round(seconds · rate).
    public var frame: Int
    /// Index of the track it came from.
    public var track: Int
    /// The MIDI port selected for it by a port meta event (FF 21) of its track, 0 if none.
    public var port: Int
    public var message: MIDIMessage
}

/// A Standard MIDI File in memory: format, division and tracks of absolute-tick events.
public struct MIDIFile: Sendable, Equatable {
    /// 0 (one track) or 1 (simultaneous tracks sharing the tempo map of all of them).
    public var format: Int
    public var division: MIDIDivision
    public var tracks: [[MIDITrackEvent]]

    public init(format: Int, division: MIDIDivision, tracks: [[MIDITrackEvent]]) {
        self.format = format
        self.division = division
        self.tracks = tracks
    }

    /// The default tempo of a file until its first tempo event: 120 quarter notes a minute.
    public static let defaultTempo = 500_000

    /// Every event of every track in time order (ties: track order, then file order), each at
    /// `round(seconds · sampleRate)` frames from the start of the file. Tempo events of any track apply to all
    /// (format 1). Meta events are included when `includeMeta` is set (for tests and for the end time).
    /// Exact: the time of each event is kept as a rational number of microseconds (128-bit integers), and only the
    /// final frame is rounded (half away from zero), so long files do not drift.
    public func timedEvents(sampleRate: Int, includeMeta: Bool = false, path: String = "<data>")
        throws(MIDIFileError) -> [TimedMIDIEvent] {
        guard sampleRate > 0 else { throw MIDIFileError(path: path, reason: "sample rate \(sampleRate) is not positive") }
        // Merge tracks stably by tick.
        var merged: [(tick: Int, track: Int, index: Int)] = []
        for (t, events) in tracks.enumerated() {
            for (i, e) in events.enumerated() { merged.append((e.tick, t, i)) }
        }
        merged.sort { a, b in a.tick != b.tick ? a.tick < b.tick : (a.track != b.track ? a.track < b.track : a.index < b.index) }

        var out: [TimedMIDIEvent] = []
        out.reserveCapacity(merged.count)
        var ports = [Int](repeating: 0, count: tracks.count)
        let rate = Int128(sampleRate)
        switch division {
        case .smpte(let fps, let tpf):
            // seconds = ticks / (fps · tpf); 29 means 30000/1001 frames a second.
            let (num, den): (Int128, Int128) = fps == 29 ? (30_000, 1001) : (Int128(fps), 1)
            for m in merged {
                let e = tracks[m.track][m.index]
                if case .meta(0x21, let d) = e.message, d.count == 1 { ports[m.track] = Int(d[0]) }
                if case .meta = e.message, !includeMeta { continue }
                // frame = ticks · rate · den / (num · tpf)
                let frame = try Self.rounded(Int128(e.tick) * rate * den, Int128(tpf) * num, path: path)
                out.append(TimedMIDIEvent(frame: frame, track: m.track, port: ports[m.track], message: e.message))
            }
        case .ticksPerQuarter(let ppq):
            // Microseconds · ppq up to the last tempo change, and where that was.
            var microTicks: Int128 = 0
            var lastTick = 0
            var tempo = Int128(Self.defaultTempo)
            let den = Int128(ppq) * 1_000_000
            for m in merged {
                let e = tracks[m.track][m.index]
                let at = microTicks + Int128(e.tick - lastTick) * tempo
                if case .meta(0x51, let d) = e.message, d.count == 3 {
                    microTicks = at
                    lastTick = e.tick
                    tempo = Int128(Int(d[0]) << 16 | Int(d[1]) << 8 | Int(d[2]))
                }
                if case .meta(0x21, let d) = e.message, d.count == 1 { ports[m.track] = Int(d[0]) }
                if case .meta = e.message, !includeMeta { continue }
                let frame = try Self.rounded(at * rate, den, path: path)
                out.append(TimedMIDIEvent(frame: frame, track: m.track, port: ports[m.track], message: e.message))
            }
        }
        return out
    }

    /// The file's length in frames: the time of its last event (end of track included).
    public func lengthInFrames(sampleRate: Int, path: String = "<data>") throws(MIDIFileError) -> Int {
        try timedEvents(sampleRate: sampleRate, includeMeta: true, path: path).last?.frame ?? 0
    }

    /// num / den rounded half up (both non-negative), as an Int, or an error when it does not fit.
    static func rounded(_ num: Int128, _ den: Int128, path: String) throws(MIDIFileError) -> Int {
        guard den > 0 else { throw MIDIFileError(path: path, reason: "division by zero in the time base") }
        let q = (2 * num + den) / (2 * den)
        guard let v = Int(exactly: q), v < Self.maximumFrame else {
            throw MIDIFileError(path: path, reason: "an event lies too far in the future to be played")
        }
        return v
    }

    /// Events at or past this frame are refused (about 6 years at 192 kHz): far beyond any real file, and far
    /// from overflowing the frame arithmetic of whoever plays them.
    public static let maximumFrame = 1 << 45
}
