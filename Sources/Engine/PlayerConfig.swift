import Foundation
import Presets
import SoundFile

/// Everything that shapes one player.
public struct PlayerConfig: Sendable, Equatable {
    public var clientName = "tandem-play"
    /// Short names of the output ports, in channel order.
    public var ports: [String] = ["out_1", "out_2"]
    /// Files played back to back, without a gap. Standard MIDI Files among them play into the MIDI ports.
    public var queue: [String] = []
    /// Short names of the MIDI output ports. nil: one port, `midi_out`, when the queue holds a MIDI file (`.mid`,
    /// `.midi`, `.smf` or a file that starts as one), none otherwise. An event goes to the port its track's MIDI
    /// port meta event (FF 21) names, the first port when that is out of range.
    public var midiPorts: [String]?
    public var loop: LoopMode = .none
    /// Gain in dB applied to every channel (ramped over one period when changed).
    public var gainDB: Double = 0
    /// For each output port, the 1-based file channel it plays (0: silence). nil: a mono file plays on every port,
    /// otherwise file channel k plays on port k and extra file channels are left out.
    public var channelMap: [Int]?
    public var resampleQuality: ResampleQuality = .high
    /// Playback ring size in seconds (its memory scales with the channel count).
    public var ringSeconds: Double = 2
    /// Start playing as soon as the client is active (false: wait for `play`).
    public var startImmediately = true
    /// LV2 insert chain between the ring and the ports.
    public var plugins: [PluginSpec] = []
    /// Folder of plugin state saved by an earlier run, restored over the preset's values (nil: none).
    public var pluginState: String?

    /// Loudness of the outputs (after the chain and the gain), per programme (nil: not measured).
    public var loudness: LoudnessGroups?
    public init() {}

    public func problems() -> [String] {
        var out: [String] = []
        if let why = Limits.nameProblem(clientName, what: "the client name", bytes: Limits.clientNameBytes, allowSlash: true) { out.append(why) }
        if ports.isEmpty { out.append("a player needs at least one port") }
        if Set(ports).count != ports.count { out.append("port names must be unique") }
        for p in ports where p.isEmpty || p.contains(":") { out.append("bad port name '\(p)' (empty or contains ':')") }
        if ports.count > Limits.channels.upperBound { out.append("at most \(Limits.channels.upperBound) ports") }
        let midi = resolvedMIDIPorts
        if Set(midi + ports).count != midi.count + ports.count { out.append("MIDI port names must be unique and differ from the audio ports'") }
        for p in midi where p.isEmpty || p.contains(":") { out.append("bad MIDI port name '\(p)' (empty or contains ':')") }
        if midi.count > 16 { out.append("at most 16 MIDI ports") }
        if !Limits.contains(Limits.gainDB, gainDB) { out.append("gain must be \(Limits.describe(Limits.gainDB, unit: " dB"))") }
        if !Limits.contains(Limits.playerRingSeconds, ringSeconds) {
            out.append("ring must be \(Limits.describe(Limits.playerRingSeconds, unit: " seconds"))")
        }
        if let map = channelMap {
            if map.count != ports.count { out.append("channel map has \(map.count) entries for \(ports.count) ports") }
            if map.contains(where: { $0 < 0 || $0 > Limits.channels.upperBound }) {
                out.append("channel map entries must be 0 to \(Limits.channels.upperBound)")
            }
        }
        return out
    }

    /// The MIDI ports the player registers (see `midiPorts`).
    public var resolvedMIDIPorts: [String] {
        if let midiPorts { return midiPorts }
        let midiNames = queue.contains { q in
            let ext = (q as NSString).pathExtension.lowercased()
            return ["mid", "midi", "smf"].contains(ext) || MIDIItem.isMIDIFile(q)
        }
        return midiNames ? ["midi_out"] : []
    }

    /// The linear gain.
    public var gain: Float { Float(pow(10, gainDB / 20)) }
}

#if canImport(Glibc)
import Glibc
#endif
