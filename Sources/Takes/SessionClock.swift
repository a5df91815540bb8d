import Foundation

/// The session's clock, with two readings of one source: `now()`, the wall-clock time every time of day is read
/// against (schedules, `stop_at`, `start_at`, chunk boundaries, retention ages), and `real()`, the time durations are
/// measured in (retries, stalls, throttles). They are the same unless a test runs a virtual wall clock that began at
/// `origin` and runs `scale` times as fast (`TANDEM_TEST_CLOCK=ISO8601*SCALE`, e.g. `2026-11-23T09:20:00Z*600`: ten
/// virtual minutes per real second), which leaves durations real. A unit test gives it a `source` it moves by hand.
public struct SessionClock: Sendable, Equatable {
    public var origin: Date?
    public var scale: Double = 1
    /// The real moment the virtual clock showed `origin`.
    public var realStart: Date
    /// Where real time comes from: the system's clock (nil) or a test's.
    public var source: (@Sendable () -> Date)?

    public init(origin: Date? = nil, scale: Double = 1, source: (@Sendable () -> Date)? = nil) {
        self.origin = origin
        self.scale = scale
        self.source = source
        realStart = source?() ?? Date()
    }

    public static func == (a: SessionClock, b: SessionClock) -> Bool { a.origin == b.origin && a.scale == b.scale }

    /// Real time: what durations are measured in.
    public func real() -> Date { source?() ?? Date() }

    /// The wall-clock time now.
    public func now() -> Date {
        guard let origin else { return real() }
        return origin.addingTimeInterval(real().timeIntervalSince(realStart) * scale)
    }

    private static let processStart = Date()

    /// `TANDEM_TEST_CLOCK` from `environment` (the system's clock without it or when it does not parse). A virtual
    /// clock begins when the process did.
    public static func from(environment: [String: String]) -> SessionClock {
        guard let v = environment["TANDEM_TEST_CLOCK"] else { return SessionClock() }
        let parts = v.split(separator: "*").map(String.init)
        let f = ISO8601DateFormatter()
        guard let d = parts.first.flatMap({ f.date(from: $0) }) else { return SessionClock() }
        let scale = parts.count > 1 ? Double(parts[1]) ?? 1 : 1
        var c = SessionClock(origin: d, scale: scale.isFinite && scale > 0 && scale <= 100_000 ? scale : 1)
        c.realStart = processStart
        return c
    }
}
