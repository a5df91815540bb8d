#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain OS thread for blocking work (disk writer, disk reader). Never a Swift task: blocking I/O must not run
/// on the cooperative pool.
///
/// Threads: `start` and `join` from the control thread that owns the value.
public final class OSThread: @unchecked Sendable {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    private var handle = pthread_t()
    private var started = false
    public let name: String

    /// Starts `body` on a new thread; `name` identifies it in logs and errors.
    public init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(&handle, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed for \(name): \(rc)")
        started = true
    }

    /// Waits for the thread to finish. Call once.
    public func join() {
        guard started else { return }
        started = false
        pthread_join(handle, nil)
    }
}
