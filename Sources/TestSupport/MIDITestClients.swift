import Jack
import Realtime

/// RT state of the MIDI test clients: one MIDI port, a ring of events at absolute JACK frame times.
public struct MIDITestState: BitwiseCopyable {
    public var port: JackPort
    public var client: OpaquePointer?
    /// Capture: events received (position = JACK frame time of the event). Source: events to send, in order.
    public var ring: MIDIEventRing
    /// Events the capture ring had no room for, or the source's port buffer refused.
    public var lost: AtomicCounter
    public var cycles: AtomicCounter
}

/// A client with one MIDI input port `midi_in` that keeps every event it receives with its absolute JACK frame
/// time (the cycle's frame time plus the event's frame in the cycle).
public final class MIDICapture {
    public let client: JackClient
    let state: UnsafeMutablePointer<MIDITestState>
    private var closed = false

    public init(name: String, server: String, capacity: Int = 1 << 20) throws {
        client = try JackClient(name: name, server: server)
        let port = try client.registerPort("midi_in", direction: .input, type: .midi)
        state = .allocate(capacity: 1)
        state.initialize(to: MIDITestState(port: port, client: client.handle, ring: .allocate(capacity: capacity),
                                           lost: .allocate(), cycles: .allocate()))
        try client.activate(process: { frames, arg in
            let s = arg!.assumingMemoryBound(to: MIDITestState.self).pointee
            let now = Int(JackClientHandle(raw: s.client).lastFrameTime)
            if let b = s.port.midiBuffer(frames) {
                for i in 0..<b.count {
                    guard let e = b.event(i), let bytes = e.bytes,
                          let event = MIDIRingEvent(position: now + Int(e.frame), port: 0, bytes: bytes, count: e.size),
                          s.ring.push(event) else {
                        s.lost.add(1)
                        continue
                    }
                }
            }
            s.cycles.add(1)
            return 0
        }, context: UnsafeMutableRawPointer(state)) {
            state.pointee.ring.reset()
            state.pointee.cycles.store(0)
        }
    }

    /// Every event so far: absolute JACK frame time and bytes. Call while running or after `close`.
    public func events() -> [(frame: Int, bytes: [UInt8])] {
        var out: [(Int, [UInt8])] = []
        while let e = state.pointee.ring.peek() {
            state.pointee.ring.drop()
            out.append((Int(e.position), e.bytes))
        }
        return out
    }

    public var lost: Int { state.pointee.lost.load() }

    public func close() {
        guard !closed else { return }
        closed = true
        client.close()
    }

    deinit {
        close()
        state.pointee.ring.deallocate()
        state.pointee.lost.deallocate()
        state.pointee.cycles.deallocate()
        state.deallocate()
    }
}

/// A client with one MIDI output port `midi_out` that sends preloaded events at absolute JACK frame times (each in
/// the cycle that holds its frame; one already past goes out at frame 0 of the next cycle and counts as late).
public final class MIDISender {
    public let client: JackClient
    let state: UnsafeMutablePointer<MIDITestState>
    private var closed = false

    /// `events`: absolute JACK frame times (ascending) and bytes (at most `MIDIRingEvent.capacity` each).
    public init(name: String, server: String, capacity: Int = 1 << 20) throws {
        client = try JackClient(name: name, server: server)
        let port = try client.registerPort("midi_out", direction: .output, type: .midi)
        state = .allocate(capacity: 1)
        state.initialize(to: MIDITestState(port: port, client: client.handle, ring: .allocate(capacity: capacity),
                                           lost: .allocate(), cycles: .allocate()))
        try client.activate(process: { frames, arg in
            let s = arg!.assumingMemoryBound(to: MIDITestState.self).pointee
            let now = Int(JackClientHandle(raw: s.client).lastFrameTime)
            if let b = s.port.midiBuffer(frames) {
                b.clear()
                while let e = s.ring.peek(), Int(e.position) < now + Int(frames) {
                    s.ring.drop()
                    let ok = e.withBytes { bytes, size in b.write(frame: UInt32(truncatingIfNeeded: max(0, Int(e.position) - now)), bytes: bytes, size: size) }
                    if !ok || Int(e.position) < now { s.lost.add(1) }
                }
            }
            s.cycles.add(1)
            return 0
        }, context: UnsafeMutableRawPointer(state)) {
            state.pointee.ring.reset()
            state.pointee.cycles.store(0)
        }
    }

    /// Queues an event (control side; the ring's producer). False when the ring is full.
    @discardableResult
    public func send(frame: Int, bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress,
                  let e = MIDIRingEvent(position: frame, port: 0, bytes: base, count: b.count) else { return false }
            return state.pointee.ring.push(e)
        }
    }

    /// Events sent late or refused by the port buffer.
    public var late: Int { state.pointee.lost.load() }
    public var pending: Int { state.pointee.ring.count }
    /// JACK's current frame time (control side).
    public var frameTime: Int { Int(client.frameTime) }

    public func close() {
        guard !closed else { return }
        closed = true
        client.close()
    }

    deinit {
        close()
        state.pointee.ring.deallocate()
        state.pointee.lost.deallocate()
        state.pointee.cycles.deallocate()
        state.deallocate()
    }
}
