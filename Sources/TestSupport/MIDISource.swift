import Jack
import Realtime

/// A JACK MIDI source for tests: one MIDI output port (`midi_out`) that plays a list of events, each at an absolute
/// JACK frame time, once armed. Events are written at their frame within the cycle that contains them. Its MIDI
/// input port (`midi_in`) counts the events it receives.
///
/// Threads: the process callback reads the events and the armed base; `arm` and the rest on the control thread.
public final class MIDISource {
    public let client: JackClient
    let state: UnsafeMutablePointer<State>

    /// One event: frame relative to the armed base, and up to 3 bytes.
    public struct Event: Sendable {
        public var frame: Int
        public var bytes: [UInt8]
        public init(frame: Int, bytes: [UInt8]) {
            self.frame = frame
            self.bytes = bytes
        }
    }

    struct State: BitwiseCopyable {
        var port: JackPort
        var input: JackPort
        var received: AtomicCounter
        var client: OpaquePointer?
        /// Frames (relative), sizes and bytes (3 per event), `count` events in frame order.
        var frames: UnsafeMutablePointer<Int>
        var sizes: UnsafeMutablePointer<Int>
        var bytes: UnsafeMutablePointer<UInt8>
        var count: Int
        /// The JACK frame time events are relative to, plus one (0: not armed).
        var base: AtomicCounter
        /// The next event to play (process thread), and events written.
        var next: UnsafeMutablePointer<Int>
        var written: AtomicCounter
    }

    public init(name: String, server: String, events: [Event]) throws {
        client = try JackClient(name: name, server: server)
        let port = try client.registerPort("midi_out", direction: .output, type: .midi)
        let input = try client.registerPort("midi_in", direction: .input, type: .midi)
        let sorted = events.sorted { $0.frame < $1.frame }
        let n = max(1, sorted.count)
        let frames = UnsafeMutablePointer<Int>.allocate(capacity: n)
        let sizes = UnsafeMutablePointer<Int>.allocate(capacity: n)
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 3 * n)
        bytes.initialize(repeating: 0, count: 3 * n)
        for (i, e) in sorted.enumerated() {
            (frames + i).initialize(to: e.frame)
            (sizes + i).initialize(to: min(3, e.bytes.count))
            for (k, b) in e.bytes.prefix(3).enumerated() { bytes[3 * i + k] = b }
        }
        let next = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        next.initialize(to: 0)
        state = .allocate(capacity: 1)
        state.initialize(to: State(port: port, input: input, received: .allocate(), client: client.handle, frames: frames, sizes: sizes, bytes: bytes,
                                   count: sorted.count, base: .allocate(), next: next, written: .allocate()))
        try client.activate(process: { nframes, arg in
            let s = arg!.assumingMemoryBound(to: State.self).pointee
            if let i = s.input.midiBuffer(nframes), i.count > 0 { _ = s.received.add(i.count) }
            guard let buffer = s.port.midiBuffer(nframes) else { return 0 }
            buffer.clear()
            let base = s.base.load()
            guard base != 0 else { return 0 }
            let start = Int(JackClientHandle(raw: s.client).lastFrameTime)
            while s.next.pointee < s.count {
                let i = s.next.pointee
                // Frame times wrap at 2^32; tests run far from that.
                let offset = base - 1 + s.frames[i] - start
                if offset >= Int(nframes) { break }
                // An event whose cycle the server skipped (an xrun) goes out late, at the start of this one.
                if buffer.write(frame: UInt32(max(0, offset)), bytes: s.bytes + 3 * i, size: s.sizes[i]) {
                    _ = s.written.add(1)
                }
                s.next.pointee = i + 1
            }
            return 0
        }, context: UnsafeMutableRawPointer(state), afterWarmUp: {})
    }

    /// Plays the events relative to JACK frame time `base` (events already past are skipped).
    public func arm(base: UInt32) { state.pointee.base.store(Int(base) + 1) }

    /// Events written so far.
    public var written: Int { state.pointee.written.load() }
    public var portName: String { "\(client.name):midi_out" }
    public var inputName: String { "\(client.name):midi_in" }
    /// Events received on `midi_in`.
    public var received: Int { state.pointee.received.load() }

    public func close() { client.close() }

    deinit {
        client.close()
        let s = state.pointee
        s.frames.deallocate()
        s.sizes.deallocate()
        s.bytes.deallocate()
        s.next.deallocate()
        s.base.deallocate()
        s.written.deallocate()
        s.received.deallocate()
        state.deallocate()
    }
}
