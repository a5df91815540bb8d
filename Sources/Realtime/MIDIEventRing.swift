import Synchronization

/// A MIDI message at a position on some timeline (a playback ring position, a recorder stream position), with the
/// index of the port it came from or goes to. Fixed size, so copying one never allocates: at most `capacity` bytes
/// (56; a longer SysEx does not fit and is counted as dropped by whoever tried to queue it).
public struct MIDIRingEvent: BitwiseCopyable, Sendable {
    public var position: Int64
    public var port: Int16
    public var size: Int16
    /// The bytes, inline.
    public var data: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    public static let capacity = 56

    public init() {
        position = 0
        port = 0
        size = 0
        data = (0, 0, 0, 0, 0, 0, 0)
    }

    /// An event from `count` bytes at `bytes`; nil when they do not fit (or there are none). Realtime: safe.
    @inlinable @inline(__always)
    public init?(position: Int, port: Int, bytes: UnsafePointer<UInt8>, count: Int) {
        guard count > 0 && count <= Self.capacity else { return nil }
        self.init()
        self.position = Int64(position)
        self.port = Int16(truncatingIfNeeded: port)
        size = Int16(count)
        withUnsafeMutableBytes(of: &data) { $0.baseAddress!.copyMemory(from: bytes, byteCount: count) }
    }

    /// Makes the Swift runtime build, here, what an event's first construction would otherwise build on a process
    /// thread: the byte tuple's type metadata, which an unoptimized build instantiates on first use (allocating under
    /// a lock: the RT interposer saw 5 events at a recorder's first MIDI event). Control thread.
    public static func prepare() {
        var byte: UInt8 = 0x90
        guard let e = MIDIRingEvent(position: 0, port: 0, bytes: &byte, count: 1) else { return }
        _ = e.withBytes { $1 }
        _ = e.bytes
    }

    /// The bytes, for the control side.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: data) { Array($0.prefix(Int(max(0, min(Int(size), Self.capacity))))) }
    }

    /// Calls `body` with a pointer to the bytes. Realtime: safe.
    @inlinable @inline(__always)
    public func withBytes<R>(_ body: (UnsafePointer<UInt8>, Int) -> R) -> R {
        withUnsafeBytes(of: data) { body($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int(size)) }
    }
}

/// The ring of `MIDIRingEvent`s, in position order as the producer pushes them: a player's MIDI to its ports, a
/// recorder's from its ports to its writer, a rack's map messages to the control loop.
public typealias MIDIEventRing = SPSCRing<MIDIRingEvent>

extension SPSCRing where Element == MIDIRingEvent {
    /// The event type's metadata built here first (see `MIDIRingEvent.prepare`). Control thread only.
    public static func allocate(capacity: Int) -> MIDIEventRing {
        MIDIRingEvent.prepare()
        return allocate(capacity: capacity, filledWith: MIDIRingEvent())
    }
}
