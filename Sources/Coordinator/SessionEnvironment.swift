import Engine
import Foundation
import Logging
import Realtime
import Takes

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
