import Presets
import Commands
import Foundation
import Logging
import Realtime
import SoundFile
import Loudness
import Synchronization

/// The files of a recorder's takes: names, chunks, BWF, the sidecar report, rotation, sync and the end of a take.
/// It is told frames and gaps at stream positions by the pump (`DiskWriter`) and never reads the ring itself.
///
/// Threads: the disk-writer thread, except `status` and `drainEvents` (any thread / the control side).
// @unchecked Sendable: all but `published` (a Mutex) and `events` (an Outbox) belongs to the disk-writer thread.
public final class TakeFiles: @unchecked Sendable {
    /// A snapshot of the running take for status displays.
    public struct TakeStatus: Sendable {
        public var take: Int
        public var frames: Int
        public var files: [String]
        public var bytes: Int
    }

    /// Frames of one file write at most (stems are de-interleaved through a scratch buffer of this size).
    public static let chunkFrames = 8192
    /// Bytes kept free for a WAV/RF64 header when rotation by size is turned into frames.
    static let headerRoom = 4096
    /// A PCM file's header as the status counts it (bytes per file and chunk; the real one is 44 to 80 bytes).
    static let statusHeaderBytes = 80
    /// Name variants tried ("take+1.wav", ...) before a chunk that cannot be named fails the take.
    static let maxNameVariants = 999
    /// Take numbers skipped at most at a take's start because their files are there (a template with `{take}`).
    static let maxTakeSkips = 100_000
    /// The take's files are synced after this much audio: what a power loss can take (plus the ring).
    static let syncSeconds = 1

    private(set) var config: RecorderConfig
    let sampleRate: Int
    /// Interleaved channels of the ring (and of a file, unless stems).
    let channels: Int
    let portNames: [String]
    let logger: Logger
    private let xruns: @Sendable () -> Int
    private let events = Outbox<RecorderEvent>()
    let published = Mutex<TakeStatus?>(nil)

    /// The running take (nil: none).
    public private(set) var take: ActiveTake?
    private var nextTakeNumber: Int
    private var pendingConfig: RecorderConfig?
    /// Chunk length in frames (nil: no rotation by frames).
    private(set) var rotateFrames: Int?
    /// fsync the take's files after this many frames: what a power loss can take is bounded by this (plus the ring).
    private let syncFrames: Int
    /// Zeroes for gaps, and the de-interleaving buffer of stems.
    let silence: UnsafeMutablePointer<Float>
    private let stemScratch: UnsafeMutablePointer<Float>

    public init(config: RecorderConfig, channels: Int, sampleRate: Int, portNames: [String], logger: Logger,
         xruns: @escaping @Sendable () -> Int) {
        self.config = TakeFiles.absolute(config)
        self.channels = channels
        self.sampleRate = sampleRate
        self.portNames = portNames
        self.logger = logger
        self.xruns = xruns
        nextTakeNumber = max(1, config.firstTake)
        syncFrames = sampleRate * TakeFiles.syncSeconds
        rotateFrames = TakeFiles.rotationFrames(config, channels: channels, sampleRate: sampleRate)
        silence = .allocate(capacity: TakeFiles.chunkFrames * channels)
        silence.initialize(repeating: 0, count: TakeFiles.chunkFrames * channels)
        stemScratch = .allocate(capacity: TakeFiles.chunkFrames)
        stemScratch.initialize(repeating: 0, count: TakeFiles.chunkFrames)
    }

    deinit {
        silence.deallocate()
        stemScratch.deallocate()
    }

    /// `c` with its folder made absolute (against the working directory now): reports list absolute paths, so
    /// whoever reads them later (retention, `stitch`, recovery) finds the files from any working directory.
    static func absolute(_ c: RecorderConfig) -> RecorderConfig {
        guard !c.directory.hasPrefix("/") else { return c }
        var c = c
        c.directory = ((FileManager.default.currentDirectoryPath as NSString)
            .appendingPathComponent(c.directory) as NSString).standardizingPath
        return c
    }

    /// Chunk length in frames from the rotation settings (by time, or by size for uncompressed formats).
    static func rotationFrames(_ config: RecorderConfig, channels: Int, sampleRate: Int) -> Int? {
        var rotate: Int?
        if let s = config.rotateSeconds, !config.rotateOnClock { rotate = max(1, Int((s * Double(sampleRate)).rounded())) }
        if let b = config.rotateBytes, let width = bytesPerSample(config.format) {
            let perFile = width * (config.stems ? 1 : channels)
            let byBytes = max(1, (b - headerRoom) / perFile)
            rotate = min(rotate ?? byBytes, byBytes)
        }
        return rotate
    }

