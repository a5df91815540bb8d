import Commands
import Presets
import Foundation
import Logging
import Loudness
import Realtime
import Synchronization
import Takes

/// The disk-writer thread of one recorder: the ring pump. It drains the capture ring in chunks, reads the callback's
/// `GapNote`s in stream order (overruns, skipped cycles, latency changes), keeps the pre-roll while no take runs, and
/// hands frames and gaps at stream positions to the take files (`TakeFiles`: names, chunks, BWF, sidecar).
///
/// It owns the ring's reader half and the note ring's consumer side. It blocks on disk, never touches JACK, and is
/// woken by the RT callback (enough frames, or a drop), by a command, or by a 50 ms time-out.
///
/// Threads: `send`, `drainEvents` and `status` from the control side; everything else on the writer thread (or on
/// a test's thread, which then calls `step` in its place).
// @unchecked Sendable: the control side uses only `commands` (a `Mailbox`) and `files.status`/`files.drainEvents` (a
// Mutex, an `Outbox`); every other var belongs to the writer thread (or a test calling `step`), started after `init`.
final class DiskWriter: @unchecked Sendable {
    enum Command: Sendable {
        /// Start a take with the input of stream position `at` (the pre-roll is taken before it).
        case start(at: Int, context: TakeContext)
        /// End the running take after the input of stream position `at` (exclusive): the take runs on past it by the
        /// chain's latency, so the chain's output for the last input frames is in it. `exact`: end at ring position
        /// `at`, with no run-on (when no more frames will come: the client is deactivated).
        case stop(at: Int, end: TakeEnd, detail: String?, exact: Bool = false)
        /// Plugins of the chain bypassed or settings ignored since the take started (a rebuilt chain).
        case pluginProblems([TakeReport.PluginProblem])
        /// An isolated rack feeding the take went down (`back` false) or came back, at the writer's stream position.
        case rackIncident(rack: String, what: String, channels: [String], back: Bool)
        /// Start a new chunk at the next frame.
        case rotate
        /// Use these file and take settings from the next take on (the running take is not touched).
        case configure(RecorderConfig)
        /// Finish (after the running take has ended) and leave the thread.
        case quit
        /// Watch the level (`config.trigger`) from the writer's position on and start a take per trigger; `context`
        /// describes them (refreshed with `.context`).
        case arm(TakeContext)
        /// Stop watching: a triggered take running ends at stream position `at`; nothing starts after it.
        case disarm(at: Int)
        /// A fresher description for the next triggered take (ports, connections, the anchor), and for clock
        /// rotation the anchor later boundaries follow (a clock step, drift).
        case context(TakeContext)
        /// A marker at stream position `at` (the frame the request arrived at).
        case mark(at: Int, label: String, source: String?)
        /// A control change applied at the cycle that began at stream position `at`, for the take's control log.
        case control(at: Int, TimedCommand)
        /// Changes a chain could not note (see `TakeFiles.controlLogDropped`).
        case controlDropped(Int)
        /// Apply the retention policy now (at start).
        case retention
    }

    typealias TakeStatus = TakeFiles.TakeStatus

    /// How long the thread sleeps at most between looks at the ring.
    static let idleWaitSeconds = 0.05
    /// Seconds the wall clock may disagree with a take's clock anchor before chunk boundaries follow it.
    static let reanchorTolerance = 0.02
    /// The most ring bytes one file write takes. A buffered `write` runs in the kernel without being preempted on a
    /// kernel that is not fully preemptible (PREEMPT_DYNAMIC in `none` or `voluntary` mode), 2–4 µs per KiB on the
    /// 2-vCPU VM this was measured on; a real-time thread woken on that CPU (JACK's server thread, a client's) waits
    /// until it ends. Handing over all a 50 ms wake-up found (~1.2 MB at 128 channels) made them wait 2–4 ms: xruns
    /// at period 64 (`perf record -e sched:*`; docs/notes/architecture-history.md, "Wide recorders"). 16 KiB pieces bound that to
    /// tens of µs; jack_capture writes 8 KiB at a time.
    static let writeBytes = 16 << 10

