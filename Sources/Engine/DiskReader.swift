import Foundation
import Logging
import MIDIFile
import Presets
import Realtime
import SoundFile
import Synchronization
import Takes

/// The disk-reader thread of one player: keeps the playback ring filled ahead of the play head with libsndfile
/// (and libsoxr when a file's rate differs from the server's), mapping file channels to output ports.
///
/// Consecutive items at the same foreign rate, channel count and quality (a looped item, `loop all` over such
/// items) go through one continuous resampler stream, so what is played equals resampling their concatenation. A
/// stream's tail is flushed only at the end of the queue or where the rate, channel count or quality changes; on a
/// seek or a new queue the stream is dropped unflushed (what it holds is stale).
///
/// It owns the ring's writer half and writes `skipTo` / `drainedAt`. Woken by the RT callback when the ring has
/// room, or every 50 ms.
///
/// Threads: `send`, `markers`, `drainEvents` from the control side; the rest on the reader thread.
// @unchecked Sendable: the control side uses only `commands` (a `Mailbox`), `events` (an `Outbox`) and `markerList`
// (a Mutex); every other var belongs to the reader thread, started after `init`.
final class DiskReader: @unchecked Sendable {
    enum Command: Sendable {
        /// Replace the queue and start at `item`, file frame `frame`.
        case load([String], item: Int, frame: Int)
        /// Jump to `frame` of `item` (nil: the current one).
        case seek(item: Int?, frame: Int)
        case next
        /// New loop mode, channel map and resampling quality (from the next chunk; the queue is not touched).
        case configure(loop: LoopMode, map: [Int]?, quality: ResampleQuality)
        case quit
    }

    private let state: PlayerState
    private let sampleRate: Int
    private let logger: Logger
    private var channelMap: [Int]?
    private var loop: LoopMode
    private var quality: ResampleQuality
    /// Commands from the control side, with a count of those carried out (so it can wait for a seek to be taken).
    private let commands: Mailbox<Command>
    private let events = Outbox<PlayerEvent>()
    private let markerList = Mutex<[PlaybackMarker]>([])

    // Reader-thread state.
    private var queue: [String] = []
    private var index = 0
    private var file: SoundFileReader?
    /// The current item when it is a MIDI file (then `file` is nil).
    private var midi: MIDIItemSource?
    /// The resampler stream the current item feeds (nil: the item plays at the server's rate).
    private var stream: ResampleStream?
    /// A stream that has ended (rate change, end of the queue) whose tail must be written before anything else.
    private var ending: ResampleStream?
    /// The current item's marker, until it is published (after `ending`'s tail, so its ring position is known).
    private var pendingMarker: PlaybackMarker?
    /// Frames of `fileBuffer`, from frame `pendingOffset` on, that the resampler has not taken yet.
    private var pendingFrames = 0
    private var pendingOffset = 0
    private var fileFrame = 0
    private var quit = false
    /// Nothing more to read. True until a queue is loaded (then `drainedAt` is left alone: there was no queue).
    private var drained = true
    private var failuresInARow = 0
    /// The ring's read position at the last jump, handed to the next published marker (see `PlaybackMarker`).
    private var jumpedAt: Int?
    static let chunkFrames = 4096
    /// The most cue points kept of one file.
    static let maxCues = 4096
    private let fileBuffer: UnsafeMutablePointer<Float>
    private var fileBufferChannels = 0
    private let resampled: UnsafeMutablePointer<Float>
    /// Frames `resampled` holds at the most channels.
    private static let resampledFrames = chunkFrames * 8 + 8192
    private static let maxFileChannels = 256
    private let waitSeconds: Double

    init(config: PlayerConfig, state: PlayerState, sampleRate: Int, logger: Logger) {
        self.state = state
        self.sampleRate = sampleRate
        self.logger = logger
        commands = Mailbox(wakeup: state.wakeup)
        channelMap = config.channelMap
        loop = config.loop
        quality = config.resampleQuality
        waitSeconds = min(0.25, config.ringSeconds / 8)
        fileBuffer = .allocate(capacity: DiskReader.chunkFrames * DiskReader.maxFileChannels)
        // Room for the largest upsampling ratio we accept (8x) plus the converter's tail.
        resampled = .allocate(capacity: DiskReader.resampledFrames * DiskReader.maxFileChannels)
    }

