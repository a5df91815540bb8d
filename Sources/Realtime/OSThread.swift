#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain OS thread for blocking work (disk writer, disk reader). Never a Swift task: blocking I/O must not run
/// on the cooperative pool.
///
/// Threads: `start` and `join` from the control thread that owns the value.
// @unchecked Sendable: its state (the pthread and whether it was joined) is touched by `init` and `join` on the
// owner's thread only; the new thread sees only the boxed body, handed over by pthread_create.
public final class OSThread: @unchecked Sendable {
    private final class Box {
        let body: () -> Void
        let kernelName: String
        init(_ body: @escaping () -> Void, kernelName: String) {
            self.body = body
            self.kernelName = kernelName
        }
    }

    private var handle = pthread_t()
    private var started = false
    public let name: String

    /// Starts `body` on a new thread; `name` identifies it in logs and errors, and (without a "tandem-" prefix,
    /// cut to the kernel's 15 bytes) in `ps -L`, `top -H` and `/proc/PID/task/*/comm`.
    public init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        let box = Unmanaged.passRetained(Box(body, kernelName: OSThread.kernelName(name))).toOpaque()
        let rc = pthread_create(&handle, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            OSThread.nameCurrentThread(box.kernelName)
            box.body()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed for \(name): \(rc)")
        started = true
    }

    /// The name the kernel shows for a thread called `name`: the process is already "tandem", and Linux keeps 15 bytes.
    public static func kernelName(_ name: String) -> String {
        let short = name.hasPrefix("tandem-") ? String(name.dropFirst("tandem-".count)) : name
        var bytes = Array(short.utf8.prefix(15))
        while String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Names the calling thread (Linux: its `/proc/thread-self/comm`; Glibc's module does not export
    /// `pthread_setname_np`). Best effort: a thread without its name works the same.
    static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        _ = name.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        #endif
    }

    /// Waits for the thread to finish. Call once.
    public func join() {
        guard started else { return }
        started = false
        pthread_join(handle, nil)
    }
}
