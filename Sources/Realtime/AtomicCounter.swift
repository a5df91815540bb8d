import Synchronization

/// A 64-bit atomic integer living in manually allocated memory, so that a `BitwiseCopyable` real-time state value
/// can hold it (an `Atomic` itself is non-copyable and must not move).
///
/// Threads: any thread may call any member; every operation is lock-free. `allocate` and `deallocate` are
/// control-thread only and must not race with other uses.
// @unchecked Sendable: a pointer to one `Atomic<Int>`; every access through it is atomic.
public struct AtomicCounter: BitwiseCopyable, @unchecked Sendable {
    @usableFromInline let cell: UnsafeMutablePointer<Atomic<Int>>

    /// Allocates and initializes a counter. Control thread only.
    public static func allocate(_ initial: Int = 0) -> AtomicCounter {
        let cell = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: 1)
        cell.initialize(to: Atomic(initial))
        return AtomicCounter(cell: cell)
    }

    /// Frees the counter. Control thread only, after every other user has stopped.
    public func deallocate() {
        cell.deinitialize(count: 1)
        cell.deallocate()
    }

    /// Realtime: safe.
    @inlinable @inline(__always)
    public func load() -> Int { cell.pointee.load(ordering: .acquiring) }

    /// Realtime: safe.
    @inlinable @inline(__always)
    public func store(_ value: Int) { cell.pointee.store(value, ordering: .releasing) }

    /// Adds `delta` and returns the new value. Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func add(_ delta: Int) -> Int { cell.pointee.wrappingAdd(delta, ordering: .acquiringAndReleasing).newValue }

    /// Stores `value` if it is larger than the current one (a running maximum). Realtime: safe.
    @inlinable @inline(__always)
    public func storeMax(_ value: Int) { cell.pointee.max(value, ordering: .acquiringAndReleasing) }

    /// Replaces the value and returns the old one. Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func exchange(_ value: Int) -> Int { cell.pointee.exchange(value, ordering: .acquiringAndReleasing) }

    /// Stores `desired` if the value is `expected`; returns whether it did. Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func compareExchange(expected: Int, desired: Int) -> Bool {
        cell.pointee.compareExchange(expected: expected, desired: desired, ordering: .acquiringAndReleasing).exchanged
    }
}

/// A block of `count` atomic integers in one allocation (per-channel meters, per-kind event counts).
///
/// Threads: as `AtomicCounter`.
// @unchecked Sendable: a pointer to `count` `Atomic<Int>`s; every access through it is atomic.
public struct AtomicCounterArray: BitwiseCopyable, @unchecked Sendable {
    @usableFromInline let cells: UnsafeMutablePointer<Atomic<Int>>
    public let count: Int

    /// Control thread only.
    public static func allocate(count: Int, initial: Int = 0) -> AtomicCounterArray {
        precondition(count > 0, "AtomicCounterArray needs at least one cell")
        let cells = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: count)
        for i in 0..<count { (cells + i).initialize(to: Atomic(initial)) }
        return AtomicCounterArray(cells: cells, count: count)
    }

    /// Control thread only, after every other user has stopped.
    public func deallocate() {
        cells.deinitialize(count: count)
        cells.deallocate()
    }

    /// Realtime: safe.
    @inlinable @inline(__always)
    public func load(_ i: Int) -> Int { cells[i].load(ordering: .acquiring) }

    /// Realtime: safe.
    @inlinable @inline(__always)
    public func store(_ i: Int, _ value: Int) { cells[i].store(value, ordering: .releasing) }

    /// Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func add(_ i: Int, _ delta: Int) -> Int {
        cells[i].wrappingAdd(delta, ordering: .acquiringAndReleasing).newValue
    }

    /// Running maximum. Realtime: safe.
    @inlinable @inline(__always)
    public func storeMax(_ i: Int, _ value: Int) { cells[i].max(value, ordering: .acquiringAndReleasing) }

    /// Replaces the value and returns the old one. Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func exchange(_ i: Int, _ value: Int) -> Int { cells[i].exchange(value, ordering: .acquiringAndReleasing) }

    /// Stores `desired` in cell `i` if it holds `expected`; returns whether it did. Realtime: safe.
    @inlinable @inline(__always) @discardableResult
    public func compareExchange(_ i: Int, expected: Int, desired: Int) -> Bool {
        cells[i].compareExchange(expected: expected, desired: desired, ordering: .acquiringAndReleasing).exchanged
    }
}
