import Engine
import Foundation
import Presets
import Takes

/// What a session reports to its owner (the command line prints these).
public enum SessionEvent: Sendable {
    case recorder(RecorderEvent)
    case player(PlayerEvent)
    case connected(String, String)
    case disconnected(String, String)
    /// Someone removed a connection a rule made: kept removed (respect) or made again (repair).
    case manualDisconnect(String, String, repaired: Bool)
    case serverLost(String)
    case serverBack
    /// The server is up but has run no cycle for `seconds` (a NetJACK2 slave waiting for its master).
    case cyclesStopped(seconds: Double)
    /// Cycles run again after `seconds` without any.
    case cyclesBack(seconds: Double)
    case refused(String)
    /// A plugin of an engine's chain could not run as asked: left out (`bypassed`: the chain runs without it) or
    /// one of its settings ignored. Sent whenever a chain is built with problems (at start with
    /// `on_plugin_error = "bypass"`, after a server restart, when a re-applied preset rebuilds it).
    case pluginProblem(engine: String, plugin: String, bypassed: Bool, message: String)
    /// An isolated rack's process went down (crashed or hung); it is being restarted.
    case rackDown(rack: String, what: String)
    /// An isolated rack is running again, `seconds` after it went down.
    case rackBack(rack: String, seconds: Double)
    /// A plugin control was set, by `source`: `osc`, `midi` (a control map), `preset` (a preset applied, an LV2
    /// preset loaded). `value` is the value set (clamped to the port's range).
    case controlChanged(engine: String, plugin: String, symbol: String, value: Float, source: String)
    /// A plugin was bypassed or brought back, by `source` (as above).
    case bypassChanged(engine: String, plugin: String, bypassed: Bool, source: String)
    /// An LV2 preset was loaded on a running plugin, by `source`.
    case presetLoaded(engine: String, plugin: String, preset: String, source: String)
    /// A running chain was edited (a plugin added, removed or moved), by `source`; `detail` says what.
    case chainEdited(engine: String, detail: String, source: String)
    /// A chain's dry/wet mix or output gain was set, by `source`.
    case chainLevelChanged(engine: String, mix: Double, gainDB: Double, source: String)
    /// A marker was added to take `take`, about `seconds` into it (the take's report has its exact frame).
    case markerAdded(take: Int, seconds: Double, label: String, source: String)
    /// Something the page keeps for every device (its favourites) was changed, by `source`.
    case favouritesChanged(source: String)
    /// A control map was added (learned, or added over OSC) at `index` of the session's maps; `map` is its text form.
    case mapAdded(index: Int, map: String)
    /// A control map could not do what its message asked (a program with no preset, a preset file that does not
    /// apply, no take running for a marker).
    case mapFailed(String)
    /// A scene was recalled by `source`: its values start gliding over `rampMS` in one cycle; `missing` names
    /// the values the rig could not take (each "PATH: why"), `lagMS` how long after the in-process chains the
    /// isolated racks had theirs (nil: none involved).
    case sceneRecalled(name: String, rampMS: Double, applied: Int, missing: [String], lagMS: Double?, source: String)
    /// The rig was set `position` (0 to 1) of the way from scene `from` to scene `to`.
    case sceneMorphed(from: String, to: String, position: Double, source: String)
    /// The session's scenes changed (`detail`: "saved NAME", "renamed OLD NEW", "deleted NAME").
    case scenesChanged(detail: String, source: String)
    /// An event an isolated rack's process told of (its kind and text as the control protocol shows them): a
    /// control, bypass or preset changed there.
    case relayed(kind: String, text: String)
}

/// What one `apply` changed in the JACK graph and in the engines.
public struct ApplyReport: Sendable, Equatable, CustomStringConvertible {
    public var clientsOpened = 0
    public var clientsClosed = 0
    public var portsRegistered = 0
    public var connected = 0
    public var disconnected = 0
    /// Engines whose settings changed without touching the graph ("recorder", "player").
    public var reconfigured: [String] = []

    public var graphChanges: Int { clientsOpened + clientsClosed + portsRegistered + connected + disconnected }

    public var description: String {
        "clients +\(clientsOpened)/-\(clientsClosed), ports +\(portsRegistered), connections +\(connected)/-\(disconnected)"
            + (reconfigured.isEmpty ? "" : ", reconfigured: " + reconfigured.joined(separator: ", "))
    }
}

/// What the owner should do after `poll`.
public enum SessionOutcome: Equatable, Sendable {
    case running
    /// The session is done, for this reason (the command line maps it to an exit code).
    case finished(SessionEnd)
}

/// Why a session ended by itself.
public enum SessionEnd: Equatable, Sendable {
    /// A take with a duration or stop time ended (start mode immediately).
    case takeComplete
    /// The server went away and the preset says `on_server_loss = "stop"`.
    case serverLost
    /// A disk error ended a take and the preset says `on_disk_error = "stop"`.
    case diskError
    /// The player's queue played out and the preset says `exit_after = "playback"`; `failedItems` files of it
    /// could not be played.
    case playbackComplete(failedItems: Int)
}
