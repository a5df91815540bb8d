import Jack
import Plugins
import Realtime

// The recorder's real-time path. Everything here runs on JACK's process thread: it copies, counts and posts,
// and never allocates, locks, logs, throws or waits.

extension RecorderState {
    /// The JACK process callback: the only part that reads libjack (port buffers, frame time), then the cycle.
    /// Realtime: safe.
    static let process: JackProcessCallback = { frames, arg in
        let s = arg!.assumingMemoryBound(to: RecorderState.self).pointee
        s.inputs.fetch(frames)
        RecorderState.captureMIDI(s, frames: frames)
        RecorderState.cycle(s, frames: Int(frames), frameTime: s.client.lastFrameTime)
        return 0
    }

    /// One cycle over `inputs.buffers` (this cycle's input, `frames` frames, at most `Period.maxFrames`) that began
    /// at JACK frame time `frameTime`: run the chain, meter, copy into the ring (or drop and count), stamp the stream
    /// position, wake the writer. Touches nothing of libjack, so tests drive it cycle by cycle. Realtime: safe.
    @inline(__always)
    static func cycle(_ s: RecorderState, frames n: Int, frameTime: UInt32) {
        let began = monotonicNanoseconds()
        let counters = s.counters
        let position = counters.load(Counter.streamFrames.rawValue)
        var pendingFrames = counters.load(Counter.pendingDropFrames.rawValue)
        if pendingFrames > 0 {
            // A gap must be announced before any frame after it reaches the ring.
            let start = counters.load(Counter.pendingDropStart.rawValue)
            if s.drops.push(GapNote.overrun(at: start, frames: pendingFrames)) {
                counters.store(Counter.pendingDropFrames.rawValue, 0)
                pendingFrames = 0
            }
        }
        // Cycles the server ran without us: their frames are lost upstream, the take goes on without a gap and the
        // report notes where time jumped (a negative jump corrects the one before; see `SkippedCycles`).
        let jump = SkippedCycles.frames(frameTime: frameTime, expected: counters.load(Counter.nextFrameTime.rawValue))
        if jump < 0 && repeatsLastCycle(s, frames: n) {
            // Not a late clock but a repeated period: the jump before stands (that period was lost) and this one is
            // counted as recorded twice.
            counters.add(Counter.repeatedFrames.rawValue, -jump)
            if pendingFrames == 0 { _ = s.drops.push(GapNote.repeatedCycle(at: position, frames: -jump)) }
        } else if jump != 0 {
            counters.add(Counter.missedFrames.rawValue, jump)
            // In stream order (so not while a gap is pending, nor when the message ring is full: then only the
            // count has it).
            if pendingFrames == 0 { _ = s.drops.push(GapNote.skippedCycles(at: position, frames: jump)) }
        }
        keepProbe(s, frames: n)
        counters.store(Counter.nextFrameTime.rawValue, Int(frameTime &+ UInt32(truncatingIfNeeded: n)))
        counters.store(Counter.cycleStamp.rawValue, Int(frameTime) << 32 | (position & 0xFFFF_FFFF))

        var latency = 0
        if let chain = s.chain.acquire() {
            ChainState.run(chain.pointee, inputs: s.inputs.buffers, outputs: s.wet, frames: n,
                           clock: Int(frameTime))
            for c in 0..<s.channels { s.recorded[c] = s.wet[c] }
            latency = ChainState.latency(chain.pointee, limit: s.latencyLimit)
        } else {
            for c in 0..<s.channels { s.recorded[c] = s.inputs.buffers[c] }
        }
        // The ring carries one latency at a time, announced at the position it starts from (see `GapNote.latency`).
        let carried = counters.load(Counter.latency.rawValue)
        if latency != carried {
            if pendingFrames == 0 && s.drops.push(GapNote.latency(at: position, frames: latency)) {
                counters.store(Counter.latency.rawValue, latency)
            } else {
                latency = carried
            }
        }
        if s.recordedChannels > s.channels {
            delayDry(s, position: position, latency: latency, frames: n)
        }
        meter(s, frames: n)

        var written = false
        if pendingFrames == 0 {
            written = s.ring.writer.write(planar: s.recorded, frames: n)
        }
        if !written {
            if pendingFrames == 0 { counters.store(Counter.pendingDropStart.rawValue, position) }
            counters.store(Counter.pendingDropFrames.rawValue, pendingFrames + n)
            counters.add(Counter.droppedFrames.rawValue, n)
        }
        counters.store(Counter.streamFrames.rawValue, position + n)
        counters.add(Counter.cycles.rawValue, 1)
        counters.add(Counter.meterFrames.rawValue, n)
        if !written || s.ring.fill >= s.wakeFrames { s.wakeup.post() }

        s.cycleCost.record(nanoseconds: monotonicNanoseconds() - began)
    }

