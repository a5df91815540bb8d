import CJack

/// One cycle's buffer of a JACK MIDI port: events with their frame within the cycle.
///
/// Threads: process thread only, inside the callback (Realtime: safe: libjack's MIDI buffer calls neither allocate
/// nor lock).
public struct JackMIDIBuffer: BitwiseCopyable, @unchecked Sendable {
    public let raw: UnsafeMutableRawPointer

    /// The buffer of `port` (a MIDI port) for this cycle, or nil outside a cycle (the warm-up call).
    @inlinable @inline(__always)
    public init?(port: JackPort, frames: UInt32) {
        guard let b = jack_port_get_buffer(port.handle, frames) else { return nil }
        raw = b
    }

    /// Events in an input buffer this cycle.
    @inlinable @inline(__always)
    public var eventCount: Int { Int(jack_midi_get_event_count(raw)) }

    /// Event `index` of an input buffer: its frame in the cycle and its bytes (valid during this cycle only).
    @inlinable @inline(__always)
    public func event(_ index: Int) -> (frame: Int, bytes: UnsafePointer<UInt8>, size: Int)? {
        var e = jack_midi_event_t()
        guard jack_midi_event_get(&e, raw, UInt32(truncatingIfNeeded: index)) == 0, let b = e.buffer else { return nil }
        return (Int(e.time), UnsafePointer(b), e.size)
    }

    /// Empties an output buffer; call once per cycle before writing.
    @inlinable @inline(__always)
    public func clear() { jack_midi_clear_buffer(raw) }

    /// Writes an event at `frame` of the cycle into an output buffer (frames must not go back within a cycle).
    /// Returns false when the buffer has no room (the caller counts the loss).
    @inlinable @inline(__always)
    public func write(frame: Int, bytes: UnsafePointer<UInt8>, size: Int) -> Bool {
        jack_midi_event_write(raw, UInt32(truncatingIfNeeded: frame), bytes, size) == 0
    }

    /// Events the buffer could not take since the last cycle's `clear` (libjack's count).
    @inlinable @inline(__always)
    public var lostEvents: Int { Int(jack_midi_get_lost_event_count(raw)) }
}

extension JackClient {
    /// Registers a JACK MIDI port ("8 bit raw midi"). Control side.
    public func registerMIDIPortForFiles(_ shortName: String, direction: PortDirection) throws(JackError) -> JackPort {
        guard let h = handle else { throw JackError(.portRegisterFailed, "cannot register MIDI port '\(shortName)': the client is closed") }
        guard let port = jack_port_register(h, shortName, JACK_DEFAULT_MIDI_TYPE, direction.flags, 0) else {
            throw JackError(.portRegisterFailed, "cannot register MIDI port '\(name):\(shortName)' (name taken or invalid?)")
        }
        return JackPort(handle: port)
    }
}
