import Foundation
import Presets
import SoundFile

// The files of a take: their names, the chunks they are cut into, their BWF header, the report written in place and
// the progress published for status readers.
extension TakeFiles {
    /// "name.wav" -> "name+1.wav".
    static func variant(_ path: String, _ n: Int) -> String {
        let ns = path as NSString
        return ns.deletingPathExtension + "+\(n)." + ns.pathExtension
    }

    /// Whether a file of take `number` named with `variant` (see `ActiveTake.nameVariant`) is there already: its
    /// report, or its first chunk's files.
    func takeFilesExist(_ number: Int, date: Date, variant: Int = 0) -> Bool {
        let fm = FileManager.default
        if fm.fileExists(atPath: path(take: number, date: date, channel: nil, chunk: nil, ext: "json",
                                      variant: variant)) { return true }
        let chunk: Int? = (rotateFrames != nil || config.rotateBytes != nil || config.rotateOnClock) ? 1 : nil
        let channels: [String?] = config.stems ? portNames.map { $0 } : [nil]
        return channels.contains { fm.fileExists(atPath: path(take: number, date: date, channel: $0, chunk: chunk,
                                                               ext: config.format.container.fileExtension,
                                                               variant: variant)) }
    }

    /// The take's number and name variant: the first number from `nextTakeNumber` whose files are not there yet
    /// (only a template with `{take}` names numbers apart, and at most `maxTakeSkips` are tried), then the first
    /// free `+N` of that number's names. Nil when `maxNameVariants` of them are taken as well. Every loop is bounded:
    /// a template without `{take}` used to try numbers for ever, all of them naming the same taken file.
    func freeTakeName(from first: Int, date: Date) -> (number: Int, variant: Int)? {
        var number = first
        if FileNameTemplate(config.template).namesTakes {
            var skipped = 0
            while skipped < TakeFiles.maxTakeSkips && takeFilesExist(number, date: date) {
                number += 1
                skipped += 1
            }
        }
        for variant in 0...TakeFiles.maxNameVariants where !takeFilesExist(number, date: date, variant: variant) {
            return (number, variant)
        }
        return nil
    }

    /// A file of the take: the template's name for it, with `variant` as a `+N` suffix (0: none).
    func path(take: Int, date: Date, channel: String?, chunk: Int?, ext: String, variant: Int = 0) -> String {
        let name = FileNameTemplate(config.template).render(
            .init(session: config.session, take: take, date: date, channel: channel, chunk: chunk), fileExtension: ext)
        let full = (config.directory as NSString).appendingPathComponent(name)
        return variant > 0 ? TakeFiles.variant(full, variant) : full
    }

    /// The BWF `bext` of a chunk whose first frame was captured at `date`.
    func broadcastInfo(_ t: ActiveTake, date: Date) -> BroadcastInfo {
        let midnight = Calendar.current.startOfDay(for: date)
        let dayFormatter = DateFormatter()
        dayFormatter.locale = Locale(identifier: "en_US_POSIX")
        dayFormatter.dateFormat = "yyyy-MM-dd"
        let timeFormatter = DateFormatter()
        timeFormatter.locale = Locale(identifier: "en_US_POSIX")
        timeFormatter.dateFormat = "HH:mm:ss"
        return BroadcastInfo(timeReference: UInt64(max(0, date.timeIntervalSince(midnight) * Double(sampleRate))),
                             description: "\(config.session) take \(t.number)", originator: "Tandem",
                             originationDate: dayFormatter.string(from: date),
                             originationTime: timeFormatter.string(from: date))
    }

