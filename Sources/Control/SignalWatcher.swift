import Realtime
#if canImport(Glibc)
import Glibc
#endif

/// Turns process signals into flags the control loop reads: a dedicated thread waits in `sigwait`, so no work
/// happens in a signal handler and every other thread (JACK's included) has the signals blocked.
///
/// Threads: `install` once on the main thread before any other thread starts; the rest from the control loop.
// @unchecked Sendable: the signal thread touches only the atomics it captured (`counts`, `wakeup`); `seen`, the one
// var, is the control loop's (`take`).
public final class SignalWatcher: @unchecked Sendable {
    public static let watched: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2]
    private let counts = AtomicCounterArray.allocate(count: 32)
    /// Posted whenever a signal arrives.
    public let wakeup = Wakeup.allocate()
    private var seen = [Int](repeating: 0, count: 32)

    /// Blocks the watched signals in the calling thread (and so in every thread started after) and starts the
    /// waiting thread.
    public static func install() -> SignalWatcher {
        var set = sigset_t()
        sigemptyset(&set)
        for s in watched { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let watcher = SignalWatcher()
        let counts = watcher.counts
        let wakeup = watcher.wakeup
        _ = OSThread(name: "tandem-signals") {
            var set = sigset_t()
            sigemptyset(&set)
            for s in SignalWatcher.watched { sigaddset(&set, s) }
            var stops = 0
            while true {
                var sig: Int32 = 0
                if sigwait(&set, &sig) == 0 && sig > 0 && sig < 32 {
                    counts.add(Int(sig), 1)
                    wakeup.post()
                    if sig == SIGINT || sig == SIGTERM {
                        stops += 1
                        if stops >= 2 { SignalWatcher.exitAtOnce(sig) }
                    }
                }
            }
        }
        return watcher
    }

    /// A second SIGINT or SIGTERM while the first one's stop is under way (a disk that does not answer, a server
    /// that does not): the process ends at once, 128 + the signal, as a shell's. Every signal path ends the process;
    /// a take not finished is completed from its report at the next start (`TakeRecovery`). Signal thread.
    static func exitAtOnce(_ sig: Int32) -> Never {
        var text = Array("tandem: a second \(sig == SIGINT ? "SIGINT" : "SIGTERM") while stopping: ending now (a take not finished is completed from its report at the next start)\n".utf8)
        _ = write(2, &text, text.count)
        _exit(128 + sig)
    }

    /// How many times `signal` arrived since the last call for it.
    public func take(_ signal: Int32) -> Int {
        let now = counts.load(Int(signal))
        defer { seen[Int(signal)] = now }
        return now - seen[Int(signal)]
    }
}
