import Synchronization

/// The one single-producer/single-consumer ring of fixed-size elements that crosses the real-time boundary: commands
/// into a process callback, events out of it, MIDI to and from the ports (`MessageRing`, `MIDIEventRing`). Elements are
/// bitwise copyable, so a push or a pop copies bytes and never allocates. (The audio rings are `FrameRing`: frames by
/// the block, not elements.)
///
/// Ownership: one thread pushes, one other thread peeks and pops. `allocate`, `reset` and `deallocate` are
/// control-thread only, while neither side runs. A full ring refuses (`push` returns false): the producer counts,
/// coalesces or (a disk thread) waits; it never blocks the other side.
///
/// `@unchecked Sendable`: the value is pointers to slots and two counters. The producer alone writes the slots it
/// owns and then publishes them by a releasing store of `pushed`; the consumer alone reads them after an acquiring
/// load of it, and gives them back the same way through `popped`.
public struct SPSCRing<Element: BitwiseCopyable>: BitwiseCopyable, @unchecked Sendable {
    public let capacity: Int
    @usableFromInline let slots: UnsafeMutablePointer<Element>
    @usableFromInline let pushed: AtomicCounter
    @usableFromInline let popped: AtomicCounter

    /// Slots written once here with `empty`, so no page is first touched on a process thread. Control thread only.
    public static func allocate(capacity: Int, filledWith empty: Element) -> SPSCRing {
        precondition(capacity > 0, "a ring needs capacity")
        let slots = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        slots.initialize(repeating: empty, count: capacity)
        return SPSCRing(capacity: capacity, slots: slots, pushed: .allocate(), popped: .allocate())
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

    /// Producer only. False when full. Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func push(_ element: Element) -> Bool {
        let head = pushed.cell.pointee.load(ordering: .relaxed)
        if head - popped.load() >= capacity { return false }
        slots[head % capacity] = element
        pushed.cell.pointee.store(head + 1, ordering: .releasing)
        return true
    }

    /// Consumer only: the oldest element, removed, or nil when empty. Realtime: safe.
    @inlinable @inline(__always)
    public func pop() -> Element? {
        let tail = popped.cell.pointee.load(ordering: .relaxed)
        if tail == pushed.load() { return nil }
        let element = slots[tail % capacity]
        popped.cell.pointee.store(tail + 1, ordering: .releasing)
        return element
    }

    /// Consumer only: the oldest element without removing it, or nil. Realtime: safe.
    @inlinable @inline(__always)
    public func peek() -> Element? {
        let tail = popped.cell.pointee.load(ordering: .relaxed)
        if tail == pushed.load() { return nil }
        return slots[tail % capacity]
    }

    /// Consumer only: removes the oldest element (after `peek`). Realtime: safe.
    @inlinable @inline(__always)
    public func drop() {
        let tail = popped.cell.pointee.load(ordering: .relaxed)
        if tail == pushed.load() { return }
        popped.cell.pointee.store(tail + 1, ordering: .releasing)
    }

    /// Producer side: free slots (a snapshot).
    public var space: Int { capacity - (pushed.load() - popped.load()) }
    /// Elements waiting (any thread; a snapshot).
    public var count: Int { pushed.load() - popped.load() }
}
