import Realtime

/// Sends fuzzed packets to a port from its own thread as fast as the socket takes them, until stopped: the "flood"
/// during which a stop signal must still be honoured.
// @unchecked Sendable: the flood thread touches only what it captured (the two atomic counters, its own socket);
// `thread` is set in `init` and cleared by `stop`, on the owner's thread (`deinit` calls `stop` too).
public final class OSCFlood: @unchecked Sendable {
    private let stopFlag = AtomicCounter.allocate(0)
    private let sentCount = AtomicCounter.allocate(0)
    private var thread: OSThread?

    /// `exclude`: packets whose description contains one of these fragments are not sent.
    public init(port: Int, seed: UInt64, target: OSCFuzzer.Target, exclude: [String] = []) throws {
        let socket = try LoopbackUDP()
        let stop = stopFlag, sent = sentCount
        thread = OSThread(name: "osc-flood") {
            var fuzzer = OSCFuzzer(seed: seed, target: target)
            var ping = 0
            while stop.load() == 0 {
                var p = fuzzer.next()
                while exclude.contains(where: { p.description.contains($0) }) { p = fuzzer.next() }
                if socket.send(p.bytes, to: port) { _ = sent.add(1) }
                ping += 1
                if ping % 16 == 0 { socket.send(OSCWire.message("/tandem/ping", []), to: port) }
                for _ in 0..<64 { guard socket.receive(timeout: 0) != nil else { break } }
            }
        }
    }

    /// Packets sent so far.
    public var sent: Int { sentCount.load() }

    /// Stops the thread and waits for it.
    public func stop() {
        stopFlag.store(1)
        thread?.join()
        thread = nil
    }

    deinit {
        stop()
        stopFlag.deallocate()
        sentCount.deallocate()
    }
}
