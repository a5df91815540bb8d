import CJack

/// What a port carries: audio (32-bit float samples) or MIDI (JACK's raw MIDI event buffers).
public enum PortType: String, Sendable, Equatable, CaseIterable {
    case audio, midi

    /// JACK's type string (JACK_DEFAULT_AUDIO_TYPE, JACK_DEFAULT_MIDI_TYPE).
    public var jackType: String {
        switch self {
        case .audio: return "32 bit float mono audio"
        case .midi: return "8 bit raw midi"
        }
    }
}

/// One MIDI event of a JACK MIDI buffer: its frame within the cycle and its bytes (valid during the cycle).
public struct JackMIDIEvent: BitwiseCopyable {
    public var frame: UInt32
    public var size: Int
    public var bytes: UnsafePointer<UInt8>?

    @inlinable public init(frame: UInt32, size: Int, bytes: UnsafePointer<UInt8>?) {
        self.frame = frame
        self.size = size
        self.bytes = bytes
    }
}

/// The Swift face of a JACK MIDI port buffer for one cycle. Realtime: safe (every member; process thread only, on a
/// buffer from `JackPort.midiBuffer`).
public struct JackMIDIBuffer: BitwiseCopyable {
    public let raw: UnsafeMutableRawPointer

    @inlinable public init(_ raw: UnsafeMutableRawPointer) { self.raw = raw }

    /// Events in the buffer (an input port's this cycle, in frame order).
    @inlinable @inline(__always)
    public var count: Int { Int(jack_midi_get_event_count(raw)) }

    /// Event `index` (< `count`), or nil when libjack refuses it.
    @inlinable @inline(__always)
    public func event(_ index: Int) -> JackMIDIEvent? {
        var e = jack_midi_event_t()
        guard jack_midi_event_get(&e, raw, UInt32(truncatingIfNeeded: index)) == 0 else { return nil }
        // A plain branch, no Optional.map: a generic closure instantiates type metadata on its first call, which
        // locks and allocates (on the process thread, at the first MIDI event: measured by the RT interposer).
        var bytes: UnsafePointer<UInt8>? = nil
        if let b = e.buffer { bytes = UnsafePointer(b) }
        return JackMIDIEvent(frame: e.time, size: e.size, bytes: bytes)
    }

    /// Empties an output port's buffer (once per cycle, before writing).
    @inlinable @inline(__always)
    public func clear() { jack_midi_clear_buffer(raw) }

    /// Appends an event at `frame` (not before the last one written); false when the buffer has no room or the
    /// frame is out of order (nothing written).
    @inlinable @inline(__always)
    public func write(frame: UInt32, bytes: UnsafePointer<UInt8>, size: Int) -> Bool {
        jack_midi_event_write(raw, frame, bytes, size) == 0
    }

    /// Events libjack could not store in this buffer (its own overflow count).
    @inlinable @inline(__always)
    public var lost: Int { Int(jack_midi_get_lost_event_count(raw)) }
}

extension JackPort {
    /// The port's MIDI buffer for the current cycle, or nil outside a cycle. Realtime: safe (RT thread only).
    @inlinable @inline(__always)
    public func midiBuffer(_ frames: jack_nframes_t) -> JackMIDIBuffer? {
        if let raw = jack_port_get_buffer(handle, frames) { return JackMIDIBuffer(raw) }
        return nil
    }
}
