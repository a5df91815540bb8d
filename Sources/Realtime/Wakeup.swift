#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A counting wake-up: a real-time thread posts, a worker thread waits (with a timeout, so it also notices
/// stop requests and time-based work).
///
/// Threads: `post` from any thread, including RT (a POSIX semaphore post is a lock-free atomic plus, at most, one
/// futex wake). `wait` from the one worker that owns it. `allocate`/`deallocate` control thread only.
// @unchecked Sendable: a pointer to a POSIX semaphore, whose post and wait are thread-safe by definition.
public struct Wakeup: BitwiseCopyable, @unchecked Sendable {
    @usableFromInline let sem: UnsafeMutablePointer<sem_t>

    public static func allocate() -> Wakeup {
        let sem = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(sem, 0, 0)
        return Wakeup(sem: sem)
    }

    public func deallocate() {
        sem_destroy(sem)
        sem.deallocate()
    }

    /// Realtime: safe.
    @inlinable @inline(__always)
    public func post() { sem_post(sem) }

    /// Waits until posted or until `seconds` have passed. Returns true when posted. Worker thread only.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        // NaN, negative or absurd waits become 0 or a day: nothing a caller passes can trap here.
        let wait = seconds.isFinite ? min(max(0, seconds), 86_400) : 0
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + wait
        var deadline = timespec()
        deadline.tv_sec = Int(total)
        deadline.tv_nsec = Int((total - Double(Int(total))) * 1e9)
        while true {
            if sem_timedwait(sem, &deadline) == 0 { return true }
            if errno != EINTR { return false }
        }
    }

    /// Consumes every pending post without waiting. Worker thread only.
    public func drain() {
        while sem_trywait(sem) == 0 {}
    }
}
