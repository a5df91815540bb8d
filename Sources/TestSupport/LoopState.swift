import Jack
import Realtime
#if canImport(Glibc)
import Glibc
#endif

/// RT state for the test clients: a player that copies a preloaded ring to its output ports once `started` is set,
/// and a recorder that copies its input ports into a ring.
public struct LoopState: BitwiseCopyable {
    public var ports: UnsafeMutablePointer<JackPort>
    public var buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Stands in for port buffers during the warm-up call.
    public var scratch: UnsafeMutablePointer<Float>
    public var channels: Int
    public var ring: FrameRing
    public var started: AtomicCounter
    public var cycles: AtomicCounter
    /// JACK frame time of the first frame recorded, plus one (0: nothing recorded yet). Set by `record`.
    public var firstFrameTime: AtomicCounter
    /// The client (for its frame time through `JackClientHandle`), once known.
    public var client: OpaquePointer?
    /// `lateClock` only: every `stallEvery` cycles it sleeps `stallMicros` inside the callback.
    public var stallEvery = 0
    public var stallMicros = 0
    /// `record` only: when set, cycles the server ran without this client are recorded as silence, so frame `i` of
    /// the capture is always JACK frame `firstFrameTime + i` (an xrun while a test sets up moves nothing).
    public var fillSkippedCycles = false
    /// `record` only, process thread: the frame time the next cycle should have, plus one (0: none yet).
    public var nextFrameTime = 0

    public static func allocate(ports: [JackPort], ringFrames: Int) -> UnsafeMutablePointer<LoopState> {
        guard let ring = try? FrameRing.allocate(channels: ports.count, capacity: ringFrames) else {
            fatalError("test support: cannot allocate a ring of \(ringFrames) frames")
        }
        let p = UnsafeMutablePointer<JackPort>.allocate(capacity: ports.count)
        p.initialize(from: ports, count: ports.count)
        let b = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: ports.count)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: Period.maxFrames)
        scratch.initialize(repeating: 0, count: Period.maxFrames)
        let state = UnsafeMutablePointer<LoopState>.allocate(capacity: 1)
        state.initialize(to: LoopState(ports: p, buffers: b, scratch: scratch, channels: ports.count,
                                       ring: ring,
                                       started: .allocate(), cycles: .allocate(), firstFrameTime: .allocate(),
                                       client: nil))
        return state
    }

    public static func free(_ state: UnsafeMutablePointer<LoopState>) {
        state.pointee.ring.deallocate()
        state.pointee.started.deallocate()
        state.pointee.cycles.deallocate()
        state.pointee.firstFrameTime.deallocate()
        state.pointee.ports.deallocate()
        state.pointee.buffers.deallocate()
        state.pointee.scratch.deallocate()
        state.deallocate()
    }

    /// Realtime: safe.
    public static let play: JackProcessCallback = { frames, arg in
        let s = arg!.assumingMemoryBound(to: LoopState.self).pointee
        let n = Int(frames)
        for c in 0..<s.channels { s.buffers[c] = s.ports[c].buffer(frames) ?? s.scratch }
        var done = 0
        if s.started.load() != 0 { done = s.ring.reader.read(planar: s.buffers, frames: n) }
        for c in 0..<s.channels where done < n { (s.buffers[c] + done).update(repeating: 0, count: n - done) }
        s.cycles.add(1)
        return 0
    }

    /// Realtime: safe.
    public static let record: JackProcessCallback = { frames, arg in
        let s = arg!.assumingMemoryBound(to: LoopState.self).pointee
        if s.firstFrameTime.load() == 0, let client = s.client {
            s.firstFrameTime.store(Int(JackClientHandle(raw: client).lastFrameTime) + 1)
        }
        if s.fillSkippedCycles, let client = s.client {
            let now = JackClientHandle(raw: client).lastFrameTime
            // nextFrameTime is the expected frame time + 1 (0: no cycle yet); the engines' own rule tells the gap.
            var gap = min(SkippedCycles.frames(frameTime: now, expected: s.nextFrameTime - 1), 480_000)
            if gap > 0 { for c in 0..<s.channels { s.buffers[c] = s.scratch } }   // the scratch is silence here
            while gap > 0 {
                let n = min(gap, Period.maxFrames)
                _ = s.ring.writer.write(planar: s.buffers, frames: n)
                gap -= n
            }
            arg!.assumingMemoryBound(to: LoopState.self).pointee.nextFrameTime = Int(now &+ frames) + 1
        }
        for c in 0..<s.channels { s.buffers[c] = s.ports[c].buffer(frames) ?? s.scratch }
        _ = s.ring.writer.write(planar: s.buffers, frames: Int(frames))
        s.cycles.add(1)
        return 0
    }
}

