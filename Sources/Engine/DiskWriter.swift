import Presets
import Foundation
import Jack
import Logging
import Realtime
import SoundFile
import Synchronization

/// The disk-writer thread of one recorder: drains the capture ring in chunks and writes takes with libsndfile.
///
/// It owns the ring's reader half and the drop ring's consumer side. It blocks on disk, never touches JACK, and is
/// woken by the RT callback (enough frames, or a drop) or by a 50 ms time-out. While no take is running it keeps the
/// last `preroll` frames in the ring and discards older ones.
///
/// Threads: `send` and `drainEvents` and `status` from the control side; everything else on the writer thread.
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
        /// Start a new chunk at the next frame.
        case rotate
        /// Use these file and take settings from the next take on (the running take is not touched).
        case configure(RecorderConfig)
        /// Finish (after the running take has ended) and leave the thread.
        case quit
    }

    /// A snapshot of the running take for status displays.
    struct TakeStatus: Sendable {
        var take: Int
        var frames: Int
        var files: [String]
        var bytes: Int
    }

    private var config: RecorderConfig
    private let state: RecorderState
    private let sampleRate: Int
    private let portNames: [String]
    private let logger: Logger
    private let xruns: @Sendable () -> Int
    private let commands = Mutex<[Command]>([])
    private let events = Mutex<[RecorderEvent]>([])
    private let published = Mutex<TakeStatus?>(nil)

    // Writer-thread state.
    private var streamPosition = 0
    private var take: ActiveTake?
    private var nextTakeNumber = 1
    private var quitRequested = false
    private var pendingStop: (at: Int, end: TakeEnd, detail: String?)?
    /// The chain latency the ring carries at `streamPosition` (from the callback's `GapNote.latency` notes).
    private var compensation = 0
    private let prerollFrames: Int
    private var rotateFrames: Int?
    private let silence: UnsafeMutablePointer<Float>
    private let stemScratch: UnsafeMutablePointer<Float>
    private static let chunkFrames = 8192
    /// fsync the take's files after this many frames: what a power loss can take is bounded by this (plus the ring).
    private let syncFrames: Int

    init(config: RecorderConfig, state: RecorderState, sampleRate: Int, portNames: [String], logger: Logger,
         xruns: @escaping @Sendable () -> Int) {
        self.config = config
        self.state = state
        self.sampleRate = sampleRate
        self.portNames = portNames
        self.logger = logger
        self.xruns = xruns
        prerollFrames = Int(config.prerollSeconds * Double(sampleRate))
        nextTakeNumber = max(1, config.firstTake)
        syncFrames = sampleRate
        rotateFrames = DiskWriter.rotationFrames(config, channels: state.recordedChannels, sampleRate: sampleRate)
        silence = .allocate(capacity: DiskWriter.chunkFrames * state.recordedChannels)
        silence.initialize(repeating: 0, count: DiskWriter.chunkFrames * state.recordedChannels)
        stemScratch = .allocate(capacity: DiskWriter.chunkFrames)
        stemScratch.initialize(repeating: 0, count: DiskWriter.chunkFrames)
    }

    deinit {
        silence.deallocate()
        stemScratch.deallocate()
    }

    /// Chunk length in frames from the rotation settings (by time, or by size for uncompressed formats).
    static func rotationFrames(_ config: RecorderConfig, channels: Int, sampleRate: Int) -> Int? {
        var rotate: Int?
        if let s = config.rotateSeconds { rotate = max(1, Int((s * Double(sampleRate)).rounded())) }
        if let b = config.rotateBytes, let width = DiskWriter.bytesPerSample(config.format) {
            let perFile = width * (config.stems ? 1 : channels)
            let byBytes = max(1, (b - 4096) / perFile)   // leave room for the header
            rotate = min(rotate ?? byBytes, byBytes)
        }
        return rotate
    }

    /// Bytes per sample of uncompressed formats (nil for encoded ones, rotated by observed file size).
    static func bytesPerSample(_ f: AudioFormat) -> Int? {
        guard f.container == .wav || f.container == .rf64 else { return nil }
        switch f.sample {
        case .float32: return 4
        case .int24: return 3
        case .int16: return 2
        }
    }

    // MARK: Control side

    /// Queues a command and wakes the writer. Control side.
    func send(_ command: Command) {
        commands.withLock { $0.append(command) }
        state.wakeup.post()
    }

    /// Events since the last call. Control side.
    func drainEvents() -> [RecorderEvent] {
        events.withLock { e in
            defer { e.removeAll() }
            return e
        }
    }

    /// The running take, if any. Any thread.
    var status: TakeStatus? { published.withLock { $0 } }

    // MARK: Writer thread

    /// The thread body. Returns after `quit` once no take is running.
    func run() {
        while true {
            state.wakeup.wait(seconds: 0.05)
            state.wakeup.drain()
            for command in commands.withLock({ c in defer { c.removeAll() }; return c }) { handle(command) }
            pump()
            if quitRequested && take == nil && pendingStop == nil { break }
        }
        if let t = take { finish(t, end: .stopped, detail: "writer stopped") }
    }

    private func handle(_ command: Command) {
        switch command {
        case .start(let at, let context):
            if let t = take { finish(t, end: .stopped, detail: "a new take was started") }
            begin(at: at, context: context)
        case .stop(let at, let end, let detail, let exact):
            if let t = take {
                t.end = min(t.end ?? Int.max, exact ? at : at + (t.resolved ? t.compensation : compensation))
                t.endReason = end
                t.endDetail = detail
                if t.end! <= streamPosition || t.end! <= t.start { finish(t, end: end, detail: detail) }
            }
        case .pluginProblems(let list):
            if let t = take {
                let at = max(0, streamPosition - t.start)
                t.report.pluginProblems = (t.report.pluginProblems ?? []) + list.map { p in
                    var p = p
                    p.atFrame = at
                    return p
                }
                writeSidecar(t)
            }
        case .rotate:
            if let t = take, t.framesWritten > 0 { rotate(t) }
        case .configure(let c):
            pendingConfig = c
            if take == nil { applyPendingConfig() }
        case .quit:
            quitRequested = true
        }
    }

    /// Moves every frame the ring holds (and every announced gap) into the running take, or past it.
    private func pump() {
        let reader = state.ring.reader
        while true {
            let message = state.drops.peek()
            let note = message.flatMap(GapNote.init)
            if message != nil && note == nil {
                _ = state.drops.pop()   // a kind this writer does not know: skipped, never taken for a drop
                continue
            }
            if case .latency(let at, let frames)? = note, at <= streamPosition {
                latencyChanged(to: frames)
                _ = state.drops.pop()
                continue
            }
            if case .skippedCycles(let at, let frames)? = note, at <= streamPosition {
                if frames > 0 {
                    skipEnteredAt = noteGap(frames: frames, cause: .missedCycles, silence: false) ? at : nil
                } else if let entered = skipEnteredAt, at - entered <= Period.maxFrames {
                    correctSkip(by: -frames)
                    skipEnteredAt = nil
                }
                _ = state.drops.pop()
                continue
            }
            if case .overrun(let at, let frames)? = note, at <= streamPosition {
                let remaining = at + frames - streamPosition
                if remaining > 0 {
                    // Entered once, from where it meets the take (a gap may begin before the take starts).
                    if recordedGap != at && noteGap(frames: remaining, cause: .overrun, silence: true) {
                        recordedGap = at
                    }
                    let done = advance(remaining, fromRing: false)
                    if done < remaining {
                        // Not all of the gap fitted before a take boundary: keep the rest for the next round.
                        continue
                    }
                }
                _ = state.drops.pop()
                continue
            }
            var available = reader.available
            if let note { available = min(available, note.at - streamPosition) }
            if available <= 0 { break }
            if take == nil {
                // Idle: keep the pre-roll, drop what is older.
                let discard = min(available, reader.available - prerollFrames)
                if discard <= 0 { break }
                reader.consume(discard)
                streamPosition += discard
                continue
            }
            if advance(available, fromRing: true) == 0 { break }
        }
    }

    /// The ring carries a new chain latency from the current position on. Inside a take it is entered in the
    /// report: processed and dry channels stay aligned, while the take's timeline moves against the input there.
    private func latencyChanged(to frames: Int) {
        defer { compensation = frames }
        guard let t = take, t.resolved, frames != compensation, streamPosition >= t.start,
              streamPosition < (t.end ?? Int.max) else { return }
        var c = t.report.latencyCompensation ?? .init(frames: t.compensation, method: TakeReport.LatencyCompensation.how)
        c.changes = (c.changes ?? []) + [.init(atFrame: streamPosition - t.start, frames: frames)]
        t.report.latencyCompensation = c
        logger.warning("plugin latency changed during a take", metadata: [
            "take": "\(t.number)", "from": "\(compensation)", "to": "\(frames)", "frame": "\(streamPosition - t.start)"])
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
            if let note = state.drops.peek(), Int(note.a) <= streamPosition { return }
        }
        t.resolved = true
        t.compensation = compensation
        let input = max(t.start, streamPosition - compensation)
        t.start = input + compensation
        t.report.streamStart = input
        t.report.startFrameTime = t.context.anchor.frameTime(at: input)
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        t.report.startedAt = iso.string(from: t.context.anchor.wallClock(at: input))
        if t.context.plugins != nil || compensation > 0 {
            t.report.latencyCompensation = .init(frames: compensation, method: TakeReport.LatencyCompensation.how)
        }
        if let m = config.maxDurationSeconds {
            t.end = min(t.end ?? Int.max, t.start + Int((m * Double(sampleRate)).rounded()))
            if t.endReason == nil { t.endReason = .durationReached }
        }
        writeSidecar(t)
    }

    /// Stream position of the gap already entered in the report (a gap may take several rounds to pass).
    private var recordedGap = -1

    /// Enters a gap at the current position into the running take's report: `silence` true for frames written as
    /// silence (only the part inside the take counts), false for skipped cycles that take no room in the file (the
    /// server's time jumps by `frames` here). Returns whether anything was entered.
    @discardableResult
    private func noteGap(frames: Int, cause: TakeReport.GapCause, silence: Bool) -> Bool {
        guard let t = take, streamPosition >= t.start, streamPosition < (t.end ?? Int.max) else { return false }
        let counted = silence ? min(frames, (t.end ?? Int.max) - streamPosition) : frames
        t.report.drops.append(.init(atFrame: streamPosition - t.start, frames: counted, cause: cause,
                                    silence: silence ? nil : false))
        switch cause {
        case .overrun: t.report.droppedFrames += counted
        case .missedCycles: t.report.missedFrames = (t.report.missedFrames ?? 0) + counted
        }
        return true
    }

    /// Stream position of the last skipped-cycle note entered into the running take: a correction comes one cycle
    /// after it or not at all.
    private var skipEnteredAt: Int?

    /// A skipped-cycle jump read one cycle early (see `RecorderState.cycle`) comes back as a step back in the next
    /// cycle: taken off the take's last skipped-cycle note (removed when nothing is left of it).
    private func correctSkip(by frames: Int) {
        guard let t = take, let i = t.report.drops.lastIndex(where: { $0.cause == .missedCycles }) else { return }
        let taken = min(frames, t.report.drops[i].frames)
        t.report.drops[i].frames -= taken
        t.report.missedFrames = (t.report.missedFrames ?? 0) - taken
        if t.report.drops[i].frames == 0 { t.report.drops.remove(at: i) }
    }

    /// Handles up to `count` frames at the current position: ring frames (or silence for a gap) go into the take,
    /// or are skipped when outside it. Stops at take and chunk boundaries. Returns frames handled.
    private func advance(_ count: Int, fromRing: Bool) -> Int {
        if let t = take { resolveStart(t, force: !fromRing) }
        guard let t = take else {
            if fromRing { state.ring.reader.consume(count) }
            streamPosition += count
            return count
        }
        if !t.resolved && streamPosition >= t.start { return 0 }    // back when the latency here is known
        if streamPosition < t.start {
            let n = min(count, t.start - streamPosition)
            if fromRing { state.ring.reader.consume(n) }
            streamPosition += n
            return n
        }
        var n = count
        if let end = t.end { n = min(n, end - streamPosition) }
        if let rotateFrames { n = min(n, rotateFrames - (t.framesWritten - t.chunkStart)) }
        n = max(0, n)
        if n > 0 {
            if t.writers.isEmpty { openChunk(t) }
            if !t.writers.isEmpty {
                if fromRing {
                    injectStall(t)
                    let r = state.ring.reader.peek(n)
                    write(t, r.first, frames: r.firstFrames)
                    if t.failed == nil { write(t, r.second, frames: r.secondFrames) }
                } else {
                    var left = n
                    while left > 0 && t.failed == nil {
                        let k = min(left, DiskWriter.chunkFrames)
                        write(t, silence, frames: k)
                        left -= k
                    }
                }
            }
            if fromRing { state.ring.reader.consume(n) }
            streamPosition += n
            t.framesWritten += n
        }
        if let failure = t.failed {
            finish(t, end: .diskError, detail: failure)
            return max(n, 1)
        }
        publish(t)
        if let end = t.end, streamPosition >= end {
            finish(t, end: t.endReason ?? .stopped, detail: t.endDetail)
        } else if let rotateFrames, t.framesWritten - t.chunkStart >= rotateFrames {
            rotate(t)
        } else if let bytes = config.rotateBytes, rotateFrames == nil, t.fileBytes() >= bytes {
            rotate(t)
        } else if syncFrames > 0 && t.framesWritten - t.lastSync >= syncFrames {
            for w in t.writers { w.flush() }
            t.lastSync = t.framesWritten
        }
        return n
    }

    /// The test-only slow-disk fault: blocks this thread once, as a stalled disk would.
    private func injectStall(_ t: ActiveTake) {
        guard let after = config.faults.stallAfterSeconds, !t.stalled,
              let at = Limits.frames(seconds: after, rate: Double(sampleRate)), t.framesWritten >= at else { return }
        t.stalled = true
        logger.warning("fault injection: stalling the disk writer", metadata: ["seconds": "\(config.faults.stallSeconds)"])
        let stall = config.faults.stallSeconds
        usleep(UInt32(stall.isFinite ? min(max(0, stall), 60) * 1_000_000 : 0))
    }

    /// Writes interleaved frames to the chunk's file(s); a failure is kept in `t.failed`.
    private func write(_ t: ActiveTake, _ samples: UnsafeMutablePointer<Float>, frames: Int) {
        guard frames > 0 else { return }
        do {
            if config.stems {
                let channels = state.recordedChannels
                var done = 0
                while done < frames {
                    let k = min(frames - done, DiskWriter.chunkFrames)
                    for (c, w) in t.writers.enumerated() {
                        for i in 0..<k { stemScratch[i] = samples[(done + i) * channels + c] }
                        try w.write(stemScratch, frames: k)
                    }
                    done += k
                }
            } else {
                try t.writers[0].write(samples, frames: frames)
            }
        } catch {
            t.failed = error.description
        }
    }

    // MARK: Takes and chunks

    private var pendingConfig: RecorderConfig?

    private func applyPendingConfig() {
        guard let c = pendingConfig else { return }
        pendingConfig = nil
        config = c
        rotateFrames = DiskWriter.rotationFrames(c, channels: state.recordedChannels, sampleRate: sampleRate)
    }

    private func begin(at: Int, context: TakeContext) {
        applyPendingConfig()
        // The pre-roll: as far back as requested, but no earlier than what the ring still holds.
        let start = max(streamPosition, at - prerollFrames)
        let date = context.anchor.wallClock(at: start)
        var number = nextTakeNumber
        while takeFilesExist(number, date: date) { number += 1 }
        nextTakeNumber = number + 1
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let report = TakeReport(
            tandemVersion: TandemVersion.string, session: config.session, take: number, sampleRate: sampleRate,
            channels: state.recordedChannels, format: config.format.container.rawValue,
            sampleFormat: config.format.sample.rawValue, stems: config.stems, startedAt: iso.string(from: date),
            startFrameTime: context.anchor.frameTime(at: start), streamStart: start, prerollFrames: at - start,
            ports: context.ports, chunks: [], frames: 0, xruns: 0, droppedFrames: 0, drops: [], missedFrames: 0,
            ended: .recording,
            endDetail: nil, notes: context.notes.isEmpty ? nil : context.notes, playback: context.playback,
            pid: getpid(), host: ProcessInfo.processInfo.hostName, plugins: context.plugins,
            pluginLatencyFrames: context.pluginLatency,
            channelNames: config.recordDry ? config.recordedChannelNames : nil)
        let t = ActiveTake(number: number, start: start, date: date, context: context, report: report,
                           sidecar: SidecarFile(path: path(take: number, date: date, channel: nil, chunk: nil,
                                                           ext: "json")))
        take = t
        if config.maxDurationSeconds != nil { t.endReason = .durationReached }
        if let p = context.pluginProblems, !p.isEmpty { t.report.pluginProblems = p }
        resolveStart(t)
        openChunk(t)
        if let failure = t.failed {
            finish(t, end: .diskError, detail: failure)
            return
        }
        emit(.takeStarted(take: number, files: t.writers.map(\.path)))
        logger.info("take started", metadata: ["take": "\(number)", "files": "\(t.writers.map(\.path))"])
    }

    private func takeFilesExist(_ number: Int, date: Date) -> Bool {
        let fm = FileManager.default
        if fm.fileExists(atPath: path(take: number, date: date, channel: nil, chunk: nil, ext: "json")) { return true }
        let chunk: Int? = (rotateFrames != nil || config.rotateBytes != nil) ? 1 : nil
        let channels: [String?] = config.stems ? portNames.map { $0 } : [nil]
        return channels.contains { fm.fileExists(atPath: path(take: number, date: date, channel: $0, chunk: chunk,
                                                               ext: config.format.container.fileExtension)) }
    }

    private func path(take: Int, date: Date, channel: String?, chunk: Int?, ext: String) -> String {
        let name = FileNameTemplate(config.template).render(
            .init(session: config.session, take: take, date: date, channel: channel, chunk: chunk), fileExtension: ext)
        return (config.directory as NSString).appendingPathComponent(name)
    }

    private func openChunk(_ t: ActiveTake) {
        let rotating = rotateFrames != nil || config.rotateBytes != nil
        let (previousIndex, previousStart) = (t.chunkIndex, t.chunkStart)
        t.chunkIndex += 1
        t.chunkStart = t.framesWritten
        let chunk: Int? = rotating ? t.chunkIndex : nil
        let channels: [String?] = config.stems ? portNames.map { $0 } : [nil]
        let position = t.start - t.compensation + t.framesWritten
        let date = t.context.anchor.wallClock(at: position)
        let midnight = Calendar.current.startOfDay(for: date)
        let dayFormatter = DateFormatter()
        dayFormatter.locale = Locale(identifier: "en_US_POSIX")
        dayFormatter.dateFormat = "yyyy-MM-dd"
        let timeFormatter = DateFormatter()
        timeFormatter.locale = Locale(identifier: "en_US_POSIX")
        timeFormatter.dateFormat = "HH:mm:ss"
        let bext = BroadcastInfo(timeReference: UInt64(max(0, date.timeIntervalSince(midnight) * Double(sampleRate))),
                                 description: "\(config.session) take \(t.number)", originator: "Tandem",
                                 originationDate: dayFormatter.string(from: date),
                                 originationTime: timeFormatter.string(from: date))
        var writers: [SoundFileWriter] = []
        for channel in channels {
            let base = path(take: t.number, date: t.date, channel: channel, chunk: chunk,
                            ext: config.format.container.fileExtension)
            var attempt = 0
            while true {
                let candidate = attempt == 0 ? base : DiskWriter.variant(base, attempt)
                do {
                    writers.append(try SoundFileWriter(path: candidate, format: config.format,
                                                       channels: config.stems ? 1 : state.recordedChannels,
                                                       sampleRate: sampleRate, broadcast: bext))
                    break
                } catch where error.code == .alreadyExists && attempt < 999 {
                    attempt += 1    // never overwrite: take the next free variant of the name
                } catch {
                    // Nothing was opened: the chunk before stays the last one, with its frames (it used to be taken
                    // for an empty chunk opened at the end and removed, files and all).
                    t.failed = error.description
                    for w in writers {
                        try? w.close()
                        unlink(w.path)
                    }
                    (t.chunkIndex, t.chunkStart) = (previousIndex, previousStart)
                    return
                }
            }
        }
        t.writers = writers
        t.report.chunks.append(.init(files: writers.map(\.path), startFrame: t.framesWritten, frames: 0))
        t.lastSync = t.framesWritten
        writeSidecar(t)
        if t.chunkIndex > 1 { emit(.chunkStarted(take: t.number, chunk: t.chunkIndex, files: writers.map(\.path))) }
    }

    /// "name.wav" -> "name+1.wav".
    static func variant(_ path: String, _ n: Int) -> String {
        let ns = path as NSString
        return ns.deletingPathExtension + "+\(n)." + ns.pathExtension
    }

    private func closeChunk(_ t: ActiveTake) {
        let paths = t.writers.map(\.path)
        for w in t.writers {
            do { try w.close() } catch { t.failed = t.failed ?? error.description }
        }
        t.closedChunkBytes += ActiveTake.bytesOnDisk(paths)
        if !t.report.chunks.isEmpty {
            t.report.chunks[t.report.chunks.count - 1].frames = t.framesWritten - t.chunkStart
        }
        t.writers = []
    }

    private func rotate(_ t: ActiveTake) {
        closeChunk(t)
        t.report.frames = t.framesWritten
        openChunk(t)
        if let failure = t.failed { finish(t, end: .diskError, detail: failure) }
    }

    private func finish(_ t: ActiveTake, end: TakeEnd, detail: String?) {
        guard take === t else { return }
        closeChunk(t)
        if t.report.chunks.last?.frames == 0 && t.report.chunks.count > 1 {
            // A chunk opened at the very end holds nothing: remove its empty files.
            for f in t.report.chunks.removeLast().files { unlink(f) }
        }
        t.report.frames = t.framesWritten
        t.report.xruns = max(0, xruns() - t.context.xrunsAtStart)
        t.report.ended = t.failed != nil ? .diskError : end
        t.report.endDetail = t.failed ?? detail
        writeSidecar(t)
        take = nil
        published.withLock { $0 = nil }
        applyPendingConfig()
        if let failure = t.failed {
            logger.error("take ended by a disk error", metadata: ["take": "\(t.number)", "error": "\(failure)"])
            emit(.diskError(take: t.number, message: failure))
        } else {
            logger.info("take finished", metadata: ["take": "\(t.number)", "frames": "\(t.framesWritten)",
                                                    "ended": "\(t.report.ended.rawValue)"])
        }
        emit(.takeFinished(report: t.report, sidecar: t.sidecar.path))
    }

    private func writeSidecar(_ t: ActiveTake) {
        var r = t.report
        r.frames = t.framesWritten
        if !r.chunks.isEmpty && !t.writers.isEmpty { r.chunks[r.chunks.count - 1].frames = t.framesWritten - t.chunkStart }
        do { try t.sidecar.write(r.json()) } catch {
            logger.warning("cannot write take report", metadata: ["error": "\(error)"])
        }
    }

    /// Publishes the take's progress for status readers. The byte count is arithmetic for PCM formats and a plain
    /// stat() at most once per second of audio otherwise (this runs after every write).
    private func publish(_ t: ActiveTake) {
        if let width = DiskWriter.bytesPerSample(config.format) {
            t.bytesKnown = t.framesWritten * width * state.recordedChannels + 80 * max(1, t.writers.count) * t.chunkIndex
        } else if t.framesWritten - t.bytesCheckedAt >= sampleRate || t.bytesKnown == 0 {
            t.bytesKnown = t.closedChunkBytes + t.fileBytes()
            t.bytesCheckedAt = t.framesWritten
        }
        let s = TakeStatus(take: t.number, frames: t.framesWritten, files: t.writers.map(\.path), bytes: t.bytesKnown)
        published.withLock { $0 = s }
    }

    private func emit(_ e: RecorderEvent) { events.withLock { $0.append(e) } }
}

