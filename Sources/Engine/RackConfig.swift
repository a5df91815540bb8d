import Foundation
import Presets

/// What a rack engine is built from (a `[[rack]]` table, or `tandem rack`'s options).
public struct RackConfig: Sendable, Equatable {
    public var name = "rack"
    public var clientName = "rack"
    public var inputs: [String] = ["in_1", "in_2"]
    public var outputs: [String] = ["out_1", "out_2"]
    /// Input ports for the chain's side inputs (a compressor's side chain: `<plugin>_<port symbol>`), after the
    /// inputs; silent while nothing is connected.
    public var sideInputs: [String] = []
    /// Output ports for the chain's extra outputs (its plugins' CV outputs: `<plugin>_<port symbol>`), after the
    /// outputs.
    public var sideOutputs: [String] = []
    /// MIDI input ports (merged, they feed every plugin that takes MIDI) and MIDI output ports (the MIDI the plugins
    /// write); see `RackMIDI`.
    public var midiInputs: [String] = []
    public var midiOutputs: [String] = []
    /// With a tempo, the rack offers to be JACK's timebase master (see `ConstantTimebase`).
    public var tempo: Double?
    public var meter = SessionSection.Meter()
    public var plugins: [PluginSpec] = []
    public var gainDB: Double = 0
    public var mix: Double = 1
    /// Where the chain's state is kept (restored at start when present); nil: nothing restored.
    public var pluginState: String?
    /// Loudness of the main outputs, per programme (nil: not measured).
    public var loudness: LoudnessGroups?
    public init() {}

    /// Whether `other` can be applied without re-creating the JACK client (same name and ports).
    public func sameClient(as other: RackConfig) -> Bool {
        clientName == other.clientName && inputs == other.inputs && outputs == other.outputs
            && sideInputs == other.sideInputs && sideOutputs == other.sideOutputs && midiInputs == other.midiInputs && midiOutputs == other.midiOutputs
            && loudness == other.loudness
    }
}
