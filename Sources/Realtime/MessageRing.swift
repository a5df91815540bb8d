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

/// A single-producer/single-consumer ring of `RTMessage`s.
///
/// Ownership: one thread pushes, one other thread pops. `allocate` and `deallocate` are control-thread only.
/// A full ring refuses the message (`push` returns false); the producer counts or coalesces, it never waits.
public struct MessageRing: BitwiseCopyable, @unchecked Sendable {
    public let capacity: Int
    @usableFromInline let slots: UnsafeMutablePointer<RTMessage>
    @usableFromInline let pushed: AtomicCounter
    @usableFromInline let popped: AtomicCounter

    /// Control thread only.
    public static func allocate(capacity: Int) -> MessageRing {
        precondition(capacity > 0, "a message ring needs capacity")
        let slots = UnsafeMutablePointer<RTMessage>.allocate(capacity: capacity)
        slots.initialize(repeating: RTMessage(kind: 0), count: capacity)
        return MessageRing(capacity: capacity, slots: slots, pushed: .allocate(), popped: .allocate())
    }

    /// Control thread only, after producer and consumer have stopped.
    public func deallocate() {
        slots.deallocate()
        pushed.deallocate()
        popped.deallocate()
    }

    /// Empties the ring. Control thread only, while neither side runs.
    public func reset() {
        pushed.store(0)
        popped.store(0)
    }

    /// Producer only. Returns false when the ring is full. Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func push(_ message: RTMessage) -> Bool {
        let head = pushed.cell.pointee.load(ordering: .relaxed)
        if head - popped.load() >= capacity { return false }
        slots[head % capacity] = message
        pushed.cell.pointee.store(head + 1, ordering: .releasing)
        return true
    }

    /// Consumer only. The oldest message, or nil when empty. Realtime: safe.
    @inlinable @inline(__always)
    public func pop() -> RTMessage? {
        let tail = popped.cell.pointee.load(ordering: .relaxed)
        if tail == pushed.load() { return nil }
        let message = slots[tail % capacity]
        popped.cell.pointee.store(tail + 1, ordering: .releasing)
        return message
    }

    /// Consumer only. The oldest message without removing it. Realtime: safe.
    @inlinable @inline(__always)
    public func peek() -> RTMessage? {
        let tail = popped.cell.pointee.load(ordering: .relaxed)
        if tail == pushed.load() { return nil }
        return slots[tail % capacity]
    }

    /// Messages waiting (any thread; a snapshot).
    public var count: Int { pushed.load() - popped.load() }
}
