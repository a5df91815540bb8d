#if canImport(Glibc)
import Glibc   // expf, logf, sinf, cosf: the C library's math, nothing of Foundation on the process thread
#endif
import Jack
import Plugins
import Realtime

// The player's real-time path: ring to ports, start offset, gain ramp, underrun and skipped-cycle counting, the wake-up
// of a cue point passed. Runs on
// JACK's process thread; never allocates, locks, logs, throws or waits.

extension PlayerState {
    /// The JACK process callback: the only part that reads libjack (port buffers, frame time), then the cycle.
    /// Realtime: safe.
    static let process: JackProcessCallback = { frames, arg in
        let s = arg!.assumingMemoryBound(to: PlayerState.self).pointee
        s.outputs.fetch(frames)
        s.midi.fetch(frames)
        PlayerState.cycle(s, frames: Int(frames), frameTime: s.client.lastFrameTime)
        return 0
    }

    /// One cycle into `outputs.buffers` (this cycle's output buffers, `frames` frames, at most `Period.maxFrames`)
    /// that began at JACK frame time `frameTime`. Touches nothing of libjack, so tests drive it cycle by cycle.
    /// Realtime: safe.
    @inline(__always)
    static func cycle(_ s: PlayerState, frames n: Int, frameTime: UInt32) {
        let began = monotonicNanoseconds()
        let c = s.counters
        let reader = s.ring.reader
        c.store(Counter.cycleFrameTime.rawValue, Int(frameTime))
        let jump = SkippedCycles.frames(frameTime: frameTime, expected: c.load(Counter.nextFrameTime.rawValue))
        if jump != 0 { c.add(Counter.missedFrames.rawValue, jump) }
        c.store(Counter.nextFrameTime.rawValue, Int(frameTime &+ UInt32(truncatingIfNeeded: n)))
        c.store(Counter.cycleRingPosition.rawValue, reader.position)
        let chain = s.chain.acquire()
        for ch in 0..<s.channels { s.buffers[ch] = chain == nil ? s.outputs.buffers[ch] : s.chainIn[ch] }
        defer {
            // The chain runs every cycle, stopped or not, so effects ring out.
            if let chain {
                ChainState.run(chain.pointee, inputs: s.buffers, outputs: s.outputs.buffers, frames: n,
                               clock: Int(frameTime))
            }
            if let tap = s.loudness { tap.copy(s.outputs.buffers, frames: n) }
            c.add(Counter.cycles.rawValue, 1)
            // Wake the reader once the ring has room for a chunk, and not again until it has written: an idle or
            // drained reader is not woken every cycle.
            let written = s.ring.totalWritten
            if s.ring.writer.space >= s.wakeSpace && c.load(Counter.wokeReaderAt.rawValue) != written {
                c.store(Counter.wokeReaderAt.rawValue, written)
                s.wakeup.post()
            }
            let cueAt = c.load(Counter.cueAt.rawValue)
            if reader.position > cueAt, let w = s.cueWakeup,
               c.compareExchange(Counter.cueAt.rawValue, expected: cueAt, desired: Int.max) {
                w.post()
            }
            let drainedAt = c.load(Counter.drainedAt.rawValue)
            if let notify = s.notify, reader.position >= drainedAt, c.load(Counter.announcedDrain.rawValue) != drainedAt {
                c.store(Counter.announcedDrain.rawValue, drainedAt)
                notify.post()
            }
            s.cycleCost.record(nanoseconds: monotonicNanoseconds() - began)
        }

        // Stale frames (before a seek or a new queue) are discarded, never played.
        let skipTo = c.load(Counter.skipTo.rawValue)
        if reader.position < skipTo { reader.consume(min(reader.available, skipTo - reader.position)) }
        discardMIDI(s, before: reader.position)

        let transport = c.load(Counter.transport.rawValue)
        let gainNow = Float(bitPattern: UInt32(truncatingIfNeeded: c.load(Counter.gainNow.rawValue)))
        if transport == Transport.stopped.rawValue || (transport == Transport.paused.rawValue && gainNow == 0) {
            silence(s, from: 0, frames: n)
            return
        }

        // A scheduled start: silence until the frame time arrives, then play from that frame of the cycle.
        var offset = 0
        let startAt = c.load(Counter.startAt.rawValue)
        if startAt != PlayerState.unset {
            let ahead = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: startAt) &- frameTime))
            if ahead >= n {
                silence(s, from: 0, frames: n)
                return
            }
            offset = max(0, ahead)
            c.compareExchange(Counter.startAt.rawValue, expected: startAt, desired: PlayerState.unset)
        }
        if c.load(Counter.startedAtFrameTime.rawValue) == PlayerState.unset {
            c.store(Counter.startedAtFrameTime.rawValue, Int(frameTime &+ UInt32(offset)))
        }
        silence(s, from: 0, frames: offset)

        let wanted = n - offset
        for ch in 0..<s.channels { s.shifted[ch] = s.buffers[ch] + offset }
        let start = reader.position
        let got = reader.read(planar: UnsafePointer(s.shifted), frames: wanted)
        emitMIDI(s, start: start, count: got, offset: offset)
        c.add(Counter.playedFrames.rawValue, got)
        if got < wanted {
            silence(s, from: offset + got, frames: wanted - got)
            if reader.position < c.load(Counter.drainedAt.rawValue) {
                c.add(Counter.underrunFrames.rawValue, wanted - got)
                c.add(Counter.underrunCycles.rawValue, 1)
            }
        }

        // Gain: ramp linearly across the cycle from where the last cycle ended to the target (0 while pausing), or
        // to where a glide asked for (`setGain(dB:rampFrames:)`) gets by the cycle's end.
        let targetCell = c.load(Counter.gainTarget.rawValue)
        if targetCell != c.load(Counter.gainSeen.rawValue) {
            c.store(Counter.gainSeen.rawValue, targetCell)
            c.store(Counter.gainFrom.rawValue, Int(gainNow.bitPattern))
            c.store(Counter.gainDone.rawValue, 0)
            c.store(Counter.gainLength.rawValue, max(0, c.load(Counter.gainRamp.rawValue)))
        }
        var gainWanted = Float(bitPattern: UInt32(truncatingIfNeeded: targetCell))
        let length = c.load(Counter.gainLength.rawValue)
        if length > 0 {
            let done = c.load(Counter.gainDone.rawValue) + got
            let from = Float(bitPattern: UInt32(truncatingIfNeeded: c.load(Counter.gainFrom.rawValue)))
            if done >= length {
                c.store(Counter.gainLength.rawValue, 0)
            } else if from > 0 && gainWanted > 0 {
                gainWanted = from * expf(logf(gainWanted / from) * Float(done) / Float(length))
            } else {
                gainWanted = from + (gainWanted - from) * Float(done) / Float(length)
            }
            c.store(Counter.gainDone.rawValue, done)
        }
        let target = transport == Transport.paused.rawValue ? 0 : gainWanted
        if gainNow != 1 || target != 1 {
            let step = (target - gainNow) / Float(max(1, got))
            for ch in 0..<s.channels {
                let b = s.shifted[ch]
                var g = gainNow
                for i in 0..<got {
                    g += step
                    b[i] *= g
                }
            }
            c.store(Counter.gainNow.rawValue, Int(target.bitPattern))
        }
    }

    /// Realtime: safe.
    @inline(__always)
    static func silence(_ s: PlayerState, from: Int, frames: Int) {
        guard frames > 0 else { return }
        for ch in 0..<s.channels { (s.buffers[ch] + from).update(repeating: 0, count: frames) }
    }
}
