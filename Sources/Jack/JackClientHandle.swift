import CJack

/// A client as its process callback sees it: what a cycle reads from libjack besides its port buffers. Engine RT
/// state keeps one of these (and `JackPort`s), so nothing outside this module touches libjack's C names; the RT
/// bodies take what it reads as arguments and can be driven without a server.
///
/// Threads: `lastFrameTime` is for the RT thread, inside the process callback (and the warm-up call).
// @unchecked Sendable: its one field is an immutable libjack client pointer (OpaquePointer is not Sendable); a copy
// carries no state of its own, and `lastFrameTime` is for the process callback only.
public struct JackClientHandle: BitwiseCopyable, @unchecked Sendable {
    public let raw: OpaquePointer?

    /// A handle to nothing (`lastFrameTime` reads 0): for state driven without a server.
    public static let none = JackClientHandle(raw: nil)

    public init(raw: OpaquePointer?) { self.raw = raw }

    /// JACK's frame time at the start of the current cycle (0 without a client). Realtime: safe.
    @inlinable @inline(__always)
    public var lastFrameTime: UInt32 {
        guard let raw else { return 0 }
        return jack_last_frame_time(raw)
    }
}

extension JackClient {
    /// The handle for the process callback's state. Control side, before activation.
    public var cycleHandle: JackClientHandle { JackClientHandle(raw: handle) }
}
