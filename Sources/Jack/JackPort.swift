import CJack
import Realtime

/// Which way audio flows through a port, seen from its owner.
public enum PortDirection: Sendable, Equatable {
    case input, output

    var flags: UInt {
        switch self {
        case .input: return UInt(JackPortIsInput.rawValue)
        case .output: return UInt(JackPortIsOutput.rawValue)
        }
    }
}

/// A port registered by one of our clients. The handle stays valid until it is unregistered or the client closes.
///
/// Threads: `buffer(_:)` is the only member for the RT thread; the rest is control side.
// @unchecked Sendable: its one field is an immutable libjack port pointer (OpaquePointer is not Sendable); a copy
// carries no state of its own, and each member says which thread may call it.
public struct JackPort: BitwiseCopyable, @unchecked Sendable, Equatable {
    public let handle: OpaquePointer

    public init(handle: OpaquePointer) { self.handle = handle }

    /// The port's audio buffer for the current cycle, or nil outside a cycle (libjack has no buffer for an
    /// inactive client, as during the warm-up call): callers substitute a preallocated scratch buffer.
    /// Realtime: safe (RT thread only, inside the process callback).
    @inlinable @inline(__always)
    public func buffer(_ frames: jack_nframes_t) -> UnsafeMutablePointer<Float>? {
        jack_port_get_buffer(handle, frames)?.assumingMemoryBound(to: Float.self)
    }

    /// Full name, "client:port". Control side.
    public var name: String { String(cString: jack_port_name(handle)) }
    /// Short name, without the client part. Control side.
    public var shortName: String { String(cString: jack_port_short_name(handle)) }
}

/// The ports an RT state holds, as one fixed array: allocated and freed on the control thread (while the callback
/// does not run), read by index in the process callback. `@unchecked Sendable`: written once before the callback sees
/// it, then only read.
public struct PortArray: BitwiseCopyable, @unchecked Sendable {
    @usableFromInline let base: UnsafeMutablePointer<JackPort>
    public let count: Int

    /// Control thread only.
    public static func allocate(_ ports: [JackPort]) -> PortArray {
        let base = UnsafeMutablePointer<JackPort>.allocate(capacity: max(1, ports.count))
        base.initialize(from: ports, count: ports.count)
        return PortArray(base: base, count: ports.count)
    }

    /// Control thread only, after the callback stopped.
    public func deallocate() { base.deallocate() }

    /// Realtime: safe.
    @inlinable @inline(__always)
    public subscript(_ i: Int) -> JackPort { base[i] }
}

/// A latency range in frames, as JACK reports it for one direction.
public struct LatencyRange: Sendable, Equatable, Codable {
    public var min: UInt32
    public var max: UInt32
    public init(min: UInt32, max: UInt32) {
        self.min = min
        self.max = max
    }
}
