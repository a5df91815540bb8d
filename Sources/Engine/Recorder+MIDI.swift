import Foundation
import Jack
import Logging
import MIDIFile
import Realtime
import Takes

/// The recorder's MIDI side as its RT state holds it: the MIDI input ports and the ring that carries each event,
/// at its stream position (the position of the audio input frame it arrived with), to the disk writer.
///
/// Threads: `RecorderState.captureMIDI` on the process thread (Realtime: safe); the ring's consumer side on the
/// disk writer (`MIDITakeWriter`); `allocate`/`deallocate`/`reset` on the control thread while neither runs.
struct RecorderMIDI: BitwiseCopyable {
    let ports: PortArray
    var portCount: Int { ports.count }
    let ring: MIDIEventRing
    let counters: AtomicCounterArray

    enum Counter: Int, CaseIterable {
        /// Events taken from the ports.
        case received
        /// Events lost because the ring was full (the writer fell behind).
        case overrun
        /// Events longer than a ring slot (SysEx over 56 bytes), not recorded.
        case tooLong
    }

    /// Events the ring holds: about 10 s of a dense stream (6000 events a second).
    static let ringCapacity = 65536

    /// `capacity`: events the ring holds (default: `ringCapacity` with ports, 1 without; a test driving the state
    /// without a server gives its own).
    static func allocate(ports: [JackPort], capacity: Int? = nil) -> RecorderMIDI {
        return RecorderMIDI(ports: .allocate(ports),
                            ring: .allocate(capacity: max(1, capacity ?? (ports.isEmpty ? 1 : ringCapacity))),
                            counters: .allocate(count: Counter.allCases.count))
    }

    func deallocate() {
        ports.deallocate()
        ring.deallocate()
        counters.deallocate()
    }

    func reset() {
        ring.reset()
        for i in 0..<counters.count { counters.store(i, 0) }
    }

    func counter(_ c: Counter) -> Int { counters.load(c.rawValue) }
}

/// Writes the MIDI of each take into a Standard MIDI File beside its audio (`<take>.mid`, the name of the take's
/// report with `.mid` for `.json`), each event at its frame from the take's first audio frame (the input position
/// the report calls `stream_start`), one tick per frame (see `MIDITimeBase`). Events of several ports are told apart
/// by MIDI port meta events. Flushed after every round of the writer (about 50 ms), so a killed process leaves a
/// file complete up to the last round; `TakeRecovery` completes one cut inside a flush.
///
/// Events while no take runs are kept for the pre-roll and then dropped. Writer thread only.
final class MIDITakeWriter {
    private let midi: RecorderMIDI
    private let sampleRate: Int
    private let prerollFrames: Int
    private let logger: Logger
    private var current: (take: ActiveTake, writer: MIDIFileWriter, inputStart: Int)?
    /// Events written into takes, and those that could not be (a file error).
    private(set) var written = 0
    private(set) var failed = 0
    private var failure: String?

    init(midi: RecorderMIDI, sampleRate: Int, prerollFrames: Int, logger: Logger) {
        self.midi = midi
        self.sampleRate = sampleRate
        self.prerollFrames = prerollFrames
        self.logger = logger
    }

    /// Moves events into the running take's file, up to the input the audio side has handled (`ringPosition`, the
    /// writer's stream position, less the chain latency the take compensates), and flushes. `take`: the writer's
    /// running take (nil: none). A take that ended is completed up to its last audio frame and closed.
    func pump(take: ActiveTake?, ringPosition: Int) {
        guard midi.portCount > 0 else { return }
        if let c = current, c.take !== take {
            // The take ended: its events are those before its last audio frame.
            drain(upTo: c.inputStart + c.take.framesWritten)
            close()
        }
        if current == nil, let t = take, t.resolved {
            let inputStart = t.report.streamStart
            let path = TakeReport.midiPath(sidecar: t.sidecar.path)
            do throws(MIDIFileError) {
                current = (t, try MIDIFileWriter(path: path, sampleRate: sampleRate, trackName: "tandem take \(t.number)"), inputStart)
            } catch {
                report(error)
            }
        }
        if let t = take, !t.resolved { return }      // its start may still move: keep its events
        let limit = ringPosition - (take?.compensation ?? 0)
        drain(upTo: current == nil ? limit - prerollFrames : limit)
        if let c = current {
            do throws(MIDIFileError) { try c.writer.flush() } catch { report(error) }
        }
    }

    /// Ends the running file (the writer is leaving).
    func finish(take: ActiveTake?) {
        pump(take: nil, ringPosition: Int.max / 2)
    }

    private func drain(upTo limit: Int) {
        while let e = midi.ring.peek(), Int(e.position) < limit {
            midi.ring.drop()
            guard let c = current else { continue }
            let frame = Int(e.position) - c.inputStart
            if frame >= 0 {
                c.writer.append(frame: frame, port: Int(e.port), bytes: e.bytes)
                written += 1
            }
        }
    }

    private func close() {
        guard let c = current else { return }
        current = nil
        do throws(MIDIFileError) { try c.writer.close() } catch { report(error) }
        logger.info("MIDI of the take written", metadata: ["file": "\(c.writer.path)", "events": "\(c.writer.events)"])
    }

    private func report(_ error: MIDIFileError) {
        failed += 1
        if failure == nil {
            failure = error.description
            logger.error("cannot write the take's MIDI file", metadata: ["error": "\(error)"])
        }
    }
}

extension Recorder {
    /// MIDI events taken from the MIDI ports, lost to a full ring, and too long to record.
    public var midiReceived: Int { state.pointee.midi.counter(.received) }
    public var midiOverruns: Int { state.pointee.midi.counter(.overrun) }
    public var midiTooLong: Int { state.pointee.midi.counter(.tooLong) }
}
