import Foundation
import Loudness
import Realtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The child's side of the heartbeat: `ready`, then `cycles N` every `interval`, written without blocking to the
/// descriptor the supervisor gave it (a full pipe drops a line; the next one carries the newer count). And the
/// rack's own watchdog: a cycle counter that stands still for `hangSeconds` while the server's frame time moves is
/// a plugin hung in its process thread; the process then says `hung S` and ends itself with SIGKILL.
///
/// Why the watchdog is the child's: the supervisor would otherwise have to read a beat several times a second, and
/// each turn of the session's loop costs 60-120 µs of a cold thread here; that was a tenth of a light rack's CPU
/// (issue 19: isolation may cost 5 %). The supervisor's own check stays as the backstop for a process whose main
/// thread is stuck as well (`RackSupervisor.hangSeconds`).
public struct RackHeartbeat {
    /// How often the count is written: the backstop needs it, nothing else.
    public static let interval = 2.0
    /// How long the counter may stand still while the server runs.
    public static let hangSeconds = 1.5
    let fd: Int32
    private var lastBeat = Date.distantPast
    private var watchedCycles = -1
    private var watchedFrame: UInt32 = 0
    private var lastMove = Date()
    private var lastLoudness = Date.distantPast

    public init(fd: Int32) {
        self.fd = fd
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        // What a plugin starts must not keep the pipe open: its end is how the supervisor hears of a crash.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    /// Tells the session of an event (one line; control-changed, bypass-changed, preset-loaded), for its
    /// subscribers. Dropped when the pipe is full.
    public func tell(kind: String, text: String) {
        write("event \(kind) \(text.replacingOccurrences(of: "\n", with: " "))\n")
    }

    /// Each loop turn: `ready` at the first, then the count every `interval`.
    public mutating func beat(cycles: Int, ready: Bool) {
        guard ready, Date().timeIntervalSince(lastBeat) >= Self.interval else { return }
        if lastBeat == .distantPast { write("ready\n") }
        lastBeat = Date()
        write("cycles \(cycles)\n")
    }

    /// Each loop turn: how long the cycle counter has stood still while the server's frame time moved, once that
    /// is past `hangSeconds` (nil before). A stopped server stops every client's counter: that is no hang, so
    /// `frameTime` must be one that stops with the server (`JackClient.cycleFrameTime`, not the extrapolated one).
    public mutating func stalled(cycles: Int, frameTime: UInt32) -> Double? {
        let now = Date()
        let serverMoving = frameTime != watchedFrame
        watchedFrame = frameTime
        if cycles != watchedCycles || !serverMoving {
            watchedCycles = cycles
            lastMove = now
            return nil
        }
        let still = now.timeIntervalSince(lastMove)
        return still > Self.hangSeconds ? still : nil
    }

    /// Each loop turn: the rack's loudness readings, once a second at most, as one line of JSON (`loudness [...]`, the
    /// `ProgrammeLoudness` values the session shows in its status). Nothing when not measured.
    public mutating func loudness(_ readings: [ProgrammeLoudness]) {
        guard !readings.isEmpty, Date().timeIntervalSince(lastLoudness) >= 1,
              let data = try? JSONEncoder().encode(readings) else { return }
        lastLoudness = Date()
        write("loudness " + String(decoding: data, as: UTF8.self) + "\n")
    }

    /// Says the process is ending because its process thread hung for `seconds`.
    public func hung(seconds: Double) {
        write("hung \(String(format: "%.2f", seconds))\n")
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.write(fd, &bytes, bytes.count)
    }
}

/// The supervisor's side of the heartbeat pipe: a thread asleep in poll() on it, which keeps what the child said
/// and wakes the session's loop for what needs it at once: `ready`, an event, `hung`, and the pipe's end (the
/// process ended: a crash is seen at once, not at the loop's next turn). A `cycles N` line only moves the count,
/// which the loop reads when it turns.
///
/// Threads: its own reader thread; `take` and `stop` from the control thread.
// @unchecked Sendable: `buffer` and `pending` belong to the reader thread (`readOnce`), which hands what it read on
// through `heard` (a Mutex) and `wake`; `poller` is set in `init` and stopped on the control thread.
final class HeartbeatReader: @unchecked Sendable {
    struct Heard {
        /// Lines other than `cycles N`, in order (at most 4096 are kept between two takes).
        var lines: [String] = []
        var cycles = 0
        /// The rack's loudness readings as last heard (`loudness` lines, JSON; nil: none heard).
        var loudness: [ProgrammeLoudness]?
        /// The pipe ended: every copy of its write end is closed, so the process has ended.
        var ended = false
    }

    private let fd: Int32
    private let wake: Wakeup?
    private let heard = Mutex(Heard())
    private var poller: PollingThread?
    /// The reader thread's own: a read's bytes, and a line not yet ended.
    private var buffer = [UInt8](repeating: 0, count: 4096)
    private var pending: [UInt8] = []

    /// Reads `fd` (non-blocking; the caller keeps and closes it after `stop`) and posts `wake` when the loop is needed.
    init(fd: Int32, wake: Wakeup?) {
        self.fd = fd
        self.wake = wake
        // No thread: the loop's backstop still sees a dead process.
        poller = PollingThread(name: "tandem-rackbeat", fds: [fd]) { [self] in readOnce() }
    }

    deinit { stop() }

    /// What was heard since the last call (the lines once; the count and the end as they stand). Control thread.
    func take() -> Heard {
        heard.withLock { h in
            defer { h.lines.removeAll() }
            return h
        }
    }

    /// Ends the thread. Control thread; idempotent.
    func stop() { poller?.stop() }

    /// One read of the pipe: keeps its lines, wakes the loop for all but a count. False once the pipe has ended.
    private func readOnce() -> Bool {
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EAGAIN || errno == EINTR) { return true }
        guard n > 0 else {
            heard.withLock { $0.ended = true }
            wake?.post()
            return false
        }
        pending.append(contentsOf: buffer.prefix(n))
        var urgent = false
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            if line.hasPrefix("cycles "), let count = Int(line.dropFirst(7)) {
                heard.withLock { $0.cycles = count }
            } else if line.hasPrefix("loudness ") {
                let readings = try? JSONDecoder().decode([ProgrammeLoudness].self, from: Data(line.utf8.dropFirst(9)))
                heard.withLock { $0.loudness = readings }
            } else {
                urgent = true
                heard.withLock { if $0.lines.count < 4096 { $0.lines.append(line) } }
            }
        }
        if pending.count > 65_536 { pending.removeAll() }
        if urgent { wake?.post() }
        return true
    }
}
