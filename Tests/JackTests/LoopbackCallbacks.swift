import Jack
import Realtime

/// RT state for the test clients: a player that copies a preloaded ring to its output ports once `started` is set,
/// and a recorder that copies its input ports into a ring.
struct LoopState: BitwiseCopyable {
    var ports: UnsafeMutablePointer<JackPort>
    var buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Stands in for port buffers during the warm-up call.
    var scratch: UnsafeMutablePointer<Float>
    var channels: Int
    var ring: FrameRing
    var started: AtomicCounter
    var cycles: AtomicCounter

    static func allocate(ports: [JackPort], ringFrames: Int) -> UnsafeMutablePointer<LoopState> {
        let p = UnsafeMutablePointer<JackPort>.allocate(capacity: ports.count)
        p.initialize(from: ports, count: ports.count)
        let b = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: ports.count)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: JackPort.maxPeriod)
        scratch.initialize(repeating: 0, count: JackPort.maxPeriod)
        let state = UnsafeMutablePointer<LoopState>.allocate(capacity: 1)
        state.initialize(to: LoopState(ports: p, buffers: b, scratch: scratch, channels: ports.count,
                                       ring: .allocate(channels: ports.count, capacity: ringFrames),
                                       started: .allocate(), cycles: .allocate()))
        return state
    }

    static func free(_ state: UnsafeMutablePointer<LoopState>) {
        state.pointee.ring.deallocate()
        state.pointee.started.deallocate()
        state.pointee.cycles.deallocate()
        state.pointee.ports.deallocate()
        state.pointee.buffers.deallocate()
        state.pointee.scratch.deallocate()
        state.deallocate()
    }

    /// Realtime: safe.
    static let play: JackProcessCallback = { frames, arg in
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
    static let record: JackProcessCallback = { frames, arg in
        let s = arg!.assumingMemoryBound(to: LoopState.self).pointee
        for c in 0..<s.channels { s.buffers[c] = s.ports[c].buffer(frames) ?? s.scratch }
        _ = s.ring.writer.write(planar: s.buffers, frames: Int(frames))
        s.cycles.add(1)
        return 0
    }
}
