import CJack
#if canImport(Glibc)
import Glibc
#endif
import Realtime

/// What the JACK notification callbacks report, as counters and latest values the control side reads.
///
/// JACK calls notification callbacks from its own threads (in jackd2 mostly the client's notification thread,
/// some from the process thread), possibly more than one. They therefore only bump atomic counters, store latest
/// values and post the wake-up: multi-producer safe, never blocking, never calling back into libjack. The control
/// side compares counters with the values it saw last (a change in `portRegistrations` means "re-read the ports")
/// and waits on `wakeup`.
///
/// Threads: counters and values readable from any thread; written only by the callbacks. `allocate` and
/// `deallocate` control thread only.
// @unchecked Sendable: every field is a constant handle to thread-safe cells (atomics, a semaphore) but `reason`, a raw
// buffer (not Sendable) that the info-shutdown callback fills before it counts `.shutdown` (release) and
// `shutdownReason` reads only after seeing that count (acquire). jackd2 calls one of the two shutdown callbacks.
public struct JackNotifications: BitwiseCopyable, @unchecked Sendable {
    /// The kinds of notification, used as indices into `counts`.
    public enum Kind: Int, CaseIterable, Sendable {
        case xrun, shutdown, portRegistered, portUnregistered, portConnected, portDisconnected, graphOrder,
             bufferSize, sampleRate, clientRegistered, clientUnregistered, portRenamed
    }

    /// How many times each `Kind` has been delivered.
    public let counts: AtomicCounterArray
    /// Latest period size (frames) reported by the buffer-size callback, 0 before any.
    public let bufferSize: AtomicCounter
    /// Latest sample rate reported by the sample-rate callback, 0 before any.
    public let sampleRate: AtomicCounter
    /// Posted on every notification.
    public let wakeup: Wakeup
    /// Posted on every notification but an xrun as well: the control loop's wake-up (the session's environment), so
    /// a loop that sleeps long when idle reacts to a port or connection change at once. Nil: none.
    public let loop: Wakeup?
    /// The server's shutdown reason (NUL-terminated, truncated to 255 bytes), valid once `shutdown` counted.
    let reason: UnsafeMutablePointer<CChar>
    static let reasonCapacity = 256

    static func allocate(loop: Wakeup?) -> JackNotifications {
        let reason = UnsafeMutablePointer<CChar>.allocate(capacity: reasonCapacity)
        reason.initialize(repeating: 0, count: reasonCapacity)
        return JackNotifications(counts: .allocate(count: Kind.allCases.count), bufferSize: .allocate(),
                                 sampleRate: .allocate(), wakeup: .allocate(), loop: loop, reason: reason)
    }

    func deallocate() {
        counts.deallocate()
        bufferSize.deallocate()
        sampleRate.deallocate()
        wakeup.deallocate()
        reason.deallocate()
    }

    /// How many times `kind` was delivered. Any thread.
    public func count(_ kind: Kind) -> Int { counts.load(kind.rawValue) }

    /// The shutdown reason JACK gave, if the server shut this client down. Control side.
    public var shutdownReason: String? {
        count(.shutdown) > 0 && reason[0] != 0 ? String(cString: reason) : nil
    }

    @inline(__always)
    func note(_ kind: Kind) {
        counts.add(kind.rawValue, 1)
        wakeup.post()
        // An xrun asks nothing of the loop at once (it is counted): on a busy box they come by the hundred a second.
        if kind != .xrun, let loop { loop.post() }
    }

    /// Installs every notification callback on `client`. Must run before activation. Control thread.
    /// Returns the context block handed to libjack; the caller frees it after closing the client.
    func install(on client: OpaquePointer) -> UnsafeMutableRawPointer {
        let arg = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<JackNotifications>.stride,
                                                   alignment: MemoryLayout<JackNotifications>.alignment)
        arg.storeBytes(of: self, as: JackNotifications.self)
        jack_set_xrun_callback(client, { arg in
            arg!.load(as: JackNotifications.self).note(.xrun)
            return 0
        }, arg)
        // Both shutdown callbacks: jackd2 calls the info one (with a reason) when it is set, PipeWire's libjack
        // (0.3.65) only ever calls the plain one. Either counts as the server shutting this client down.
        jack_on_shutdown(client, { arg in
            arg!.load(as: JackNotifications.self).note(.shutdown)
        }, arg)
        jack_on_info_shutdown(client, { _, reason, arg in
            let n = arg!.load(as: JackNotifications.self)
            if let reason {
                _ = strncpy(n.reason, reason, JackNotifications.reasonCapacity - 1)
            }
            n.note(.shutdown)
        }, arg)
        jack_set_port_registration_callback(client, { _, registered, arg in
            arg!.load(as: JackNotifications.self).note(registered != 0 ? .portRegistered : .portUnregistered)
        }, arg)
        jack_set_port_connect_callback(client, { _, _, connected, arg in
            arg!.load(as: JackNotifications.self).note(connected != 0 ? .portConnected : .portDisconnected)
        }, arg)
        jack_set_graph_order_callback(client, { arg in
            arg!.load(as: JackNotifications.self).note(.graphOrder)
            return 0
        }, arg)
        jack_set_buffer_size_callback(client, { frames, arg in
            let n = arg!.load(as: JackNotifications.self)
            n.bufferSize.store(Int(frames))
            n.note(.bufferSize)
            return 0
        }, arg)
        jack_set_sample_rate_callback(client, { rate, arg in
            let n = arg!.load(as: JackNotifications.self)
            n.sampleRate.store(Int(rate))
            n.note(.sampleRate)
            return 0
        }, arg)
        jack_set_client_registration_callback(client, { _, registered, arg in
            arg!.load(as: JackNotifications.self).note(registered != 0 ? .clientRegistered : .clientUnregistered)
        }, arg)
        jack_set_port_rename_callback(client, { _, _, _, arg in
            arg!.load(as: JackNotifications.self).note(.portRenamed)
        }, arg)
        return arg
    }
}

