/// A lock-free histogram of durations in nanoseconds: log-linear buckets (8 per power of two, so within 12.5 %),
/// each an atomic counter. The RT thread records; anyone reads percentiles.
///
/// Threads: `record` from one RT thread (realtime-safe: a bit scan and an atomic add); `summary` and `reset` from
/// the control side (`reset` may lose a concurrent record, which only affects statistics).
public struct CycleHistogram: BitwiseCopyable, Sendable {
    static let subBuckets = 8
    static let bucketCount = 64 * subBuckets
    @usableFromInline let counts: AtomicCounterArray
    @usableFromInline let maximum: AtomicCounter

    public static func allocate() -> CycleHistogram {
        CycleHistogram(counts: .allocate(count: bucketCount), maximum: .allocate())
    }

    public func deallocate() {
        counts.deallocate()
        maximum.deallocate()
    }

    @inlinable @inline(__always)
    static func bucket(_ ns: Int) -> Int {
        let v = UInt64(max(1, ns))
        let exponent = 63 - v.leadingZeroBitCount
        guard exponent >= 3 else { return Int(v) }
        let mantissa = Int((v >> UInt64(exponent - 3)) & 7)
        return exponent * 8 + mantissa
    }

    /// The lower edge of a bucket, in nanoseconds.
    static func lowerEdge(_ b: Int) -> Int {
        let exponent = b / 8, mantissa = b % 8
        guard exponent >= 3 else { return b }
        return (8 + mantissa) << (exponent - 3)
    }

    /// Records one duration. Realtime: safe.
    @inlinable @inline(__always)
    public func record(nanoseconds ns: Int) {
        counts.add(Self.bucket(ns), 1)
        maximum.storeMax(ns)
    }

    public struct Summary: Sendable, Equatable {
        public var count: Int
        public var p50: Int
        public var p99: Int
        public var max: Int
    }

    /// Percentiles (bucket upper edges, so never optimistic) and the exact maximum.
    public func summary() -> Summary {
        var total = 0
        var per = [Int](repeating: 0, count: Self.bucketCount)
        for b in 0..<Self.bucketCount {
            per[b] = counts.load(b)
            total += per[b]
        }
        func percentile(_ p: Double) -> Int {
            guard total > 0 else { return 0 }
            let target = Int((Double(total) * p).rounded(.up))
            var seen = 0
            for b in 0..<Self.bucketCount {
                seen += per[b]
                if seen >= target { return min(Self.lowerEdge(b + 1), maximum.load()) }
            }
            return maximum.load()
        }
        return Summary(count: total, p50: percentile(0.5), p99: percentile(0.99), max: maximum.load())
    }

    public func reset() {
        for b in 0..<Self.bucketCount { counts.store(b, 0) }
        maximum.store(0)
    }
}