    private let state: RecorderState
    private let files: TakeFiles
    private let commands: Mailbox<Command>
    /// The takes' MIDI files (nothing to do without MIDI ports).
    private let midi: MIDITakeWriter

    // Writer-thread state.
    /// Stream position of the next ring frame (or gap) the pump handles.
    private(set) var streamPosition = 0
    private var quitRequested = false
    /// The chain latency the ring carries at `streamPosition` (from the callback's `GapNote.latency` notes).
    private var compensation = 0
    private let prerollFrames: Int
    /// Frames handed to the file per write at most (`writeBytes` of samples).
    private let writeFrames: Int
    /// Stream position of the gap already entered in the report (a gap may take several rounds to pass).
    private var recordedGap = -1
    /// Stream position of the last skipped-cycle note entered into the running take: a correction comes one cycle
    /// after it or not at all.
    private var skipEnteredAt: Int?

    // The level trigger (writer thread), while armed.
    private var trigger: LevelTrigger?
    private var triggerContext: TakeContext?
    /// Ring frames past the reader's head already fed to the trigger.
    private var triggerAhead = 0
    /// Starts (and ends) the trigger decided that wait for the running take to end.
    private var pendingStarts: [(start: LevelTrigger.Start, end: LevelTrigger.End?)] = []
    private let trigSection: TriggerSection?
    private let triggerRule: LevelTrigger.Rule?

    // Loudness (writer thread): between takes the live meters, fed every ring frame as it arrives; during a take its
    // own meters (`ActiveTake.loudness`, fed what is written) are the ones read.
    var live: ProgrammeMeters?
    /// Ring frames past the reader's head already fed to `live`.
    var meterAhead = 0
    /// Whether the readings last published were a take's (the live meters start anew after it).
    var liveAfterTake = false
    var lastPublished = 0.0
    let names: [String]
    let sampleRate: Int
    /// The readings as of the last publication (at most every 100 ms). Any thread.
    let loudness = Mutex<[ProgrammeLoudness]>([])

    init(config: RecorderConfig, state: RecorderState, sampleRate: Int, portNames: [String], logger: Logger,
         xruns: @escaping @Sendable () -> Int) {
        self.state = state
        writeFrames = max(1, DiskWriter.writeBytes / (MemoryLayout<Float>.stride * state.recordedChannels))
        prerollFrames = Limits.frames(seconds: config.prerollSeconds, rate: Double(sampleRate)) ?? 0
        trigSection = config.trigger
        triggerRule = config.trigger.map { g in
            var rule = LevelTrigger.Rule(g, sampleRate: sampleRate, prerollSeconds: config.prerollSeconds)
            // The dry channels (recorded after the processed ones) are never watched.
            if rule.channels == nil { rule.channels = Array(0..<config.ports.count) }
            return rule
        }
        files = TakeFiles(config: config, channels: state.recordedChannels, sampleRate: sampleRate,
                          portNames: portNames, logger: logger, xruns: xruns)
        commands = Mailbox(wakeup: state.wakeup)
        midi = MIDITakeWriter(midi: state.midi, sampleRate: sampleRate, prerollFrames: prerollFrames, logger: logger)
        names = config.ports
        self.sampleRate = sampleRate
        live = DiskWriter.meters(config.loudness, channels: state.recordedChannels, names: names, sampleRate: sampleRate)
    }

    // MARK: Control side

    /// Queues a command and wakes the writer. Control side.
    func send(_ command: Command) { commands.send(command) }

    /// Events since the last call. Control side.
    func drainEvents() -> [RecorderEvent] { files.drainEvents() }

    /// The running take, if any. Any thread.
    var status: TakeStatus? { files.status }

    // MARK: Writer thread

