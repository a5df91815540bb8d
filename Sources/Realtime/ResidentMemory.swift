#if canImport(Glibc)
import Glibc
#endif

/// Zeroed memory that is resident before the real-time side touches it, for the large rings.
///
/// Anonymous pages straight from the kernel: they come zeroed, so nothing writes them once more. The pages are
/// populated at once, by `mlock` where the limit allows (locked in memory too), else by `MADV_POPULATE_WRITE` (or one
/// write per page on kernels before 5.14), so the real-time thread never waits for a page to be found, zeroed or
/// swapped back in. Control thread only.
///
/// Base pages, not transparent huge pages: measured on a 2-vCPU VM (2026-11-21), populating 48 MiB took 19 ms with
/// small pages every time, and with `MADV_HUGEPAGE` 2 ms when the huge pages were warm but 112 ms when the host had to
/// back them afresh, which is the usual case on a VM that hands freed memory back to its host. That was a third of a
/// 64-channel recorder's CPU in a 10 s take, and part of its start-up, while the process callback cost the same with
/// either (p50 14.3 µs at 64 ch / 256; 10 alternating runs on one private server).
public enum ResidentMemory {
    static let page = max(4096, sysconf(Int32(_SC_PAGESIZE)))
    /// `MADV_POPULATE_WRITE` (linux/mman.h; Glibc does not export it everywhere).
    static let advisePopulateWrite: Int32 = 23

    /// Whether `bytes` of resident memory can be had at all: at most half of the machine's physical memory, so a ring
    /// sized from outside input (600 s × 256 channels at 192 kHz is 118 GB) is refused in words instead of ending in
    /// `allocate`'s out-of-memory stop or the kernel's OOM killer.
    public static func plausible(bytes: Int) -> Bool {
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        guard pages > 0, bytes >= 0 else { return true }
        return bytes / 2 <= pages / 4 * page   // bytes <= pages * page / 2, without overflow
    }

    /// Why `allocate` could not give the memory: the bytes asked for and the kernel's errno (0 when the size itself
    /// does not fit an `Int`).
    public struct Failure: Error, CustomStringConvertible, Sendable, Equatable {
        public let bytes: Int
        public let errorNumber: Int32
        public var description: String {
            let why = errorNumber == 0 ? "the size does not fit in memory" : String(cString: strerror(errorNumber))
            return "cannot map \(bytes) bytes of resident memory: \(why)"
        }
    }

    /// `count` zeroed, resident `T`s. Free with `deallocate(_:count:)` and the same count. Throws when the kernel
    /// will not map that much (or `count` times the size overflows), never stops the process.
    public static func allocate<T: BitwiseCopyable>(_ type: T.Type, count: Int) throws(Failure) -> UnsafeMutablePointer<T> {
        let (bytes, overflow) = max(0, count).multipliedReportingOverflow(by: MemoryLayout<T>.stride)
        guard !overflow, bytes <= Int.max - 2 * page else { throw Failure(bytes: Int.max, errorNumber: 0) }
        let length = length(bytes)
        guard let region = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              region != MAP_FAILED else {
            throw Failure(bytes: length, errorNumber: errno)
        }
        // `mlock` populates as it locks (write faults on a private writable mapping): one walk over the pages. Only
        // without the privilege (or past RLIMIT_MEMLOCK) are they populated unlocked. Populating first and locking
        // after walked them twice: 40 + 9-12 ms for 98 MB (a 128-channel, 4 s ring) against 35-50 ms. The sanitizers'
        // `mlock` does nothing and returns 0 (TSan and ASan intercept it), so one page is asked whether it is in.
        if !(mlock(region, length) == 0 && resident(region)) && madvise(region, length, advisePopulateWrite) != 0 {
            let bytes = region.assumingMemoryBound(to: UInt8.self)
            for offset in stride(from: 0, to: length, by: page) { bytes[offset] = 0 }
        }
        return region.bindMemory(to: T.self, capacity: count)
    }

    /// Returns memory from `allocate` (the same `count`) to the kernel.
    public static func deallocate<T>(_ pointer: UnsafeMutablePointer<T>, count: Int) {
        munmap(UnsafeMutableRawPointer(pointer), length(count * MemoryLayout<T>.stride))
    }

    /// Whether the page at `address` is in memory (`mincore`).
    static func resident(_ address: UnsafeMutableRawPointer) -> Bool {
        var state: UInt8 = 0
        return mincore(address, page, &state) == 0 && state & 1 == 1
    }

    /// The mapped length for `bytes`: whole pages, at least one.
    static func length(_ bytes: Int) -> Int { (max(1, bytes) + page - 1) & ~(page - 1) }
}
