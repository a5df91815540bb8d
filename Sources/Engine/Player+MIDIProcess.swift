import Jack
import Realtime

// The player's MIDI real-time path: events queued at ring positions go out on the frame their position is played.
// Runs on JACK's process thread; never allocates, locks, logs, throws or waits.

extension PlayerState {
    /// Drops events cued before `position` (the play head): stale ones from before a seek or a new queue.
    /// Realtime: safe.
    @inline(__always)
    static func discardMIDI(_ s: PlayerState, before position: Int) {
        let m = s.midi
        while let e = m.ring.peek(), Int(e.position) < position {
            m.ring.drop()
            m.counters.add(PlayerMIDI.Counter.stale.rawValue, 1)
        }
    }

    /// Writes the events of ring positions `start ..< start + count`, which this cycle plays from frame `offset`
    /// of its buffers: an event at position p lands on frame `offset + p - start`. Realtime: safe.
    @inline(__always)
    static func emitMIDI(_ s: PlayerState, start: Int, count: Int, offset: Int) {
        let m = s.midi
        while let e = m.ring.peek(), Int(e.position) < start + count {
            m.ring.drop()
            let p = Int(e.position)
            if p < start {
                m.counters.add(PlayerMIDI.Counter.stale.rawValue, 1)
                continue
            }
            let port = Int(e.port) < m.portCount ? Int(e.port) : 0
            guard port < m.portCount, let buffer = m.buffers[port] else {
                m.counters.add(PlayerMIDI.Counter.lost.rawValue, 1)
                continue
            }
            let ok = e.withBytes { bytes, size in buffer.write(frame: UInt32(truncatingIfNeeded: offset + p - start), bytes: bytes, size: size) }
            m.counters.add(ok ? PlayerMIDI.Counter.sent.rawValue : PlayerMIDI.Counter.lost.rawValue, 1)
        }
    }
}
