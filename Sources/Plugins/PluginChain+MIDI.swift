import LV2Host
import Realtime

/// The MIDI a chain runs with in one cycle: an atom sequence of MIDI events (frames within the cycle) that every
/// plugin atom input taking MIDI receives, and an atom sequence the chain fills with the MIDI its plugins write.
/// Both buffers belong to the engine (a rack's RT state), hold `capacity` bytes each (header included), and stay
/// valid while the chain runs. Either may be nil: no MIDI in, or the plugins' MIDI goes nowhere.
public struct ChainMIDI: BitwiseCopyable {
    public var input: UnsafeRawPointer?
    public var inputCapacity: UInt32
    public var output: UnsafeMutableRawPointer?
    public var outputCapacity: UInt32
    /// The transport this cycle, told (as time:Position at frame 0) to the plugins whose atom inputs support it
    /// when `timeChanged`, and to a chain's plugins in its first cycle.
    public var time: ChainTime
    public var timeChanged: Bool

    public init(input: UnsafeRawPointer?, inputCapacity: UInt32, output: UnsafeMutableRawPointer?,
                outputCapacity: UInt32, time: ChainTime = ChainTime(), timeChanged: Bool = false) {
        self.input = input
        self.inputCapacity = inputCapacity
        self.output = output
        self.outputCapacity = outputCapacity
        self.time = time
        self.timeChanged = timeChanged
    }

    /// No MIDI in, none out.
    public static var none: ChainMIDI { ChainMIDI(input: nil, inputCapacity: 0, output: nil, outputCapacity: 0) }
}

/// The transport as plugins are told it (LV2 time:Position): frame, speed, and the musical position when known.
public struct ChainTime: BitwiseCopyable, Equatable {
    public var frame: Int64 = 0
    /// 1 rolling, 0 stopped.
    public var speed: Float = 0
    /// Whether bar, beat, meter and tempo are known (a timebase master gives them).
    public var hasBBT = false
    /// Bar from 0, beat within the bar from 0 (with its fraction).
    public var bar: Int64 = 0
    public var barBeat: Float = 0
    public var beatUnit: Int32 = 4
    public var beatsPerBar: Float = 4
    public var beatsPerMinute: Float = 120

    public init() {}

    /// Whether `next` is where this position leads after `frames` frames (the same speed, tempo and meter, the
    /// frame moved on by the speed): if not, the transport started, stopped, relocated or changed tempo.
    /// Realtime: safe.
    @inline(__always)
    public func continues(to next: ChainTime, after frames: Int) -> Bool {
        next.speed == speed && next.hasBBT == hasBBT && next.beatsPerMinute == beatsPerMinute
            && next.beatsPerBar == beatsPerBar && next.beatUnit == beatUnit
            && next.frame == frame + (speed != 0 ? Int64(frames) : 0)
    }
}

// The chain's MIDI path on the process thread: the engine's MIDI into each plugin's MIDI atom inputs (filtered by
// the stage's channels; all-notes-off once when the stage is bypassed, nothing while it stays bypassed), and the
// MIDI of the plugins' atom outputs merged, in frame order, into the engine's output sequence. A sequence that is
// full drops the event and counts it (`Count.midiDropped`). Realtime: safe (no allocation, no lock).
extension ChainState {
    /// Fills the instance's MIDI atom inputs (already reset to empty sequences). `entering`: the stage became
    /// bypassed this cycle. Realtime: safe.
    @inline(__always)
    static func feedMIDI(_ c: ChainState, _ s: StageState, _ inst: InstanceState, midi: ChainMIDI, bypassed: Bool,
                         entering: Bool) {
        var dropped: UInt32 = 0
        var delivered: UInt32 = 0
        if s.takesTime && (midi.timeChanged || c.timeSent.pointee == 0) {
            var p = LV2HostTimePosition(frame: midi.time.frame, speed: midi.time.speed, bar: midi.time.bar,
                                        bar_beat: midi.time.barBeat, beat_unit: midi.time.beatUnit,
                                        beats_per_bar: midi.time.beatsPerBar,
                                        beats_per_minute: midi.time.beatsPerMinute,
                                        has_bbt: midi.time.hasBBT ? 1 : 0)
            for a in 0..<inst.atomInputs where inst.atomFlags[a] & AtomFlag.time != 0 {
                if lv2host_seq_time_position(inst.atoms[a], inst.atomCapacity, c.timeURIDs, &p) != 0 { dropped &+= 1 }
            }
        }
        for a in 0..<inst.atomInputs where inst.atomFlags[a] & AtomFlag.midi != 0 {
            let buffer = inst.atoms[a]
            if entering {
                delivered &+= lv2host_seq_notes_off(buffer, inst.atomCapacity, c.midiURID, s.midiChannels, &dropped)
            }
            if !bypassed, let input = midi.input {
                delivered &+= lv2host_seq_copy_midi(buffer, inst.atomCapacity, input, midi.inputCapacity, c.midiURID,
                                                    s.midiChannels, &dropped)
            }
        }
        if dropped > 0 { _ = c.counts.add(Count.midiDropped.rawValue, Int(dropped)) }
        if delivered > 0 { _ = c.counts.add(Count.midiDelivered.rawValue, Int(delivered)) }
    }