    /// Bytes per sample of uncompressed formats (nil for encoded ones, rotated by observed file size).
    public static func bytesPerSample(_ f: AudioFormat) -> Int? {
        guard f.container == .wav || f.container == .rf64 else { return nil }
        switch f.sample {
        case .float32: return 4
        case .int24: return 3
        case .int16: return 2
        }
    }

    /// The recorder client's xrun count now.
    public var xrunCount: Int { xruns() }

    // MARK: Control side

    /// Events since the last call. Control side.
    public func drainEvents() -> [RecorderEvent] { events.drain() }

    /// The running take, if any. Any thread.
    public var status: TakeStatus? { published.withLock { $0 } }

    // MARK: Settings

    /// Uses `c` from the next take on (at once when no take runs).
    public func configure(_ c: RecorderConfig) {
        pendingConfig = c
        if take == nil { applyPendingConfig() }
    }

    private func applyPendingConfig() {
        guard let c = pendingConfig else { return }
        pendingConfig = nil
        config = TakeFiles.absolute(c)
        rotateFrames = TakeFiles.rotationFrames(c, channels: channels, sampleRate: sampleRate)
    }

    // MARK: A take's life

    /// Starts a take whose first ring frame is at stream position `start`, asked for at `at` (the difference is the
    /// pre-roll). The take's start may still move by the chain's latency (`resolve`); its files open with `open`.
    public func begin(start: Int, at: Int, context: TakeContext) -> ActiveTake {
        applyPendingConfig()
        let date = context.anchor.wallClock(at: start)
        let free = freeTakeName(from: nextTakeNumber, date: date)
        let number = free?.number ?? nextTakeNumber
        nextTakeNumber = number + 1
        let report = TakeReport(
            tandemVersion: TandemVersion.string, session: config.session, take: number, sampleRate: sampleRate,
            channels: channels, format: config.format.container.rawValue,
            sampleFormat: config.format.sample.rawValue, stems: config.stems, startedAt: TakeFiles.iso(date),
            startFrameTime: context.anchor.frameTime(at: start), streamStart: start, prerollFrames: max(0, at - start),
            ports: context.ports, chunks: [], frames: 0, xruns: 0, droppedFrames: 0, drops: [], missedFrames: 0,
            ended: .recording,
            endDetail: nil, notes: context.notes.isEmpty ? nil : context.notes, playback: context.playback,
            pid: getpid(), host: ProcessInfo.processInfo.hostName, plugins: context.plugins,
            pluginLatencyFrames: context.pluginLatency,
            channelNames: config.recordDry ? config.recordedChannelNames : nil)
        let t = ActiveTake(number: number, start: start, date: date, context: context, report: report,
                           sidecar: SidecarFile(path: path(take: number, date: date, channel: nil, chunk: nil,
                                                           ext: "json", variant: free?.variant ?? 0)))
        t.nameVariant = free?.variant ?? 0
        if let groups = config.loudness {
            t.loudness = try? ProgrammeMeters(groups: groups.groups, channels: channels, names: config.ports,
                                              sampleRate: Double(sampleRate))
        }
        take = t
        if free == nil {
            t.failed = "no free file name for take \(number) in \(config.directory): '\(config.template)' and "
                + "\(TakeFiles.maxNameVariants) '+N' variants of it are taken (put {take} in the template, or move the files)"
        }
        if config.maxDurationSeconds != nil { t.endReason = .durationReached }
        if let p = context.pluginProblems, !p.isEmpty { t.report.pluginProblems = p }
        if context.period > 0 {
            // The anchor is the start of a cycle: where the take's first frame falls in its cycle.
            let into = (start - context.anchor.streamPosition) % context.period
            t.report.controlLog = ControlLog(period: context.period, cycleOffset: (into + context.period) % context.period,
                                             chains: context.chains)
        }
        if config.rotateOnClock, let seconds = config.rotateSeconds,
           var w = WallClockRotation(intervalSeconds: Int(seconds), zone: .current, sampleRate: sampleRate,
                                     anchorFrame: context.anchor.streamPosition, anchorTime: context.anchor.wallClock) {
            w.clockScale = context.anchor.clockScale
            t.clock = w
        }
        return t
    }

    /// Opens the take's first chunk and announces it (after `begin` and, when it can be, `resolve`).
    public func open(_ t: ActiveTake) {
        if t.failed == nil { openChunk(t) }
        if let failure = t.failed {
            finish(t, end: .diskError, detail: failure)
            return
        }
        emit(.takeStarted(take: t.number, files: t.writers.map(\.path)))
        logger.info("take started", metadata: ["take": "\(t.number)", "files": "\(t.writers.map(\.path))"])
    }

