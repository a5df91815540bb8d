import Jack
import Realtime

// The recorder's MIDI real-time path: every event of the MIDI ports goes into the MIDI ring at its stream position.
// Runs on JACK's process thread; never allocates, locks, logs, throws or waits.

extension RecorderState {
    /// The process glue of the MIDI side: every event of this cycle's MIDI port buffers, each to `takeMIDI` (called
    /// before `cycle`, so the stream position is this cycle's first frame). Realtime: safe.
    @inline(__always)
    static func captureMIDI(_ s: RecorderState, frames: UInt32) {
        let m = s.midi
        guard m.portCount > 0 else { return }
        for p in 0..<m.portCount {
            guard let buffer = m.ports[p].midiBuffer(frames) else { continue }
            for i in 0..<buffer.count {
                guard let e = buffer.event(i), let bytes = e.bytes else { continue }
                takeMIDI(s, port: p, frame: Int(e.frame), bytes: bytes, count: e.size)
            }
        }
    }

    /// One MIDI event of this cycle, `count` bytes at frame `frame` of the cycle from MIDI port `port`, into the MIDI
    /// ring at its stream position (`streamFrames + frame`; before `cycle` advances it). Counted as received, as too
    /// long for a ring slot, or as lost to a full ring. Touches nothing of libjack, so tests drive it with `cycle`.
    /// Realtime: safe.
    @inline(__always)
    static func takeMIDI(_ s: RecorderState, port: Int, frame: Int, bytes: UnsafePointer<UInt8>, count: Int) {
        let m = s.midi
        m.counters.add(RecorderMIDI.Counter.received.rawValue, 1)
        let position = s.counters.load(Counter.streamFrames.rawValue) + frame
        guard let event = MIDIRingEvent(position: position, port: port, bytes: bytes, count: count) else {
            m.counters.add(RecorderMIDI.Counter.tooLong.rawValue, 1)
            return
        }
        if !m.ring.push(event) { m.counters.add(RecorderMIDI.Counter.overrun.rawValue, 1) }
    }
}
