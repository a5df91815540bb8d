import Engine
import Foundation
import Presets
import Takes

/// The recorder's schedule as the control loop follows it. Control thread.
struct UnattendedState {
    /// The schedule read against the recorder's clock (nil: none).
    var clock: ScheduleClock?
    /// Whether the schedule's window is open, as last acted on (nil: not looked at yet).
    var active: Bool?
    /// The next moment the window opens or closes.
    var nextChange: Date?
    /// When the recorder's writer last got a fresh take context (ports, clock anchor).
    var refreshedAt = Date.distantPast
}
