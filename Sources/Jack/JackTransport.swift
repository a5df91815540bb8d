import CJack

/// Where JACK transport is, as a process callback reads it: the frame, whether it rolls, and the musical position
/// when a timebase master provides one (bars and beats count from 1, as JACK does).
public struct TransportPosition: BitwiseCopyable, Equatable {
    public var frame: UInt32 = 0
    public var rolling = false
    /// Whether the bar/beat fields come from a timebase master.
    public var hasBBT = false
    public var bar: Int32 = 1
    public var beat: Int32 = 1
    public var tick: Int32 = 0
    public var ticksPerBeat: Double = 1920
    public var beatsPerBar: Float = 4
    public var beatType: Float = 4
    public var beatsPerMinute: Double = 120

    public init() {}

    /// The beat within the bar, from 0, with its fraction (LV2's time:barBeat).
    public var barBeat: Float {
        Float(beat - 1) + (ticksPerBeat > 0 ? Float(Double(tick) / ticksPerBeat) : 0)
    }
}

/// A timebase that JACK asks, each cycle of a rolling or relocated transport, where the music is: a constant tempo
/// and meter from frame 0. Plain values, read by the timebase callback on the process thread.
public struct ConstantTimebase: BitwiseCopyable {
    public var beatsPerMinute: Double
    public var beatsPerBar: Int
    public var beatType: Int
    public static let ticksPerBeat = 1920.0

    public init(beatsPerMinute: Double, beatsPerBar: Int, beatType: Int) {
        self.beatsPerMinute = beatsPerMinute
        self.beatsPerBar = beatsPerBar
        self.beatType = beatType
    }

    /// Fills `pos`'s bar, beat and tick for its frame. Realtime: safe.
    @inline(__always)
    func fill(_ pos: UnsafeMutablePointer<jack_position_t>) {
        let rate = Double(max(1, pos.pointee.frame_rate))
        let beats = Double(pos.pointee.frame) * beatsPerMinute / 60 / rate
        let perBar = Double(max(1, beatsPerBar))
        let bars = (beats / perBar).rounded(.down)
        let inBar = beats - bars * perBar
        let beat = inBar.rounded(.down)
        pos.pointee.valid = jack_position_bits_t(pos.pointee.valid.rawValue | JackPositionBBT.rawValue)
        pos.pointee.bar = Int32(clamping: Int(min(bars, 1e9))) + 1
        pos.pointee.beat = Int32(beat) + 1
        pos.pointee.tick = Int32(min(Self.ticksPerBeat - 1, ((inBar - beat) * Self.ticksPerBeat).rounded(.down)))
        pos.pointee.bar_start_tick = bars * perBar * Self.ticksPerBeat
        pos.pointee.beats_per_bar = Float(beatsPerBar)
        pos.pointee.beat_type = Float(beatType)
        pos.pointee.ticks_per_beat = Self.ticksPerBeat
        pos.pointee.beats_per_minute = beatsPerMinute
    }
}

extension JackClientHandle {
    /// Where the transport is this cycle. Realtime: safe (jack_transport_query may be called from the process
    /// callback).
    @inline(__always)
    public func transport() -> TransportPosition {
        var t = TransportPosition()
        guard let raw else { return t }
        var pos = jack_position_t()
        let state = jack_transport_query(raw, &pos)
        t.frame = pos.frame
        t.rolling = state == JackTransportRolling
        if pos.valid.rawValue & JackPositionBBT.rawValue != 0 {
            t.hasBBT = true
            t.bar = pos.bar
            t.beat = pos.beat
            t.tick = pos.tick
            t.ticksPerBeat = pos.ticks_per_beat
            t.beatsPerBar = pos.beats_per_bar
            t.beatType = pos.beat_type
            t.beatsPerMinute = pos.beats_per_minute
        }
        return t
    }
}

extension JackClient {
    /// Makes this client the timebase master with `timebase` (conditionally: when another client already is, it
    /// stays, and this returns false). `context` must stay valid until the client is closed. Control thread.
    public func becomeTimebaseMaster(_ timebase: UnsafeMutablePointer<ConstantTimebase>) -> Bool {
        guard let handle else { return false }
        return jack_set_timebase_callback(handle, 1, { _, _, pos, _, arg in
            guard let pos, let arg else { return }
            arg.assumingMemoryBound(to: ConstantTimebase.self).pointee.fill(pos)
        }, UnsafeMutableRawPointer(timebase)) == 0
    }

    /// Gives up being the timebase master. Control thread.
    public func releaseTimebase() { if let handle { jack_release_timebase(handle) } }
}
