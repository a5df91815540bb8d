import Jack
import Realtime

/// One direction of an engine's ports as its RT state holds them: the ports, this cycle's buffer for each channel,
/// and zeroed scratch that stands in when libjack has no buffer (the warm-up call) or there is no port (state driven
/// without a server, where the test points `buffers` at its own).
///
/// Threads: `fetch` and `buffers` on the process thread (Realtime: safe); `allocate`/`deallocate` on the control
/// thread, while the callback does not run.
struct EnginePorts: BitwiseCopyable {
    let ports: PortArray
    /// Ports held: `channels`, or 0 without a server.
    var portCount: Int { ports.count }
    let channels: Int
    /// This cycle's buffer per channel (at most `Period.maxFrames` frames), set by `fetch`.
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// `Period.maxFrames` zeroed frames per channel.
    let scratch: UnsafeMutablePointer<Float>

    /// `ports`: one per channel, or none. Buffers start at the scratch.
    static func allocate(ports: [JackPort], channels: Int) -> EnginePorts {
        precondition(ports.isEmpty || ports.count == channels, "one port per channel, or none")
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: max(1, channels) * Period.maxFrames)
        scratch.initialize(repeating: 0, count: max(1, channels) * Period.maxFrames)
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, channels))
        for c in 0..<channels { (buffers + c).initialize(to: scratch + c * Period.maxFrames) }
        return EnginePorts(ports: .allocate(ports), channels: channels, buffers: buffers, scratch: scratch)
    }

    func deallocate() {
        ports.deallocate()
        buffers.deallocate()
        scratch.deallocate()
    }

    /// The scratch of channel `c`.
    @inline(__always)
    func scratchBuffer(_ c: Int) -> UnsafeMutablePointer<Float> { scratch + c * Period.maxFrames }

    /// Points `buffers` at this cycle's port buffers (the scratch where libjack has none). Realtime: safe.
    @inline(__always)
    func fetch(_ frames: UInt32) {
        for c in 0..<portCount { buffers[c] = ports[c].buffer(frames) ?? scratchBuffer(c) }
    }
}
