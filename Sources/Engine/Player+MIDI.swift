import Foundation
import Jack
import MIDIFile
import Realtime

/// The player's MIDI side as its RT state holds it: the MIDI output ports, this cycle's buffers, and the ring of
/// events the disk reader queues at playback-ring positions (so an event plays on the frame its position is
/// played, whatever the cycle, the start offset, a seek or a loop).
///
/// Threads: `fetch` and `PlayerState.emitMIDI` on the process thread (Realtime: safe); the ring's producer side
/// on the disk reader; `allocate`/`deallocate`/`reset` on the control thread while the callback does not run.
struct PlayerMIDI: BitwiseCopyable {
    let ports: PortArray
    var portCount: Int { ports.count }
    /// This cycle's buffer per port (nil: libjack gave none, as in the warm-up call).
    let buffers: UnsafeMutablePointer<JackMIDIBuffer?>
    let ring: MIDIEventRing
    let counters: AtomicCounterArray

    enum Counter: Int, CaseIterable {
        /// Events written to a port buffer.
        case sent
        /// Events a port buffer had no room for (libjack refused them), and events for a port the player lacks.
        case lost
        /// Events longer than a ring slot (long SysEx) that the reader left out.
        case tooLong
        /// Events discarded unplayed because they were cued before a seek or a new queue.
        case stale
    }

    static let ringCapacity = 16384

    static func allocate(ports: [JackPort]) -> PlayerMIDI {
        let b = UnsafeMutablePointer<JackMIDIBuffer?>.allocate(capacity: max(1, ports.count))
        b.initialize(repeating: nil, count: max(1, ports.count))
        return PlayerMIDI(ports: .allocate(ports), buffers: b, ring: .allocate(capacity: ringCapacity),
                          counters: .allocate(count: Counter.allCases.count))
    }

    func deallocate() {
        ports.deallocate()
        buffers.deallocate()
        ring.deallocate()
        counters.deallocate()
    }

    func reset() {
        ring.reset()
        for i in 0..<counters.count { counters.store(i, 0) }
    }

    func counter(_ c: Counter) -> Int { counters.load(c.rawValue) }

    /// Takes this cycle's port buffers and clears them (an output MIDI buffer must be cleared every cycle).
    /// Realtime: safe.
    @inline(__always)
    func fetch(_ frames: UInt32) {
        for i in 0..<portCount {
            let b = ports[i].midiBuffer(frames)
            b?.clear()
            buffers[i] = b
        }
    }
}

/// Whether a queue item is a Standard MIDI File: its first bytes are "MThd" (whatever its name).
public enum MIDIItem {
    public static func isMIDIFile(_ path: String) -> Bool {
        guard let h = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? h.close() }
        let head = (try? h.read(upToCount: 4)) ?? Data()
        return head == Data("MThd".utf8)
    }
}

/// A MIDI file being played by the disk reader: its events at frames of the server's rate, queued into the MIDI
/// ring at ring positions, and silence of the item's length written into the audio ring so that the item takes its
/// place on the timeline beside audio items (markers, loop, seek and the end of the queue work as for audio).
///
/// The item's length is its end-of-track time, and at least one frame past its last event (so the last event is
/// played even when it is the end).
///
/// Threads: the disk reader only.
final class MIDIItemSource {
    let path: String
    /// Events with their wire bytes, in time order.
    private let events: [(frame: Int, port: Int, bytes: [UInt8])]
    /// The item's length in frames.
    let frames: Int
    /// The next frame to write, and the index of the first event at or after it.
    private(set) var frame: Int
    private var next: Int
    /// Events left out because they do not fit a ring slot.
    private(set) var tooLong = 0

    init(path: String, sampleRate: Int, startFrame: Int) throws(MIDIFileError) {
        self.path = path
        let file = try MIDIFile.read(path: path)
        let timed = try file.timedEvents(sampleRate: sampleRate, includeMeta: true, path: path)
        let last = timed.last?.frame ?? 0
        var out: [(Int, Int, [UInt8])] = []
        var lastSent = -1
        for e in timed {
            guard let b = e.message.wireBytes, !b.isEmpty else { continue }
            out.append((e.frame, e.port, b))
            lastSent = e.frame
        }
        events = out
        let length = max(last, lastSent + 1, 1)
        let start = min(max(0, startFrame), length)
        frames = length
        frame = start
        next = out.firstIndex { $0.0 >= start } ?? out.count
    }

    var atEnd: Bool { frame >= frames }

    /// Queues the events of the next stretch (at most `maxFrames` frames) into the MIDI ring and writes that much
    /// silence into the audio ring. The stretch ends early where the MIDI ring is full (its event is queued by a
    /// later call). Returns the frames written (0: no room, or the end).
    func fill(_ state: PlayerState, maxFrames: Int) -> Int {
        let writer = state.ring.writer
        var n = min(maxFrames, writer.space, frames - frame)
        guard n > 0 else { return 0 }
        let base = state.ring.totalWritten - frame      // ring position of the item's frame 0
        let midi = state.midi
        while next < events.count && events[next].frame < frame + n {
            let e = events[next]
            let queued = e.bytes.withUnsafeBufferPointer { b -> Bool? in
                guard let event = MIDIRingEvent(position: base + e.frame, port: e.port, bytes: b.baseAddress!,
                                                count: b.count) else { return nil }
                return midi.ring.push(event)
            }
            switch queued {
            case .none:
                tooLong += 1
                midi.counters.add(PlayerMIDI.Counter.tooLong.rawValue, 1)
            case .some(false):
                n = e.frame - frame       // the ring is full: stop before this event
            case .some(true):
                break
            }
            if queued == false { break }
            next += 1
        }
        guard n > 0 else { return 0 }
        let r = writer.reserve(n)
        r.first.update(repeating: 0, count: r.firstFrames * state.channels)
        r.second.update(repeating: 0, count: r.secondFrames * state.channels)
        writer.commit(r.frames)
        frame += r.frames
        return r.frames
    }
}

extension Player {
    /// MIDI events the player has written to its MIDI ports, and those lost (a full port buffer, a port it lacks).
    public var midiSent: Int { state.pointee.midi.counter(.sent) }
    public var midiLost: Int { state.pointee.midi.counter(.lost) }
    /// Events left out of a file because they do not fit a ring slot (SysEx longer than 56 bytes).
    public var midiTooLong: Int { state.pointee.midi.counter(.tooLong) }
}
