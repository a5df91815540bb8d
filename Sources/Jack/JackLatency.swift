import CJack
import Realtime

/// Latency a client adds to the signal passing through it (an insert chain's delay), reported to JACK so that
/// latency-compensating peers see it: an engine's output ports carry it as capture latency (how much later than
/// its source the audio leaves), its input ports as playback latency (how much later it is really kept).
///
/// Threads: `install` before activation and `set` on the control thread; JACK calls the callback on its own thread,
/// where it only reads an atomic and sets port ranges.
// @unchecked Sendable: `context` is written once in `init`; then JACK's thread only reads its constant ports and its
// atomic `frames`, which `set` stores on the control thread. `client` (weak) is set in `init` and read by `set`.
public final class JackLatency: @unchecked Sendable {
    struct Context: BitwiseCopyable {
        let ports: PortArray
        let count: Int
        let frames: AtomicCounter
        /// Whether the ports are outputs (capture latency) or inputs (playback latency).
        let outputs: Bool
        /// A through client's other side (its outputs, after `count` inputs in `ports`), or 0: then each side's
        /// latency is what JACK reports on the other side plus `frames`.
        let throughOutputs: Int
    }

    private let context: UnsafeMutablePointer<Context>
    private weak var client: JackClient?

    /// Installs the latency callback for `ports` (all inputs or all outputs). Before activation.
    public init(client: JackClient, ports: [JackPort], outputs: Bool) {
        context = .allocate(capacity: 1)
        context.initialize(to: Context(ports: .allocate(ports), count: ports.count, frames: .allocate(), outputs: outputs,
                                       throughOutputs: 0))
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

    /// Installs the latency callback of a through client (a rack): its outputs carry the largest capture latency of
    /// its inputs plus `frames`, its inputs the largest playback latency of its outputs plus `frames`, as JACK's
    /// latency protocol asks of a client that passes audio on. Before activation.
    public init(client: JackClient, inputs: [JackPort], outputs: [JackPort]) {
        let all = inputs + outputs
        context = .allocate(capacity: 1)
        context.initialize(to: Context(ports: .allocate(all), count: inputs.count, frames: .allocate(), outputs: false,
                                       throughOutputs: outputs.count))
        self.client = client
        if let h = client.handle {
            jack_set_latency_callback(h, { mode, arg in
                let c = arg!.assumingMemoryBound(to: Context.self).pointee
                let add = UInt32(truncatingIfNeeded: c.frames.load())
                // Capture: read the inputs, set the outputs; playback: the other way round.
                let (from, fromCount, to, toCount) = mode == JackCaptureLatency
                    ? (c.ports.base, c.count, c.ports.base + c.count, c.throughOutputs)
                    : (c.ports.base + c.count, c.throughOutputs, c.ports.base, c.count)
                var range = jack_latency_range_t(min: UInt32.max, max: 0)
                for i in 0..<fromCount {
                    var r = jack_latency_range_t(min: 0, max: 0)
                    jack_port_get_latency_range(from[i].handle, mode, &r)
                    range.min = Swift.min(range.min, r.min)
                    range.max = Swift.max(range.max, r.max)
                }
                if fromCount == 0 { range = jack_latency_range_t(min: 0, max: 0) }
                range.min &+= add
                range.max &+= add
                for i in 0..<toCount { jack_port_set_latency_range(to[i].handle, mode, &range) }
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
