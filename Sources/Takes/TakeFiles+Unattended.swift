import Foundation
import Presets
import SoundFile

// What the files of a take do for takes that run themselves: markers (in the report and as cue points of the chunk
// that holds them), level-trigger facts in the report, and the retention pass after each take or chunk.
// Disk-writer thread.
extension TakeFiles {
    /// Adds a marker at stream position `position` to the running take. Returns the take frame it landed on, or
    /// nil when no take holds that frame.
    @discardableResult
    public func mark(at position: Int, label: String, source: String?) -> Int? {
        guard let t = take, position >= t.start, position < (t.end ?? Int.max) else {
            logger.warning("marker outside any take: not kept", metadata: ["label": "\(label)", "frame": "\(position)"])
            return nil
        }
        let frame = position - t.start
        t.report.markers = (t.report.markers ?? []) + [TakeMarker(frame: frame, label: label, source: source)]
        logger.info("marker", metadata: ["take": "\(t.number)", "frame": "\(frame)", "label": "\(label)"])
        // Frames already in a closed chunk (the writer may have passed the arrival frame and rotated): that chunk's
        // cue points are written again now.
        if let i = t.report.chunks.indices.dropLast().first(where: { i in
            let c = t.report.chunks[i]
            return frame >= c.startFrame && frame < c.startFrame + c.frames
        }) {
            writeCues(t, chunk: i, includingEnd: false)
            identify(t, chunk: i)
        }
        writeSidecar(t)
        return frame
    }

    /// Writes the cue points of the markers that fall into closed chunk `index` into its WAV/RF64 file(s); a marker
    /// on a boundary belongs to the chunk that starts there (`includingEnd`: the take's last chunk takes the marker
    /// at its very end). Other formats keep markers in the report only.
    func writeCues(_ t: ActiveTake, chunk index: Int, includingEnd: Bool) {
        guard config.format.container == .wav || config.format.container == .rf64,
              let markers = t.report.markers, !markers.isEmpty, t.report.chunks.indices.contains(index) else { return }
        let c = t.report.chunks[index]
        let cues = markers.filter { $0.frame >= c.startFrame && ($0.frame < c.startFrame + c.frames
                                                                 || (includingEnd && $0.frame == c.startFrame + c.frames)) }
            .map { CueMarker(frame: $0.frame - c.startFrame, label: $0.label) }
        guard !cues.isEmpty else { return }
        for file in c.files {
            do throws(SoundFileError) { try CueChunks.write(cues, to: file) } catch {
                logger.warning("cannot write cue points", metadata: ["file": "\(file)", "error": "\(error.message)"])
            }
        }
    }

    /// At the end of a take: markers past its last frame are dropped (logged), and one on its very end goes into the
    /// last chunk.
    func finishMarkers(_ t: ActiveTake) {
        guard let markers = t.report.markers, !markers.isEmpty else { return }
        let kept = markers.filter { $0.frame <= t.framesWritten }
        for m in markers where m.frame > t.framesWritten {
            logger.warning("marker after the take's end: not kept", metadata: ["take": "\(t.number)", "label": "\(m.label)"])
        }
        t.report.markers = kept
        if kept.contains(where: { $0.frame == t.framesWritten }), !t.report.chunks.isEmpty {
            writeCues(t, chunk: t.report.chunks.count - 1, includingEnd: true)
            identify(t, chunk: t.report.chunks.count - 1)
        }
    }

    /// Runs the retention policy over the session folder (nothing without one). Every deletion is logged here and in
    /// the folder's retention log.
    public func applyRetention() {
        guard let k = config.retention else { return }
        var r = Retention(directory: config.directory, session: config.session, policy: RetentionPolicy(k))
        r.now = config.clock.real
        let outcome = r.apply()
        for d in outcome.deleted {
            logger.info(outcome.dryRun ? "retention (dry run) would delete" : "retention deleted",
                        metadata: ["take": "\(d.chunk.take)", "chunk": "\(d.chunk.index + 1)", "reason": "\(d.reason)",
                                   "files": "\(d.chunk.files.joined(separator: " "))"])
        }
        for k in outcome.kept { logger.warning("retention kept a chunk it cannot prove Tandem wrote", metadata: ["why": "\(k)"]) }
        for f in outcome.failures { logger.warning("retention could not delete or log", metadata: ["what": "\(f)"]) }
        for line in outcome.unlogged { logger.warning("retention (not in its log)", metadata: ["line": "\(line)"]) }
        if outcome.freeSpaceShort { logger.warning("retention: free space stays under the target; nothing else may go") }
    }

    /// Starts a take the level trigger decided: its first frame is `first` (the trigger's start, or later when the
    /// writer had already passed it), the report carries the trigger frame and level.
    public func beginTriggered(_ s: LevelTrigger.Start, first: Int, compensation: Int, context: TakeContext) -> ActiveTake {
        let t = begin(start: first, at: max(first, s.triggerFrame), context: context)
        t.triggerStart = s
        resolve(t, input: first - compensation, compensation: compensation)
        t.start = first
        t.report.trigger = TakeReport.TriggerInfo(start: s, takeStreamStart: first)
        t.report.prerollFrames = max(0, s.triggerFrame - first)
        return t
    }

    /// The trigger decided the running take's end.
    public func triggerEnded(_ t: ActiveTake, _ e: LevelTrigger.End) {
        t.end = min(t.end ?? Int.max, e.endFrame)
        t.endReason = .trigger
        if var info = t.report.trigger {
            info.ended = e.reason
            info.lastLoudFrame = e.lastLoudFrame.map { $0 - t.start }
            t.report.trigger = info
        }
    }
}
