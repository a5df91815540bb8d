import Jack
import Realtime

// The recorder's MIDI real-time path: every event of the MIDI ports goes into the MIDI ring at its stream position.
// Runs on JACK's process thread; never allocates, locks, logs, throws or waits.

extension RecorderState {
    /// Takes this cycle's MIDI input events (called before `cycle`, so the stream position is this cycle's first
    /// frame). An event at frame k of the cycle is at stream position `streamFrames + k`. Realtime: safe.
    @inline(__always)
    static func captureMIDI(_ s: RecorderState, frames: UInt32) {
        let m = s.midi
        guard m.portCount > 0 else { return }
        let position = s.counters.load(Counter.streamFrames.rawValue)
        for p in 0..<m.portCount {
            guard let buffer = m.ports[p].midiBuffer(frames) else { continue }
            for i in 0..<buffer.count {
                guard let e = buffer.event(i), let bytes = e.bytes else { continue }
                m.counters.add(RecorderMIDI.Counter.received.rawValue, 1)
                guard let event = MIDIRingEvent(position: position + Int(e.frame), port: p, bytes: bytes, count: e.size) else {
                    m.counters.add(RecorderMIDI.Counter.tooLong.rawValue, 1)
                    continue
                }
                if !m.ring.push(event) { m.counters.add(RecorderMIDI.Counter.overrun.rawValue, 1) }
            }
        }
    }
}