    deinit {
        fileBuffer.deallocate()
        resampled.deallocate()
    }

    // MARK: Control side

    func send(_ command: Command) { commands.send(command) }

    /// Waits until every command sent so far has been carried out (up to `seconds`). Returns false on timeout.
    @discardableResult
    func waitUntilHandled(seconds: Double) -> Bool { commands.waitUntilHandled(seconds: seconds) }

    func drainEvents() -> [PlayerEvent] { events.drain() }

    /// The markers, oldest first.
    var markers: [PlaybackMarker] { markerList.withLock { $0 } }

    // MARK: Reader thread

    func run() {
        while !quit {
            let batch = commands.take()
            for command in batch { handle(command) }
            commands.handled(batch.count)
            if quit { break }
            fill()
            // The callback wakes us when there is room; the timeout only covers a chunk larger than its threshold
            // (upsampling), so it is a fraction of the ring.
            state.wakeup.wait(seconds: waitSeconds)
            state.wakeup.drain()
        }
    }

    private func handle(_ command: Command) {
        switch command {
        case .load(let list, let item, let frame):
            queue = list
            jump(item: item, frame: frame)
        case .seek(let item, let frame):
            jump(item: item ?? index, frame: frame)
        case .next:
            jump(item: index + 1, frame: 0)
        case .configure(let newLoop, let map, let q):
            loop = newLoop
            channelMap = map
            quality = q
        case .quit:
            quit = true
        }
    }

    /// Drops what the ring holds and continues from `item` at `frame`.
    private func jump(item: Int, frame: Int) {
        closeFile()
        stream = nil
        ending = nil
        pendingMarker = nil
        pendingFrames = 0
        drained = false
        state.set(.drainedAt, PlayerState.notDrained)
        state.set(.skipTo, state.ring.totalWritten)
        jumpedAt = state.ring.totalRead
        index = item
        failuresInARow = 0
        if index >= queue.count || (!open(index, at: frame) && !advance()) { markDrained() }
    }

    private func emit(_ e: PlayerEvent) {
        events.post(e)
        state.notify?.post()
    }

    private func closeFile() {
        file?.close()
        file = nil
        midi = nil
    }

    /// Ends the current resampler stream: its tail is written before the next item's first frame.
    private func endStream() {
        if let s = stream { ending = s }
        stream = nil
    }

    /// Publishes the current item's marker. A new stream (or no stream) starts at the write position; an item that
    /// continues a stream starts where its first input frame comes out of the converter.
    private func publishMarker() {
        guard var marker = pendingMarker else { return }
        pendingMarker = nil
        marker.staleFrom = jumpedAt
        jumpedAt = nil
        let written = state.ring.totalWritten
        if let s = stream {
            if s.fed == 0 { s.startRing = written }
            marker.ringPosition = s.startRing + s.outputFrames(forInput: s.fed, outputRate: sampleRate)
        } else {
            marker.ringPosition = written
        }
        markerList.withLock { m in
            m.append(marker)
            if m.count > 64 { m.removeFirst(m.count - 64) }   // only recent ones can still be playing
        }
    }

