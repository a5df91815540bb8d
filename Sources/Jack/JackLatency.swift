import CJack
import Realtime

/// Latency a client adds to the signal passing through it (an insert chain's delay), reported to JACK so that
/// latency-compensating peers see it: an engine's output ports carry it as capture latency (how much later than
/// its source the audio leaves), its input ports as playback latency (how much later it is really kept).
///
/// Threads: `install` before activation and `set` on the control thread; JACK calls the callback on its own thread,
/// where it only reads an atomic and sets port ranges.
public final class JackLatency: @unchecked Sendable {
    struct Context: BitwiseCopyable {
        let ports: UnsafeMutablePointer<JackPort>
        let count: Int
        let frames: AtomicCounter
        /// Whether the ports are outputs (capture latency) or inputs (playback latency).
        let outputs: Bool
    }

    private let context: UnsafeMutablePointer<Context>
    private weak var client: JackClient?

    /// Installs the latency callback for `ports` (all inputs or all outputs). Before activation.
    public init(client: JackClient, ports: [JackPort], outputs: Bool) {
        let p = UnsafeMutablePointer<JackPort>.allocate(capacity: max(1, ports.count))
        p.initialize(from: ports, count: ports.count)
        context = .allocate(capacity: 1)
        context.initialize(to: Context(ports: p, count: ports.count, frames: .allocate(), outputs: outputs))
        self.client = client
        if let h = client.handle {
            jack_set_latency_callback(h, { mode, arg in
                let c = arg!.assumingMemoryBound(to: Context.self).pointee
                let ours: jack_latency_callback_mode_t = c.outputs ? JackCaptureLatency : JackPlaybackLatency
                guard mode == ours else { return }
                let frames = UInt32(truncatingIfNeeded: c.frames.load())
                var range = jack_latency_range_t(min: frames, max: frames)
                for i in 0..<c.count { jack_port_set_latency_range(c.ports[i].handle, mode, &range) }
            }, context)
        }
    }

    /// Frees the context. Only after the client is closed.
    deinit {
        context.pointee.frames.deallocate()
        context.pointee.ports.deallocate()
        context.deallocate()
    }

    public var frames: Int { context.pointee.frames.load() }

    /// Reports a new latency; JACK recomputes the graph's latencies only when it changed.
    public func set(_ frames: Int) {
        guard frames != context.pointee.frames.load() else { return }
        context.pointee.frames.store(frames)
        if let h = client?.handle, client?.isActive == true { jack_recompute_total_latencies(h) }
    }
}