    /// The thread body. Returns after `quit` once no take is running.
    func run() {
        while true {
            state.wakeup.wait(seconds: DiskWriter.idleWaitSeconds)
            state.wakeup.drain()
            if !step() { break }
        }
        finishForQuit()
    }

    /// One round: carries out the commands sent, then moves what the ring holds. Returns false once `quit` was asked
    /// and no take runs. Writer thread (or a test driving the writer without one).
    @discardableResult
    func step() -> Bool {
        let batch = commands.take()
        for command in batch { handle(command) }
        commands.handled(batch.count)
        pump()
        midi.pump(take: files.take, ringPosition: streamPosition)
        publishLoudness(take: files.take?.loudness)
        return !(quitRequested && files.take == nil)
    }

    /// Ends a take still running when the thread leaves.
    func finishForQuit() {
        if let t = files.take { files.finish(t, end: .stopped, detail: "writer stopped") }
        midi.finish(take: files.take)
    }

    private func handle(_ command: Command) {
        switch command {
        case .start(let at, let context):
            if let t = files.take { files.finish(t, end: .stopped, detail: "a new take was started") }
            // The pre-roll: as far back as requested, but no earlier than what the ring still holds.
            let t = files.begin(start: max(streamPosition, at - prerollFrames), at: at, context: context)
            resolveStart(t)
            files.open(t)
        case .stop(let at, let end, let detail, let exact):
            if let t = files.take {
                let stopAt = min(t.end ?? Int.max, exact ? at : at + (t.resolved ? t.compensation : compensation))
                t.end = stopAt
                t.endReason = end
                t.endDetail = detail
                if t.triggerStart != nil, var trig = trigger {
                    _ = trig.stop(at: stopAt)
                    trigger = trig
                    pendingStarts.removeAll()
                }
                if stopAt <= streamPosition || stopAt <= t.start { files.finish(t, end: end, detail: detail) }
            }
        case .pluginProblems(let list):
            files.pluginProblems(list, at: streamPosition)
        case .rackIncident(let rack, let what, let channels, let back):
            files.rackIncident(rack: rack, what: what, channels: channels, back: back, at: streamPosition)
        case .rotate:
            if let t = files.take, t.framesWritten > 0 { files.rotate(t) }
        case .configure(let c):
            files.configure(c)
            if c.loudness?.groups != live?.groups {
                live = DiskWriter.meters(c.loudness, channels: state.recordedChannels, names: c.ports,
                                         sampleRate: sampleRate)
                meterAhead = 0
            }
        case .quit:
            quitRequested = true
        case .arm(let context):
            guard let rule = triggerRule else { break }
            triggerContext = context
            if trigger == nil {
                trigger = LevelTrigger(rule: rule, channels: state.recordedChannels, origin: streamPosition)
                triggerAhead = 0
            }
        case .disarm(let at):
            if let t = files.take, t.triggerStart != nil {
                let stopAt = max(at, streamPosition)
                t.end = min(t.end ?? Int.max, stopAt)
                t.endReason = .stopped
                t.endDetail = "the schedule's window ended"
                if stopAt <= streamPosition { files.finish(t, end: .stopped, detail: t.endDetail) }
            }
            trigger = nil
            triggerAhead = 0
            pendingStarts.removeAll()
        case .context(let context):
            if trigger != nil { triggerContext = context }
            // Clock-aligned boundaries follow the clock only when it has moved away from the take's anchor by more
            // than `reanchorTolerance` (a step, or drift): the jitter of reading the clock never moves a boundary.
            if let t = files.take, var clock = t.clock {
                let predicted = clock.time(ofFrame: context.anchor.streamPosition).timeIntervalSince(context.anchor.wallClock)
                if abs(predicted) / context.anchor.clockScale > DiskWriter.reanchorTolerance {
                    clock.reanchor(frame: context.anchor.streamPosition, time: context.anchor.wallClock)
                    t.clock = clock
                    if let b = t.boundary, clock.nextBoundary(after: streamPosition).frame != b.frame {
                        t.boundary = nil
                    }
                }
            }
        case .mark(let at, let label, let source):
            files.mark(at: at, label: label, source: source)
        case .control(let at, let entry):
            files.logControl(entry, at: at)
        case .controlDropped(let n):
            files.controlLogDropped(n)
        case .retention:
            files.applyRetention()
        }
    }

