import Commands
import Engine
import Foundation
import Plugins
import Presets

/// Where a command came from and what it may do: every surface (OSC, HTTP, control maps) hands the session a
/// `Command` with one of these.
public struct CommandContext: Sendable {
    /// Who changed a control ("osc", "http", "midi"): the `controlChanged` events say it.
    public var source: String
    /// When the request arrived (a marker lands on its frame).
    public var arrival: Date?
    /// A control map's scaled value: clamped to the control's range (rounding may take it a hair past an end)
    /// instead of refused.
    public var clamp: Bool
    /// The JACK frame time of the MIDI message a map fired on (a marker lands there).
    public var frameTime: UInt32?

    public init(source: String, arrival: Date? = nil, clamp: Bool = false, frameTime: UInt32? = nil) {
        self.source = source
        self.arrival = arrival
        self.clamp = clamp
        self.frameTime = frameTime
    }
}

/// The reply to `/tandem/map/list`.
struct MapList: Encodable {
    struct Entry: Encodable {
        let index: Int
        let map: String
    }
    let maps: [Entry]
    /// The map a learn waits to complete (its source is filled in by the CC that comes).
    let learning: String?
}
