import Synchronization

/// A single-producer/single-consumer ring of interleaved multi-channel `Float` frames.
///
/// The ring moves whole frames only. Its storage is resident (zeroed, populated, locked where allowed: see
/// `ResidentMemory`) from `allocate` on, so the real-time side never touches a fresh page. Positions are monotonic 64-bit frame counts (they never wrap in
/// practice), so "how full" is a subtraction and needs no extra flag.
///
/// Ownership: exactly one thread uses the `writer` half and exactly one (other) thread uses the `reader` half while
/// both run. `allocate`, `reset` and `deallocate` are control-thread only and must not race with either half.
/// A full ring never blocks: the writer is told how much room there is and decides (drop and count).
// @unchecked Sendable: pointers to the frames and two position counters. The writer alone fills frames past `written`
// and publishes them with a releasing store; the reader alone reads frames before an acquiring load of it and gives
// them back through `read` the same way.
public struct FrameRing: BitwiseCopyable, @unchecked Sendable {
    /// Interleaved channels per frame.
    public let channels: Int
    /// Capacity in frames.
    public let capacity: Int
    @usableFromInline let storage: UnsafeMutablePointer<Float>
    /// Total frames ever committed by the writer.
    @usableFromInline let written: AtomicCounter
    /// Total frames ever consumed by the reader.
    @usableFromInline let read: AtomicCounter

    /// Allocates a resident ring of `capacity` frames of `channels` samples; throws when the memory cannot be had
    /// (see `ResidentMemory.allocate`). Control thread only.
    public static func allocate(channels: Int, capacity: Int) throws(ResidentMemory.Failure) -> FrameRing {
        precondition(channels > 0 && capacity > 0, "a ring needs channels and capacity")
        let (count, overflow) = channels.multipliedReportingOverflow(by: capacity)
        guard !overflow else { throw ResidentMemory.Failure(bytes: Int.max, errorNumber: 0) }
        let storage = try ResidentMemory.allocate(Float.self, count: count)
        return FrameRing(channels: channels, capacity: capacity, storage: storage,
                         written: .allocate(), read: .allocate())
    }

    /// Frees the storage. Control thread only, after both halves have stopped.
    public func deallocate() {
        ResidentMemory.deallocate(storage, count: channels * capacity)
        written.deallocate()
        read.deallocate()
    }

    /// Empties the ring and zeroes its positions. Control thread only, while neither half runs.
    public func reset() {
        written.store(0)
        read.store(0)
    }

    /// The producer half. Hand it to exactly one thread.
    public var writer: FrameRingWriter { FrameRingWriter(ring: self) }
    /// The consumer half. Hand it to exactly one thread.
    public var reader: FrameRingReader { FrameRingReader(ring: self) }

    /// Frames currently held (any thread; a snapshot that may be stale at once).
    @inlinable public var fill: Int { written.load() - read.load() }
    /// Total frames ever committed (any thread).
    @inlinable public var totalWritten: Int { written.load() }
    /// Total frames ever consumed (any thread).
    @inlinable public var totalRead: Int { read.load() }

    @inlinable @inline(__always)
    func regions(at position: Int, frames: Int) -> FrameRegions {
        let start = position % capacity
        let first = min(frames, capacity - start)
        return FrameRegions(first: storage + start * channels, firstFrames: first,
                            second: storage, secondFrames: frames - first, channels: channels)
    }
}

/// Up to two contiguous stretches of interleaved frames inside a ring (the second is empty unless the span wraps).
public struct FrameRegions: BitwiseCopyable {
    public let first: UnsafeMutablePointer<Float>
    public let firstFrames: Int
    public let second: UnsafeMutablePointer<Float>
    public let secondFrames: Int
    public let channels: Int
    /// Total frames in both stretches.
    @inlinable public var frames: Int { firstFrames + secondFrames }

    @inlinable
    public init(first: UnsafeMutablePointer<Float>, firstFrames: Int, second: UnsafeMutablePointer<Float>,
                secondFrames: Int, channels: Int) {
        self.first = first
        self.firstFrames = firstFrames
        self.second = second
        self.secondFrames = secondFrames
        self.channels = channels
    }