    /// Feeds the trigger every ring frame it has not seen, up to the next note (a gap is fed as silence when the
    /// pump reaches it), and acts on its decisions.
    private func feedTrigger() {
        guard trigger != nil else { return }
        let reader = state.ring.reader
        let channels = state.recordedChannels
        while var trig = trigger {
            var limit = reader.available
            switch state.drops.peek() {
            case .note(let n): limit = min(limit, triggerAhead + max(0, n.at - trig.position))
            case .unknown: limit = triggerAhead
            case .empty: break
            }
            let n = min(limit - triggerAhead, TakeFiles.chunkFrames)
            guard n > 0 else { return }
            let r = reader.peek(n, offset: triggerAhead)
            var events = trig.feed(UnsafeBufferPointer(start: r.first, count: r.firstFrames * channels), frames: r.firstFrames)
            if r.secondFrames > 0 {
                events += trig.feed(UnsafeBufferPointer(start: r.second, count: r.secondFrames * channels),
                                    frames: r.secondFrames)
            }
            trigger = trig
            triggerAhead += n
            triggerDecided(events)
        }
    }

    private func triggerDecided(_ events: [LevelTrigger.Event]) {
        for e in events {
            switch e {
            case .start(let s):
                pendingStarts.append((s, nil))
            case .end(let x):
                if let i = pendingStarts.indices.last, pendingStarts[i].end == nil {
                    pendingStarts[i].end = x
                } else if let t = files.take, t.triggerStart != nil {
                    files.triggerEnded(t, x)
                    if t.end.map({ $0 <= streamPosition }) == true { files.finish(t, end: .trigger, detail: nil) }
                }
            }
        }
        beginPendingTake()
    }

    /// Starts the oldest take the trigger decided, once no take runs.
    private func beginPendingTake() {
        guard files.take == nil, !pendingStarts.isEmpty, var context = triggerContext else { return }
        let (s, end) = pendingStarts.removeFirst()
        context.xrunsAtStart = files.xrunCount
        let first = max(s.startFrame, streamPosition)
        let t = files.beginTriggered(s, first: first, compensation: compensation, context: context)
        if let end { files.triggerEnded(t, end) }
        files.open(t)
    }

    /// Ring frames the reader consumed: the trigger's and the meters' leads shrink with them.
    private func consumed(_ n: Int) {
        triggerAhead = max(0, triggerAhead - n)
        meterAhead = max(0, meterAhead - n)
    }

    /// Moves every frame the ring holds (and every announced gap) into the running take, or past it.
    private func pump() {
        let reader = state.ring.reader
        while true {
            feedTrigger()
            feedLiveMeters(reader, taking: files.take != nil)
            beginPendingTake()
            var next: GapNote?
            switch state.drops.peek() {
            case .empty: next = nil
            case .unknown:
                state.drops.pop()   // a kind this writer does not know: skipped, never taken for a drop
                continue
            case .note(let note): next = note
            }
            if let note = next, note.at <= streamPosition {
                if case .overrun(let at, let frames) = note, var trig = trigger, trig.position == at {
                    // The gap is silence in the stream: so it is for the trigger.
                    let events = trig.feedSilence(frames: frames)
                    trigger = trig
                    triggerDecided(events)
                }
                if handle(note) { state.drops.pop() }
                continue
            }
            var available = reader.available
            if let note = next { available = min(available, note.at - streamPosition) }
            if available <= 0 { break }
            if files.take == nil {
                // Idle: keep the pre-roll, drop what is older.
                var discard = min(available, reader.available - prerollFrames)
                if let trig = trigger, let rule = triggerRule {
                    // Armed: keep what a start decided later may still reach back to.
                    discard = min(discard, trig.position - rule.framesToKeep - streamPosition)
                }
                if discard <= 0 { break }
                reader.consume(discard)
                consumed(discard)
                streamPosition += discard
                continue
            }
            if advance(min(available, writeFrames), fromRing: true) == 0 { break }
        }
    }

