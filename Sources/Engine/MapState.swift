import Commands
import Foundation
import Plugins
import Presets
import Realtime

/// What the control maps remember between messages. Control thread only.
struct MapState {
    /// A learn waiting for the next CC (see `learn`).
    var learning: ControlMap?
    /// Per map (by index): whether its CC was at 64 or above at its last message (for presses: toggles, markers).
    var pressed: [Int: Bool] = [:]
    /// Failures already announced (a map whose target is gone fails at every message of a moving controller).
    var failures: Set<String> = []
    /// The last markers maps added (frame time and label): the same message heard by several racks, some of them
    /// isolated (their processes relay their markers), adds one marker.
    var recentMarks: [String] = []
}