    func openChunk(_ t: ActiveTake) {
        let rotating = rotateFrames != nil || config.rotateBytes != nil || t.clock != nil
        let (previousIndex, previousStart) = (t.chunkIndex, t.chunkStart)
        t.chunkIndex += 1
        t.chunkStart = t.framesWritten
        let chunk: Int? = rotating ? t.chunkIndex : nil
        let names: [String?] = config.stems ? portNames.map { $0 } : [nil]
        let position = t.start - t.compensation + t.framesWritten
        let bext = broadcastInfo(t, date: t.context.anchor.wallClock(at: position))
        var writers: [SoundFileWriter] = []
        for channel in names {
            let base = path(take: t.number, date: t.chunkDate ?? t.date, channel: channel, chunk: chunk,
                            ext: config.format.container.fileExtension, variant: t.nameVariant)
            var attempt = 0
            while true {
                let candidate = attempt == 0 ? base : TakeFiles.variant(base, attempt)
                do {
                    let writer = try SoundFileWriter(path: candidate, format: config.format,
                                                     channels: config.stems ? 1 : channels,
                                                     sampleRate: sampleRate, broadcast: bext)
                    // Stems share the step: one file per channel writes back as often as one wide file would.
                    writer.writebackBytes = max(SoundFileWriter.recordingWriteback / max(1, names.count), 16 << 10)
                    // A wide file's pieces go to the disk past the page cache (a stem's 50 ms are too small to).
                    writer.writeUnbuffered()
                    writers.append(writer)
                    break
                } catch where error.code == .alreadyExists && attempt < TakeFiles.maxNameVariants {
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
        if let failure = writeSidecar(t), !t.sidecar.written {
            // The report cannot be written (a disk full at the take's start): no take is kept without its report, so
            // the files just made for it go again (they are this take's own: opened new a moment ago).
            for w in writers {
                try? w.close()
                unlink(w.path)
            }
            t.writers = []
            t.report.chunks.removeLast()
            (t.chunkIndex, t.chunkStart) = (previousIndex, previousStart)
            t.failed = "the take's report cannot be written: \(failure)"
            return
        }
        if t.chunkIndex > 1 { emit(.chunkStarted(take: t.number, chunk: t.chunkIndex, files: writers.map(\.path))) }
    }

    func closeChunk(_ t: ActiveTake) {
        let paths = t.writers.map(\.path)
        for w in t.writers {
            do { try w.close() } catch { t.failed = t.failed ?? error.description }
        }
        t.closedChunkBytes += ActiveTake.bytesOnDisk(paths)
        if !t.report.chunks.isEmpty {
            let last = t.report.chunks.count - 1
            t.report.chunks[last].frames = t.framesWritten - t.chunkStart
            writeCues(t, chunk: last, includingEnd: false)
            identify(t, chunk: last)
            // After a failed write the files hold fewer frames than were handed to them (what did not fit, or a
            // block the close could not write out): the report counts what they hold, never more.
            if t.failed != nil {
                let held = t.report.chunks[last].identity?.map { $0?.frames ?? 0 }.min() ?? 0
                if held < t.report.chunks[last].frames {
                    logger.warning("the chunk holds fewer frames than were written to it", metadata: [
                        "take": "\(t.number)", "written": "\(t.report.chunks[last].frames)", "held": "\(held)"])
                    t.report.chunks[last].frames = held
                    t.framesWritten = t.chunkStart + held
                }
            }
        }
        t.writers = []
    }

    /// Records what the closed chunk's files are now (`TakeReport.Chunk.identity`): after the chunk is closed, and
    /// again whenever its files are written after that (cue points). A file that cannot be read back gets null (and
    /// counts as holding no frames), so retention never deletes it.
    func identify(_ t: ActiveTake, chunk index: Int) {
        guard t.report.chunks.indices.contains(index) else { return }
        let ids = t.report.chunks[index].files.map { FileIdentity.of(path: $0) }
        if ids.contains(where: { $0 == nil }) {
            logger.warning("a closed chunk file cannot be read back", metadata: [
                "take": "\(t.number)", "files": "\(t.report.chunks[index].files.joined(separator: " "))"])
        }
        t.report.chunks[index].identity = ids
    }

    /// Starts the next chunk file of the take at its next frame.
    public func rotate(_ t: ActiveTake) {
        closeChunk(t)
        t.report.frames = t.framesWritten
        openChunk(t)
        if let failure = t.failed {
            finish(t, end: .diskError, detail: failure)
        } else {
            applyRetention()
        }
    }

    /// Writes the take's report; returns the failure, in words, or nil.
    @discardableResult
    func writeSidecar(_ t: ActiveTake) -> String? {
        var r = t.report
        r.frames = t.framesWritten
        if !r.chunks.isEmpty && !t.writers.isEmpty { r.chunks[r.chunks.count - 1].frames = t.framesWritten - t.chunkStart }
        do { try t.sidecar.write(r.json()) } catch {
            logger.warning("cannot write take report", metadata: ["error": "\(error)"])
            return "\(error)"
        }
        return nil
    }

    /// Publishes the take's progress for status readers. The byte count is arithmetic for PCM formats and a plain
    /// stat() at most once per second of audio otherwise (this runs after every write).
    func publish(_ t: ActiveTake) {
        if let width = TakeFiles.bytesPerSample(config.format) {
            t.bytesKnown = t.framesWritten * width * channels
                + TakeFiles.statusHeaderBytes * max(1, t.writers.count) * t.chunkIndex
        } else if t.framesWritten - t.bytesCheckedAt >= sampleRate || t.bytesKnown == 0 {
            t.bytesKnown = t.closedChunkBytes + t.fileBytes()
            t.bytesCheckedAt = t.framesWritten
        }
        let s = TakeStatus(take: t.number, frames: t.framesWritten, files: t.writers.map(\.path), bytes: t.bytesKnown)
        published.withLock { $0 = s }
    }
}