    /// The sample of `channel` at frame `index` (0 ..< frames). Realtime: safe.
    @inlinable @inline(__always)
    public func sample(frame index: Int, channel: Int) -> UnsafeMutablePointer<Float> {
        index < firstFrames ? first + (index * channels + channel)
                            : second + ((index - firstFrames) * channels + channel)
    }
}

/// The producer half of a `FrameRing`. Owned by one thread (the RT process thread for capture, the disk-reader
/// thread for playback).
public struct FrameRingWriter: BitwiseCopyable, Sendable {
    public let ring: FrameRing

    /// Frames that can be written now. Realtime: safe.
    @inlinable @inline(__always)
    public var space: Int { ring.capacity - (ring.written.cell.pointee.load(ordering: .relaxed) - ring.read.load()) }

    /// Where up to `frames` frames may be written (clamped to `space`). Fill them, then `commit`. Realtime: safe.
    @inlinable @inline(__always)
    public func reserve(_ frames: Int) -> FrameRegions {
        let position = ring.written.cell.pointee.load(ordering: .relaxed)
        return ring.regions(at: position, frames: min(frames, space))
    }

    /// Publishes `frames` frames written into the last reservation. Realtime: safe.
    @inlinable @inline(__always)
    public func commit(_ frames: Int) {
        ring.written.cell.pointee.wrappingAdd(frames, ordering: .releasing)
    }

    /// Interleaves `frames` frames from one non-interleaved buffer per channel into the ring, all or nothing.
    /// Returns false (and writes nothing) when there is not room for all of them. Realtime: safe.
    ///
    /// Frame by frame, so the ring is written sequentially (channel by channel would touch a new cache line for
    /// every sample once there are more than a few channels).
    @inlinable @inline(__always)
    public func write(planar buffers: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int) -> Bool {
        guard frames <= space else { return false }
        let r = reserve(frames)
        let channels = ring.channels
        var dst = r.first
        for i in 0..<r.firstFrames {
            for c in 0..<channels { dst[c] = buffers[c][i] }
            dst += channels
        }
        dst = r.second
        for i in 0..<r.secondFrames {
            let source = r.firstFrames + i
            for c in 0..<channels { dst[c] = buffers[c][source] }
            dst += channels
        }
        commit(frames)
        return true
    }
}

/// The consumer half of a `FrameRing`. Owned by one thread (the disk-writer thread for capture, the RT process
/// thread for playback).
public struct FrameRingReader: BitwiseCopyable, Sendable {
    public let ring: FrameRing

    /// Frames that can be read now. Realtime: safe.
    @inlinable @inline(__always)
    public var available: Int { ring.written.load() - ring.read.cell.pointee.load(ordering: .relaxed) }

    /// Position (total frames consumed so far) of the next frame to read. Realtime: safe.
    @inlinable @inline(__always)
    public var position: Int { ring.read.cell.pointee.load(ordering: .relaxed) }

    /// Up to `frames` readable frames, starting `offset` frames after the read position (clamped). Realtime: safe.
    @inlinable @inline(__always)
    public func peek(_ frames: Int, offset: Int = 0) -> FrameRegions {
        let count = max(0, min(frames, available - offset))
        return ring.regions(at: position + offset, frames: count)
    }

    /// Releases `frames` frames to the writer. Realtime: safe.
    @inlinable @inline(__always)
    public func consume(_ frames: Int) {
        ring.read.cell.pointee.wrappingAdd(frames, ordering: .releasing)
    }

    /// De-interleaves up to `frames` frames into one buffer per channel and consumes them. Returns the number of
    /// frames delivered; the caller fills the rest (silence, and counts it). Realtime: safe.
    ///
    /// Frame by frame, so the ring is read sequentially.
    @inlinable @inline(__always)
    public func read(planar buffers: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int) -> Int {
        let r = peek(frames)
        let channels = ring.channels
        var src = r.first
        for i in 0..<r.firstFrames {
            for c in 0..<channels { buffers[c][i] = src[c] }
            src += channels
        }
        src = r.second
        for i in 0..<r.secondFrames {
            let target = r.firstFrames + i
            for c in 0..<channels { buffers[c][target] = src[c] }
            src += channels
        }
        consume(r.frames)
        return r.frames
    }
}
