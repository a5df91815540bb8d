import Foundation
import Presets
import Realtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM during `tandem render`. They become a stop the render carries out itself: a thread waits for
/// them (`sigwait`; every other thread has them blocked), and the render looks at `signal` at its next turn (an
/// in-process job at its next cycle, a batch between its children's answers), removes its partial files and its
/// children's, and exits 128 + the signal. A job stuck inside a plugin never looks: `grace` seconds after the signal
/// the thread removes the partial files it was told of (`track`) and ends the process itself.
///
/// Threads: `install` once on the main thread before any other thread starts; the rest from any thread.
final class RenderStop: Sendable {
    private struct State {
        /// The signal that asked the render to stop.
        var caught: Int32?
        /// Partial files that stay behind if the process ends here: this process's own and its children's.
        var partials: Set<String> = []
    }
    private let state = Mutex(State())

    /// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread started after) and starts the
    /// waiting thread.
    static func install(grace: Double = 5) -> RenderStop {
        let stop = RenderStop()
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGINT, SIGTERM] { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        _ = OSThread(name: "tandem-render-signals") {
            var set = sigset_t()
            sigemptyset(&set)
            for s in [SIGINT, SIGTERM] { sigaddset(&set, s) }
            var sig: Int32 = 0
            while sigwait(&set, &sig) != 0 || !(sig == SIGINT || sig == SIGTERM) {}
            stop.state.withLock { $0.caught = sig }
            usleep(UInt32(grace * 1_000_000))
            // Still here: the render did not get to its next look (a plugin that does not return).
            for f in stop.state.withLock({ $0.partials }) { unlink(f) }
            Console.err("tandem: stopped by signal \(sig) (a job did not stop by itself within \(Limits.number(grace)) s)\n")
            _exit(128 + sig)
        }
        return stop
    }

    /// The signal that asked the render to stop, once one has.
    var signal: Int32? { state.withLock { $0.caught } }

    /// Files to remove if the process must be ended from the signal thread.
    func track(_ files: [String]) { state.withLock { _ = $0.partials.formUnion(files) } }

    func untrack(_ files: [String]) { state.withLock { _ = $0.partials.subtract(files) } }
}