    /// Merges the MIDI the instance wrote to its MIDI atom outputs into `midi.output`. Realtime: safe.
    @inline(__always)
    static func collectMIDI(_ c: ChainState, _ inst: InstanceState, midi: ChainMIDI) {
        guard let output = midi.output else { return }
        var dropped: UInt32 = 0
        for a in inst.atomInputs..<inst.atomCount where inst.atomFlags[a] & AtomFlag.midi != 0 {
            let buffer = inst.atoms[a]
            // A plugin that wrote nothing left the host's chunk there: only a sequence is read.
            guard buffer.load(fromByteOffset: 4, as: UInt32.self) == c.sequenceURID else { continue }
            _ = lv2host_seq_copy_midi(output, midi.outputCapacity, buffer, inst.atomCapacity, c.midiURID, 0xFFFF,
                                      &dropped)
        }
        if dropped > 0 { _ = c.counts.add(Count.midiDropped.rawValue, Int(dropped)) }
    }
}

extension PluginChain {
    /// MIDI events left out since the chain was built because a sequence was full. Any thread.
    public var midiDropped: Int { state.pointee.counts.load(ChainState.Count.midiDropped.rawValue) }
    /// MIDI events given to plugins since the chain was built. Any thread.
    public var midiDelivered: Int { state.pointee.counts.load(ChainState.Count.midiDelivered.rawValue) }
    /// Whether a plugin of the chain takes MIDI (an atom input supporting midi:MidiEvent).
    public var takesMIDI: Bool { stages.contains { s in s.info.ports.contains { $0.kind == .atom && $0.isInput && $0.supportsMIDI } } }
    /// Whether a plugin of the chain writes MIDI (an atom output supporting midi:MidiEvent).
    public var writesMIDI: Bool { stages.contains { s in s.info.ports.contains { $0.kind == .atom && !$0.isInput && $0.supportsMIDI } } }
}

/// Atom sequences of events in a buffer of `capacity` bytes (the sequence header included), for engines that fill a
/// chain's MIDI input and read its output (see `ChainMIDI`). Realtime: safe (every member).
public enum AtomSequence {
    /// One event of a sequence: its frame in the cycle, its type (URID), its body.
    public struct Event: BitwiseCopyable {
        public var frame: Int64
        public var type: UInt32
        public var size: UInt32
        public var body: UnsafePointer<UInt8>
    }

    /// Makes `seq` an empty sequence.
    @inline(__always)
    public static func clear(_ seq: UnsafeMutableRawPointer, sequenceURID: UInt32) {
        lv2host_seq_clear(seq, sequenceURID)
    }

    /// Inserts an event at its frame (after the events of that frame); false when it does not fit.
    @inline(__always)
    public static func insert(_ seq: UnsafeMutableRawPointer, capacity: UInt32, frame: Int64, type: UInt32,
                              bytes: UnsafeRawPointer, size: UInt32) -> Bool {
        lv2host_seq_insert(seq, capacity, frame, type, size, bytes) == 0
    }

    /// The event at `cursor` (0 for the first), advancing it; nil at the end (or at a malformed event).
    @inline(__always)
    public static func next(_ seq: UnsafeRawPointer, capacity: UInt32, cursor: inout UInt32) -> Event? {
        var frame: Int64 = 0
        var type: UInt32 = 0, size: UInt32 = 0
        var body: UnsafePointer<UInt8>?
        guard lv2host_seq_event(seq, capacity, &cursor, &frame, &type, &size, &body) != 0, let body else { return nil }
        return Event(frame: frame, type: type, size: size, body: body)
    }

    /// The URIDs of atom:Sequence and midi:MidiEvent in the process's plugin host.
    public static var sequenceURID: UInt32 { PluginHost.shared.urid(LV2.atomSequence) }
    public static var midiURID: UInt32 { PluginHost.shared.urid(LV2.midiEvent) }
}