    /// The take's first input frame is `input` and the ring carries `compensation` there: the take starts that many
    /// frames later in the ring. Its report and its end follow (see `DiskWriter.resolveStart`).
    public func resolve(_ t: ActiveTake, input: Int, compensation: Int) {
        t.resolved = true
        t.compensation = compensation
        t.start = input + compensation
        t.report.streamStart = input
        t.report.startFrameTime = t.context.anchor.frameTime(at: input)
        t.report.startedAt = TakeFiles.iso(t.context.anchor.wallClock(at: input))
        if t.context.plugins != nil || compensation > 0 {
            t.report.latencyCompensation = .init(frames: compensation, method: TakeReport.LatencyCompensation.how)
        }
        if let m = config.maxDurationSeconds {
            t.end = min(t.end ?? Int.max, t.start + Int((m * Double(sampleRate)).rounded()))
            if t.endReason == nil { t.endReason = .durationReached }
        }
        writeSidecar(t)
    }

    private static func iso(_ date: Date) -> String {
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return iso.string(from: date)
    }

    /// Frames the take can take at once from where it stands: up to its end and its chunk's end.
    public func room(_ t: ActiveTake, at position: Int, wanted: Int) -> Int {
        var n = wanted
        if let end = t.end { n = min(n, end - position) }
        if let rotateFrames { n = min(n, rotateFrames - (t.framesWritten - t.chunkStart)) }
        if let clock = t.clock {
            if t.boundary == nil { t.boundary = clock.nextBoundary(after: position) }
            if let b = t.boundary { n = min(n, b.frame - position) }
        }
        return max(0, n)
    }

    /// Writes `frames` interleaved frames from `regions` (the ring's two segments), or silence when `regions` is nil,
    /// at the end of the take. A failure is kept in `t.failed`.
    public func append(_ t: ActiveTake, _ regions: FrameRegions?, frames n: Int) {
        if t.writers.isEmpty { openChunk(t) }
        guard !t.writers.isEmpty else { return }
        if let r = regions {
            injectStall(t)
            write(t, r.first, frames: r.firstFrames)
            if t.failed == nil { write(t, r.second, frames: r.secondFrames) }
        } else {
            var left = n
            while left > 0 && t.failed == nil {
                let k = min(left, TakeFiles.chunkFrames)
                write(t, silence, frames: k)
                left -= k
            }
        }
    }