    /// Opens item `i` at `frame`; on failure reports it and leaves `file` nil (the caller moves on).
    @discardableResult
    private func open(_ i: Int, at frame: Int, repeating: Bool = false) -> Bool {
        let path = queue[i]
        if MIDIItem.isMIDIFile(path) { return openMIDI(i, at: frame, repeating: repeating) }
        do throws(SoundFileError) {
            let f = try SoundFileReader(path: path)
            guard f.channels >= 1 && f.channels <= DiskReader.maxFileChannels else {
                throw SoundFileError(.cannotOpen, path: path, message: "\(f.channels) channels is more than Tandem plays")
            }
            guard f.sampleRate > 0 && sampleRate <= f.sampleRate * 8 else {
                throw SoundFileError(.unsupportedFormat, path: path,
                                     message: "sample rate \(f.sampleRate) Hz cannot be converted to \(sampleRate) Hz")
            }
            if frame > 0 { try f.seek(to: min(frame, f.frames)) }
            if f.sampleRate == sampleRate {
                endStream()
            } else if let s = stream, s.fileRate == f.sampleRate, s.channels == f.channels, s.quality == quality {
                // Same stream: the item's first frame follows the last one's in the converter.
            } else {
                let r = try Resampler(from: f.sampleRate, to: sampleRate, channels: f.channels, quality: quality)
                endStream()
                stream = ResampleStream(resampler: r, fileRate: f.sampleRate, channels: f.channels, quality: quality)
            }
            file = f
            fileFrame = min(frame, f.frames)
            pendingMarker = PlaybackMarker(ringPosition: 0, item: i, path: path, fileFrame: fileFrame,
                                           ratio: Double(f.sampleRate) / Double(sampleRate), fileFrames: f.frames,
                                           fileRate: f.sampleRate, repeatOfItem: repeating,
                                           cues: Self.cues(of: f))
            if ending == nil { publishMarker() }
            failuresInARow = 0
            return true
        } catch {
            logger.error("cannot play file, skipping it", metadata: ["file": "\(path)", "error": "\(error.message)"])
            emit(.itemFailed(item: i, path: path, message: error.description))
            failuresInARow += 1
            return false
        }
    }

    /// The cue points of `f` with their labels, by frame, at most `maxCues` (`SoundFileReader.labelledCues`:
    /// malformed chunks give fewer, never an error). Reader thread (it reads the file's chunks).
    static func cues(of f: SoundFileReader) -> [CueMarker] {
        Array(f.labelledCues.filter { $0.frame >= 0 && $0.frame <= f.frames }.prefix(maxCues))
    }

    /// Opens item `i`, a MIDI file, at `frame` (frames at the server's rate); on failure reports it.
    private func openMIDI(_ i: Int, at frame: Int, repeating: Bool) -> Bool {
        let path = queue[i]
        do throws(MIDIFileError) {
            let m = try MIDIItemSource(path: path, sampleRate: sampleRate, startFrame: frame)
            endStream()
            midi = m
            pendingMarker = PlaybackMarker(ringPosition: 0, item: i, path: path, fileFrame: m.frame, ratio: 1,
                                           fileFrames: m.frames, fileRate: sampleRate, repeatOfItem: repeating)
            if ending == nil { publishMarker() }
            failuresInARow = 0
            return true
        } catch {
            logger.error("cannot play MIDI file, skipping it", metadata: ["file": "\(path)", "error": "\(error.reason)"])
            emit(.itemFailed(item: i, path: path, message: error.description))
            failuresInARow += 1
            return false
        }
    }

    /// Moves to the item after the current one (per the loop mode). Returns false when the queue is done.
    private func advance() -> Bool {
        closeFile()
        var next = loop == .item ? index : index + 1
        while true {
            if next >= queue.count {
                guard loop == .all, !queue.isEmpty, failuresInARow < queue.count else { return false }
                next = 0
            }
            let repeating = next == index && loop == .item
            index = next
            if open(index, at: 0, repeating: repeating) { return true }
            if loop == .item || failuresInARow >= queue.count { return false }
            next = index + 1
        }
    }

    /// Writes file frames into the ring until it is full or the queue is done.
    private func fill() {
        let writer = state.ring.writer
        while !drained {
            if let e = ending {
                guard flushTail(of: e) else { return }
                ending = nil
            }
            publishMarker()
            if let m = midi {
                if m.fill(state, maxFrames: DiskReader.chunkFrames) > 0 { continue }
                guard m.atEnd else { return }      // the audio or MIDI ring is full
                if !advance() { endStream() }
                continue
            }
            guard let f = file else {
                markDrained()
                return
            }
            if let s = stream, pendingFrames > 0 {
                guard feed(s) else { return }
                continue
            }
            // Enough room for a whole converted chunk?
            let ratio = Double(sampleRate) / Double(f.sampleRate)
            let need = Int((Double(DiskReader.chunkFrames) * ratio).rounded(.up)) + 64
            if writer.space < need { return }
            let got: Int
            do {
                got = try f.read(into: fileBuffer, frames: DiskReader.chunkFrames)
            } catch {
                emit(.itemFailed(item: index, path: f.path, message: error.description))
                logger.error("read error, skipping the rest of the file",
                             metadata: ["file": "\(f.path)", "error": "\(error.message)"])
                if !advance() { endStream() }
                continue
            }
            fileFrame += got
            if got > 0 {
                if let s = stream {
                    pendingOffset = 0
                    pendingFrames = got
                    guard feed(s) else { return }
                } else {
                    writeMapped(fileBuffer, frames: got, fileChannels: f.channels)
                }
                continue
            }
            if fileFrame < f.frames || f.truncation != nil {
                // Short of what the header promises: a half-copied file. What was there has played.
                let detail = f.truncation.map { " (header: \($0))" } ?? " of \(f.frames) frames"
                emit(.itemFailed(item: index, path: f.path,
                                 message: "\(f.path): truncated: played the \(fileFrame) frames that are there\(detail)"))
                logger.error("file is truncated", metadata: ["file": "\(f.path)", "frames": "\(fileFrame)"])
            }
            // The end of an item is not the end of its stream: the next item (or the same again) may continue it.
            if !advance() { endStream() }
        }
    }

