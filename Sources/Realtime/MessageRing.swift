import Synchronization

/// A small fixed-size message that crosses the real-time boundary (commands into a process callback, events out of
/// it). Plain integers only, so copying one never allocates.
public struct RTMessage: BitwiseCopyable, Equatable, Sendable {
    /// What the message means; each user defines its own codes.
    public var kind: Int32
    public var a: Int64
    public var b: Int64
    public var c: Int64

    @inlinable
    public init(kind: Int32, a: Int64 = 0, b: Int64 = 0, c: Int64 = 0) {
        self.kind = kind
        self.a = a
        self.b = b
        self.c = c
    }
}

/// The ring of `RTMessage`s: chain changes into a process callback, a recorder's events out of it.
public typealias MessageRing = SPSCRing<RTMessage>

extension SPSCRing where Element == RTMessage {
    /// Control thread only.
    public static func allocate(capacity: Int) -> MessageRing { allocate(capacity: capacity, filledWith: RTMessage(kind: 0)) }
}
