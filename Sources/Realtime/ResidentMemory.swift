#if canImport(Glibc)
import Glibc
#endif

/// Zeroed memory that is resident before the real-time side touches it, for the large rings.
///
/// Anonymous pages straight from the kernel: they come zeroed, so nothing writes them once more. Regions of 2 MiB or
/// more are aligned to 2 MiB and asked for as transparent huge pages, so a 25 MB ring costs a dozen page faults
/// instead of six thousand, and the real-time thread walks it with few TLB misses. The pages are populated at once
/// (`MADV_POPULATE_WRITE`, or one write per page on kernels before 5.14) and locked in memory where the limit allows,
/// so the real-time thread never waits for a page to be found, zeroed or swapped back in. Control thread only.
public enum ResidentMemory {
    static let hugePage = 2 << 20
    static let smallPage = 4096
    /// `MADV_HUGEPAGE` and `MADV_POPULATE_WRITE` (linux/mman.h; Glibc does not export the second everywhere).
    static let adviseHugePage: Int32 = 14
    static let advisePopulateWrite: Int32 = 23

    /// `count` zeroed, resident `T`s. Free with `deallocate(_:count:)` and the same count.
    public static func allocate<T: BitwiseCopyable>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let bytes = max(1, count * MemoryLayout<T>.stride)
        let (length, align) = layout(bytes)
        guard let raw = mmap(nil, length + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              raw != MAP_FAILED else {
            fatalError("out of memory: could not map \(bytes) bytes for a ring")
        }
        // Trim the head and tail so the region starts on a huge-page boundary.
        let start = Int(bitPattern: raw)
        let aligned = align == 0 ? start : (start + align - 1) & ~(align - 1)
        if aligned > start { munmap(raw, aligned - start) }
        let tail = start + length + align - (aligned + length)
        if tail > 0 { munmap(UnsafeMutableRawPointer(bitPattern: aligned + length), tail) }
        let region = UnsafeMutableRawPointer(bitPattern: aligned)!
        if align > 0 { _ = madvise(region, length, adviseHugePage) }
        if madvise(region, length, advisePopulateWrite) != 0 {
            let bytes = region.assumingMemoryBound(to: UInt8.self)
            for offset in stride(from: 0, to: length, by: smallPage) { bytes[offset] = 0 }
        }
        _ = mlock(region, length)    // best effort: without the privilege the pages are resident but not locked
        return region.bindMemory(to: T.self, capacity: count)
    }

    /// Returns memory from `allocate` (the same `count`) to the kernel.
    public static func deallocate<T>(_ pointer: UnsafeMutablePointer<T>, count: Int) {
        let (length, _) = layout(max(1, count * MemoryLayout<T>.stride))
        munmap(UnsafeMutableRawPointer(pointer), length)
    }

    /// The mapped length for `bytes`, and the alignment asked for (0: none beyond the page).
    static func layout(_ bytes: Int) -> (length: Int, align: Int) {
        bytes >= hugePage ? ((bytes + hugePage - 1) & ~(hugePage - 1), hugePage)
                          : ((bytes + smallPage - 1) & ~(smallPage - 1), 0)
    }
}