    /// Passes the pending file frames through the stream's converter into the ring. Returns false when the ring is
    /// full before they are all taken (the rest stays pending).
    private func feed(_ s: ResampleStream) -> Bool {
        let writer = state.ring.writer
        while pendingFrames > 0 {
            let room = min(writer.space, DiskReader.resampledFrames)
            if room == 0 { return false }
            let out = s.resampler.process(fileBuffer + pendingOffset * s.channels, inputFrames: pendingFrames,
                                          into: resampled, outputCapacity: room)
            writeMapped(resampled, frames: out.produced, fileChannels: s.channels)
            pendingOffset += out.consumed
            pendingFrames -= out.consumed
            s.fed += out.consumed
            if out.consumed == 0 && out.produced == 0 {
                // The converter takes nothing although there is room (it reported an error): drop the chunk rather
                // than spin on it.
                logger.error("the resampler took no input; dropping a chunk", metadata: ["frames": "\(pendingFrames)"])
                pendingFrames = 0
            }
        }
        return true
    }

    /// Writes what is left in an ended stream's converter. Returns false when the ring filled first (call again).
    private func flushTail(of s: ResampleStream) -> Bool {
        let writer = state.ring.writer
        while true {
            let room = min(writer.space, DiskReader.resampledFrames)
            if room == 0 { return false }
            let out = s.resampler.process(nil, inputFrames: 0, into: resampled, outputCapacity: room)
            if out.produced == 0 { return true }
            writeMapped(resampled, frames: out.produced, fileChannels: s.channels)
        }
    }

    private func markDrained() {
        guard !drained else { return }
        drained = true
        state.set(.drainedAt, state.ring.totalWritten)
    }

    /// For each output channel, the file channel it plays (-1: silence), for a file of `fileChannels`.
    private func sources(fileChannels: Int) -> [Int] {
        (0..<state.channels).map { o in
            let k = channelMap.map { $0[o] - 1 } ?? (fileChannels == 1 ? 0 : o)
            return k >= 0 && k < fileChannels ? k : -1
        }
    }

    /// Copies interleaved file frames into the ring, mapping file channels to output channels.
    private func writeMapped(_ source: UnsafePointer<Float>, frames: Int, fileChannels: Int) {
        guard frames > 0 else { return }
        let writer = state.ring.writer
        let outChannels = state.channels
        let map = sources(fileChannels: fileChannels)
        let r = writer.reserve(frames)
        precondition(r.frames == frames, "playback ring space was checked before reading")
        if fileChannels == outChannels && map.enumerated().allSatisfy({ $0.offset == $0.element }) {
            // Same layout: two straight copies.
            r.first.update(from: source, count: r.firstFrames * outChannels)
            r.second.update(from: source + r.firstFrames * outChannels, count: r.secondFrames * outChannels)
        } else {
            map.withUnsafeBufferPointer { m in
                for i in 0..<frames {
                    let src = source + i * fileChannels
                    let dst = r.sample(frame: i, channel: 0)
                    for o in 0..<outChannels { dst[o] = m[o] >= 0 ? src[m[o]] : 0 }
                }
            }
        }
        writer.commit(frames)
    }
}