extension LoopState {
    /// A deliberately late source (test fixture, not real-time safe on purpose): every output sample is its own
    /// JACK frame time (modulo 2^23, scaled by 2^-23, so exact in a Float), and every `stallEvery` cycles the
    /// callback sleeps `stallMicros`, so the server runs cycles without this client and everything after it.
    public static func lateClock(name: String, server: String, stallEvery: Int, stallMicros: Int) throws
        -> (JackClient, UnsafeMutablePointer<LoopState>) {
        let client = try JackClient(name: name, server: server)
        let port = try client.registerPort("out_1", direction: .output)
        let state = LoopState.allocate(ports: [port], ringFrames: 1)
        state.pointee.client = client.handle
        state.pointee.stallEvery = stallEvery
        state.pointee.stallMicros = stallMicros
        try client.activate(process: { frames, arg in
            let s = arg!.assumingMemoryBound(to: LoopState.self).pointee
            let out = s.ports[0].buffer(frames) ?? s.scratch
            let now = Int(JackClientHandle(raw: s.client).lastFrameTime)
            for i in 0..<Int(frames) { out[i] = Float((now + i) & 0x7F_FFFF) / 8_388_608 }
            if s.started.load() != 0 && s.stallEvery > 0 && s.cycles.add(1) % s.stallEvery == 0 {
                usleep(UInt32(s.stallMicros))
            }
            return 0
        }, context: UnsafeMutableRawPointer(state), afterWarmUp: {})
        return (client, state)
    }

    /// Frames between two consecutive `lateClock` samples beyond the one expected: 0 when the second follows the first,
    /// positive for cycles skipped between them, negative for a step back (labels wrap at 2^23).
    public static func labelStep(_ previous: Float, _ next: Float) -> Int {
        let raw = (Int((next * 8_388_608).rounded()) - Int((previous * 8_388_608).rounded()) - 1) & 0x7F_FFFF
        return raw >= 1 << 22 ? raw - (1 << 23) : raw
    }

    /// A source client for tests: `channels` output ports named out_1..N playing `samples` (interleaved) once
    /// `started` is set. Returns the client and its state; close the client before freeing the state.
    public static func source(name: String, server: String, channels: Int, samples: [Float]) throws
        -> (JackClient, UnsafeMutablePointer<LoopState>) {
        let client = try JackClient(name: name, server: server)
        let ports = try (1...channels).map { try client.registerPort("out_\($0)", direction: .output) }
        let frames = samples.count / channels
        let state = LoopState.allocate(ports: ports, ringFrames: max(frames, 1))
        try client.activate(process: LoopState.play, context: UnsafeMutableRawPointer(state)) {
            state.pointee.ring.reset()
            let w = state.pointee.ring.writer.reserve(frames)
            samples.withUnsafeBufferPointer { src in
                w.first.update(from: src.baseAddress!, count: w.firstFrames * channels)
            }
            state.pointee.ring.writer.commit(w.firstFrames)
        }
        return (client, state)
    }
}

/// An in-process capture client for tests: `channels` input ports (in_1..N) recording everything into memory.
public final class TestCapture {
    public let client: JackClient
    let state: UnsafeMutablePointer<LoopState>
    public let channels: Int

    /// `fillSkippedCycles`: see `LoopState.fillSkippedCycles`.
    public init(name: String, server: String, channels: Int, seconds: Double, fillSkippedCycles: Bool = false) throws {
        let client = try JackClient(name: name, server: server)
        self.client = client
        self.channels = channels
        let ports = try (1...channels).map { try client.registerPort("in_\($0)", direction: .input) }
        let s = LoopState.allocate(ports: ports, ringFrames: Int(seconds * 48000))
        s.pointee.fillSkippedCycles = fillSkippedCycles
        state = s
        try client.activate(process: LoopState.record, context: UnsafeMutableRawPointer(s)) {
            s.pointee.ring.reset()
            s.pointee.client = client.handle
        }
    }

    /// JACK frame time of the first captured frame (nil before the first cycle).
    public var firstFrameTime: UInt32? {
        let v = state.pointee.firstFrameTime.load()
        return v == 0 ? nil : UInt32(truncatingIfNeeded: v - 1)
    }

    /// Frames captured so far.
    public var frames: Int { state.pointee.ring.fill }

    /// Everything captured, interleaved. Call after `close`.
    public func samples() -> [Float] {
        let r = state.pointee.ring.reader.peek(state.pointee.ring.fill)
        var out = [Float](repeating: 0, count: r.frames * channels)
        for f in 0..<r.frames { for c in 0..<channels { out[f * channels + c] = r.sample(frame: f, channel: c).pointee } }
        return out
    }

    public func close() { client.close() }

    deinit {
        client.close()
        LoopState.free(state)
    }
}