    /// Whether this cycle's input begins with the very samples the last cycle's began with, and they are not all
    /// silence (a repeated silent period cannot be told from a late clock; it repeats nothing audible). Only asked
    /// on a cycle whose frame time stepped back. Realtime: safe.
    @inline(__always)
    static func repeatsLastCycle(_ s: RecorderState, frames n: Int) -> Bool {
        let k = min(n, RecorderState.probeFrames)
        guard k > 0 else { return false }
        var sound = false
        for c in 0..<s.channels {
            let input = s.inputs.buffers[c], last = s.probe + c * RecorderState.probeFrames
            for i in 0..<k {
                if input[i].bitPattern != last[i].bitPattern { return false }
                if input[i] != 0 { sound = true }
            }
        }
        return sound
    }

    /// Keeps the first frames of this cycle's input for `repeatsLastCycle`. Realtime: safe.
    @inline(__always)
    static func keepProbe(_ s: RecorderState, frames n: Int) {
        let k = min(n, RecorderState.probeFrames)
        for c in 0..<s.channels { (s.probe + c * RecorderState.probeFrames).update(from: s.inputs.buffers[c], count: k) }
    }

    /// The dry channels: this cycle's input goes into the history at its stream position, and what is recorded is
    /// the input of `latency` frames ago, so that it lines up with the chain's output. Realtime: safe.
    @inline(__always)
    static func delayDry(_ s: RecorderState, position: Int, latency: Int, frames n: Int) {
        let size = s.dryHistoryFrames, mask = size - 1
        let at = position & mask
        let first = min(n, size - at)
        for c in 0..<s.channels {
            let h = s.dryHistory[c], input = s.inputs.buffers[c]
            (h + at).update(from: input, count: first)
            if first < n { h.update(from: input + first, count: n - first) }
            if latency == 0 {
                s.recorded[s.channels + c] = input
                continue
            }
            let from = (position - latency) & mask
            let head = min(n, size - from)
            let out = s.dryDelayed[c]
            out.update(from: h + from, count: head)
            if head < n { (out + head).update(from: h, count: n - head) }
            s.recorded[s.channels + c] = out
        }
    }

    /// Peak and sum of squares per channel (of what is recorded) into the meter atomics. Realtime: safe.
    ///
    /// Four independent accumulators and branch-free maxima, so the loop pipelines (a single running sum is a chain
    /// of dependent additions).
    @inline(__always)
    static func meter(_ s: RecorderState, frames n: Int) {
        for c in 0..<s.channels {
            let b = s.recorded[c]
            var p0: Float = 0, p1: Float = 0, p2: Float = 0, p3: Float = 0
            var s0: Float = 0, s1: Float = 0, s2: Float = 0, s3: Float = 0
            var i = 0
            while i + 4 <= n {
                let v0 = b[i], v1 = b[i + 1], v2 = b[i + 2], v3 = b[i + 3]
                p0 = max(p0, abs(v0)); p1 = max(p1, abs(v1)); p2 = max(p2, abs(v2)); p3 = max(p3, abs(v3))
                s0 += v0 * v0; s1 += v1 * v1; s2 += v2 * v2; s3 += v3 * v3
                i += 4
            }
            while i < n {
                let v = b[i]
                p0 = max(p0, abs(v))
                s0 += v * v
                i += 1
            }
            let peak = max(max(p0, p1), max(p2, p3))
            let sum = (s0 + s1) + (s2 + s3)
            s.peaks.storeMax(c, Int(peak.bitPattern))
            let scaled = Double(sum) * sumSquaresScale
            s.sumSquares.add(c, scaled < 1e18 ? Int(scaled) : 1_000_000_000_000_000_000)   // NaN/inf clamp
        }
    }
}
