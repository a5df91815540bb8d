import Commands
import Engine
import Foundation
import Plugins

/// What the control log keeps between turns of the loop: who asked for each control's last change, and the LV2
/// preset loads waiting for their chain's first cycle. Control thread.
struct ControlLogState {
    /// "engine plugin symbol" (or "engine plugin bypass", "engine mix", "engine gain") → the source of its last change.
    var sources: [String: String] = [:]
    /// A chain rebuilt for an LV2 preset → the command, logged at that chain's first cycle.
    var presets: [ObjectIdentifier: TimedCommand] = [:]
    /// Per chain, the changes it could not note that were already reported (`PluginChain.changesDropped`).
    var dropped: [ObjectIdentifier: Int] = [:]

    static func key(_ parts: String...) -> String { parts.joined(separator: " ") }
}