    /// After frames were appended and the pump stands at stream position `position`: ends the take (its end
    /// reached, or a disk error), rotates, or syncs, and publishes the progress. Returns whether the take goes on.
    @discardableResult
    public func afterAppend(_ t: ActiveTake, at position: Int) -> Bool {
        if let failure = t.failed {
            finish(t, end: .diskError, detail: failure)
            return false
        }
        publish(t)
        if let end = t.end, position >= end {
            finish(t, end: t.endReason ?? .stopped, detail: t.endDetail)
            return false
        } else if let b = t.boundary, position >= b.frame {
            t.chunkDate = b.time
            t.boundary = nil
            rotate(t)
        } else if let rotateFrames, t.framesWritten - t.chunkStart >= rotateFrames {
            rotate(t)
        } else if let bytes = config.rotateBytes, rotateFrames == nil, t.fileBytes() >= bytes {
            rotate(t)
        } else if syncFrames > 0 && t.framesWritten - t.lastSync >= syncFrames {
            for w in t.writers { w.flush() }
            t.lastSync = t.framesWritten
        }
        return take === t
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
        t.loudness?.add(samples, frames: frames)
        do {
            if config.stems {
                var done = 0
                while done < frames {
                    let k = min(frames - done, TakeFiles.chunkFrames)
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

    // MARK: The report

    /// Enters a gap at stream position `position` into the take's report: `silence` true for frames written as
    /// silence (only the part inside the take counts), false for skipped cycles that take no room in the file (the
    /// server's time jumps by `frames` here). Returns whether anything was entered.
    @discardableResult
    public func noteGap(at position: Int, frames: Int, cause: TakeReport.GapCause, silence: Bool) -> Bool {
        guard let t = take, position >= t.start, position < (t.end ?? Int.max) else { return false }
        let counted = silence ? min(frames, (t.end ?? Int.max) - position) : frames
        t.report.drops.append(.init(atFrame: position - t.start, frames: counted, cause: cause,
                                    silence: silence ? nil : false))
        switch cause {
        case .overrun: t.report.droppedFrames += counted
        case .missedCycles: t.report.missedFrames = (t.report.missedFrames ?? 0) + counted
        case .repeatedCycle: t.report.repeatedFrames = (t.report.repeatedFrames ?? 0) + counted
        }
        return true
    }

    /// A skipped-cycle jump read one cycle early (see `RecorderState.cycle`) comes back as a step back in the next
    /// cycle: taken off the take's last skipped-cycle note (removed when nothing is left of it).
    public func correctSkip(by frames: Int) {
        guard let t = take, let i = t.report.drops.lastIndex(where: { $0.cause == .missedCycles }) else { return }
        let taken = min(frames, t.report.drops[i].frames)
        t.report.drops[i].frames -= taken
        t.report.missedFrames = (t.report.missedFrames ?? 0) - taken
        if t.report.drops[i].frames == 0 { t.report.drops.remove(at: i) }
    }

    /// The ring carries chain latency `frames` instead of `old` from stream position `position` on. Inside a take it
    /// is entered in the report: processed and dry channels stay aligned, while the timeline moves there.
    public func latencyChanged(at position: Int, from old: Int, to frames: Int) {
        guard let t = take, t.resolved, frames != old, position >= t.start, position < (t.end ?? Int.max) else { return }
        var c = t.report.latencyCompensation ?? .init(frames: t.compensation, method: TakeReport.LatencyCompensation.how)
        c.changes = (c.changes ?? []) + [.init(atFrame: position - t.start, frames: frames)]
        t.report.latencyCompensation = c
        logger.warning("plugin latency changed during a take", metadata: [
            "take": "\(t.number)", "from": "\(old)", "to": "\(frames)", "frame": "\(position - t.start)"])
    }

    /// A control change a chain applied at the cycle that began at stream position `position` (an input position):
    /// entered in the take's control log at its input frame. Outside the take it is not kept.
    public func logControl(_ entry: TimedCommand, at position: Int) {
        guard let t = take, var log = t.report.controlLog else { return }
        // Before the take's first frame: applied after the chains were taken for the log, and kept (a render applies
        // it before that frame).
        let input = t.start - t.compensation
        guard position < (t.end ?? Int.max) - t.compensation else { return }
        var e = entry
        e.frame = position - input
        log.entries.append(e)
        t.report.controlLog = log
    }

    /// Changes some chain applied that its process thread could not note (its ring was full): the log says it is
    /// incomplete.
    public func controlLogDropped(_ count: Int) {
        guard let t = take, var log = t.report.controlLog, count > 0 else { return }
        log.dropped = (log.dropped ?? 0) + count
        t.report.controlLog = log
    }

    /// Plugins bypassed or settings ignored from stream position `position` on (a rebuilt chain).
    public func pluginProblems(_ list: [TakeReport.PluginProblem], at position: Int) {
        guard let t = take else { return }
        let at = max(0, position - t.start)
        t.report.pluginProblems = (t.report.pluginProblems ?? []) + list.map { p in
            var p = p
            p.atFrame = at
            return p
        }
        writeSidecar(t)
    }

    /// An isolated rack feeding the take went down, or came back (then the open incident of that rack is closed),
    /// at stream position `position`.
    public func rackIncident(rack: String, what: String, channels: [String], back: Bool, at position: Int) {
        guard let t = take else { return }
        let at = max(0, position - t.start)
        var list = t.report.rackIncidents ?? []
        if back {
            guard let i = list.lastIndex(where: { $0.rack == rack && $0.backAtFrame == nil }) else { return }
            list[i].backAtFrame = at
        } else {
            list.append(RackIncidentNote(rack: rack, what: what, atFrame: at, channels: channels))
        }
        t.report.rackIncidents = list
        writeSidecar(t)
    }

    /// Closes the take's files and writes its final report (a disk error overrides `end`).
    public func finish(_ t: ActiveTake, end: TakeEnd, detail: String?) {
        guard take === t else { return }
        closeChunk(t)
        if t.report.chunks.last?.frames == 0 && t.report.chunks.count > 1 {
            // A chunk opened at the very end holds nothing: remove its empty files.
            for f in t.report.chunks.removeLast().files { unlink(f) }
        }
        finishMarkers(t)
        if var info = t.report.trigger, info.ended == nil {
            info.ended = .stopped
            t.report.trigger = info
        }
        t.report.frames = t.framesWritten
        t.report.xruns = max(0, xruns() - t.context.xrunsAtStart)
        t.report.ended = t.failed != nil ? .diskError : end
        t.report.endDetail = t.failed ?? detail
        if let meters = t.loudness { t.report.loudness = meters.readings(summary: true) }
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
        // No report could be written (the disk was full from the start): say so rather than name a file that is not.
        emit(.takeFinished(report: t.report, sidecar: t.sidecar.written ? t.sidecar.path : ""))
        applyRetention()
    }

    func emit(_ e: RecorderEvent) { events.post(e) }
}