/// One take being written. Writer thread only.
final class ActiveTake {
    let number: Int
    /// Stream position of the first frame in the ring (see `resolved`).
    var start: Int
    /// Wall-clock time of the first frame (names every chunk of the take).
    let date: Date
    let context: TakeContext
    var report: TakeReport
    let sidecar: SidecarFile
    /// Stream position where the take ends (exclusive), once known.
    var end: Int?
    /// Whether `start` is final: until the writer reaches it, `start` is the first input frame's stream position;
    /// then the chain latency the ring carries there (`compensation`) is added (see `DiskWriter.resolveStart`).
    var resolved = false
    var compensation = 0
    var endReason: TakeEnd?
    var endDetail: String?
    var writers: [SoundFileWriter] = []
    var chunkIndex = 0
    /// Take offset of the current chunk's first frame.
    var chunkStart = 0
    var framesWritten = 0
    var lastSync = 0
    var failed: String?
    /// Whether the test-only stall fault has fired for this take.
    var stalled = false
    /// Bytes on disk as last computed, and the frame count when they were.
    var bytesKnown = 0
    var bytesCheckedAt = 0
    /// Bytes of the chunks already closed (the status counts the whole take, not only the open chunk).
    var closedChunkBytes = 0

    init(number: Int, start: Int, date: Date, context: TakeContext, report: TakeReport, sidecar: SidecarFile) {
        self.number = number
        self.start = start
        self.date = date
        self.context = context
        self.report = report
        self.sidecar = sidecar
    }

    /// Bytes of the current chunk's files on disk (one stat() each).
    func fileBytes() -> Int { Self.bytesOnDisk(writers.map(\.path)) }

    static func bytesOnDisk(_ paths: [String]) -> Int {
        paths.reduce(0) { sum, path in
            var st = stat()
            return sum + (stat(path, &st) == 0 ? Int(st.st_size) : 0)
        }
    }
}
