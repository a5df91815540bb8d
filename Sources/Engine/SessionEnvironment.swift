import Foundation
import Logging
import Realtime

/// What a session takes from the world, built once where the program starts (`SessionEnvironment.fromProcess`) and
/// passed down: the clock it decides by, the fault hooks of tests, the control loop's wake-up and its logger. Nothing
/// below `main` reads the process environment for these.
public struct SessionEnvironment: Sendable {
    /// The one clock of the session: schedules, stop and start times, retention ages, retries, stalls and saving all
    /// read it.
    public var clock: SessionClock
    /// Faults a test injects into the disk writer (none in production).
    public var faults: RecorderFaults
    /// The control loop's wake-up, posted by every client's JACK notifications, a rack's MIDI for its maps and an
    /// isolated rack's heartbeat (nil: the loop wakes on its own turns).
    public var loopWakeup: Wakeup?
    public var logger: Logger

    public init(clock: SessionClock = SessionClock(), faults: RecorderFaults = RecorderFaults(), loopWakeup: Wakeup? = nil,
                logger: Logger = Logger(label: "tandem.session")) {
        self.clock = clock
        self.faults = faults
        self.loopWakeup = loopWakeup
        self.logger = logger
    }

    /// The environment of this process: the test hooks `TANDEM_TEST_CLOCK` and `TANDEM_FAULT_STALL_WRITER` read once.
    public static func fromProcess(loopWakeup: Wakeup?, logger: Logger,
                                   environment: [String: String] = ProcessInfo.processInfo.environment) -> SessionEnvironment {
        SessionEnvironment(clock: SessionClock.from(environment: environment),
                           faults: RecorderFaults.from(environment: environment), loopWakeup: loopWakeup, logger: logger)
    }
}

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