    /// Acts on a note that has come due (its position reached). Returns whether it is done with (else the rest of an
    /// overrun waits for the next round).
    private func handle(_ note: GapNote) -> Bool {
        switch note {
        case .latency(_, let frames):
            files.latencyChanged(at: streamPosition, from: compensation, to: frames)
            compensation = frames
        case .skippedCycles(let at, let frames):
            if frames > 0 {
                skipEnteredAt = files.noteGap(at: streamPosition, frames: frames, cause: .missedCycles, silence: false)
                    ? at : nil
            } else if let entered = skipEnteredAt, at - entered <= Period.maxFrames {
                files.correctSkip(by: -frames)
                skipEnteredAt = nil
            }
        case .repeatedCycle(_, let frames):
            files.noteGap(at: streamPosition, frames: frames, cause: .repeatedCycle, silence: false)
            skipEnteredAt = nil
        case .overrun(let at, let frames):
            let remaining = at + frames - streamPosition
            guard remaining > 0 else { return true }
            // Entered once, from where it meets the take (a gap may begin before the take starts).
            if recordedGap != at
                && files.noteGap(at: streamPosition, frames: remaining, cause: .overrun, silence: true) {
                recordedGap = at
            }
            // Not all of the gap fits before a take boundary: the rest waits for the next round.
            return advance(remaining, fromRing: false) >= remaining
        }
        return true
    }

    /// Once the writer has reached the take's first input frame it knows the latency the ring carries there: the
    /// take then starts that many frames later in the ring, where the chain's output for that input is (and the
    /// dry input, delayed by the callback to match). Its report and its end follow.
    ///
    /// The latency is known at the current position once the callback has run past it (it announces a change
    /// before the frames it applies to; the counter is stored with release after the note) and no note up to the
    /// current position waits unread (the pump reads them first). `force`: now (inside a gap, where no latency note
    /// can wait before the gap's own).
    private func resolveStart(_ t: ActiveTake, force: Bool = false) {
        guard !t.resolved, streamPosition >= t.start else { return }
        if !force {
            guard state.counter(.streamFrames) > streamPosition else { return }
            switch state.drops.peek() {
            case .note(let n) where n.at <= streamPosition: return
            case .unknown: return
            default: break
            }
        }
        files.resolve(t, input: max(t.start, streamPosition - compensation), compensation: compensation)
    }

    /// Handles up to `count` frames at the current position: ring frames (or silence for a gap) go into the take,
    /// or are skipped when outside it. Stops at take and chunk boundaries. Returns frames handled.
    private func advance(_ count: Int, fromRing: Bool) -> Int {
        if let t = files.take { resolveStart(t, force: !fromRing) }
        guard let t = files.take else { return skip(count, fromRing: fromRing) }
        if !t.resolved && streamPosition >= t.start { return 0 }    // back when the latency here is known
        if streamPosition < t.start { return skip(min(count, t.start - streamPosition), fromRing: fromRing) }
        let n = files.room(t, at: streamPosition, wanted: count)
        if n > 0 {
            files.append(t, fromRing ? state.ring.reader.peek(n) : nil, frames: n)
            if fromRing {
                state.ring.reader.consume(n)
                consumed(n)
            }
            streamPosition += n
            t.framesWritten += n
        }
        let failed = t.failed != nil
        files.afterAppend(t, at: streamPosition)
        return failed ? max(n, 1) : n
    }

    /// Passes `n` frames outside any take.
    private func skip(_ n: Int, fromRing: Bool) -> Int {
        if fromRing {
            state.ring.reader.consume(n)
            consumed(n)
        }
        streamPosition += n
        return n
    }
}
