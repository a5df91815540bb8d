#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread asleep in poll(2) on some descriptors and on a pipe of its own (written to stop it), so it costs nothing
/// while they are quiet. `body` runs each time one of them is readable (or ended) and says whether to go on.
///
/// Threads: created and stopped by one owner (the control thread); `body` runs on the new thread.
// @unchecked Sendable: `thread` and `stopPipe` are set in `init` and changed only by `stop`, on the owner's thread;
// the polling thread sees only the descriptors and the body it was started with.
public final class PollingThread: @unchecked Sendable {
    private var thread: OSThread?
    private var stopPipe: [Int32] = [-1, -1]

    /// Nil when no pipe can be made (the owner then does without).
    public init?(name: String, fds: [Int32], body: @escaping @Sendable () -> Bool) {
        guard pipe(&stopPipe) == 0 else { return nil }
        let stopFD = stopPipe[0]
        thread = OSThread(name: name) {
            var watched = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            watched.append(pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0))
            while true {
                guard poll(&watched, nfds_t(watched.count), -1) > 0 else { continue }   // EINTR
                if watched[watched.count - 1].revents != 0 || !body() { return }
            }
        }
    }

    /// Ends the thread at once (or finds it ended by `body`). Owner only; idempotent.
    public func stop() {
        guard let t = thread else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe[1], &byte, 1)
        t.join()
        thread = nil
        close(stopPipe[0])
        close(stopPipe[1])
    }

    deinit { stop() }
}
