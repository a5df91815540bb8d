import Foundation
import Loudness
import SoundFile

/// A render's output file, written where nobody takes it for finished: under a hidden partial name beside its final
/// name (`.NAME.rendering-PID`), finished (closed and synced, so its checksum can be taken), and published by a hard
/// link only then, never over an existing file (the link fails instead). A job that fails removes what it wrote; a
/// killed one leaves only the partial name, which the next render of that output removes once its process is gone
/// (`removeStale`). The report beside it is published the same way and before the audio: an output file is always
/// complete, with its report beside it.
///
/// Every frame written is measured (`meter`: BS.1770 loudness and true peak) on its way to the file, so the report
/// holds the output's loudness without reading the file back.
///
/// Threads: one owner (the job).
public final class RenderOutput: RenderSink {
    let path: String
    let partial: String
    let writer: SoundFileWriter
    /// Measures what is written (nil: a channel count or rate BS.1770 does not measure as one programme).
    let meter: LoudnessMeter?
    /// Or measures it as programmes of neighbouring channels (stereo pairs, when the channels are not one programme).
    let groups: ProgrammeMeters?
    private var finished = false
    private var published = false

    /// Why `path` cannot be a new output (it exists, or its folder does not), or nil.
    static func problem(_ path: String) -> RenderError? {
        if FileManager.default.fileExists(atPath: path) {
            return RenderError(.badInput, "'\(path)' exists: a render never overwrites a file")
        }
        let folder = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        if !folder.isEmpty && !(FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) && isDirectory.boolValue) {
            return RenderError(.badInput, "the folder '\(folder)' of '\(path)' does not exist")
        }
        return nil
    }

    /// The name an output has while process `pid` writes it.
    public static func partialName(_ path: String, pid: Int32 = getpid()) -> String {
        let ns = path as NSString
        return ns.deletingLastPathComponent.isEmpty ? ".\(ns.lastPathComponent).rendering-\(pid)"
            : (ns.deletingLastPathComponent as NSString).appendingPathComponent(".\(ns.lastPathComponent).rendering-\(pid)")
    }

    init(path: String, format: AudioFormat, channels: Int, sampleRate: Int, broadcast: BroadcastInfo?,
         meter: LoudnessMeter? = nil, groups: ProgrammeMeters? = nil) throws(RenderError) {
        if let why = Self.problem(path) { throw why }
        self.path = path
        self.meter = meter
        self.groups = groups
        partial = Self.partialName(path)
        unlink(partial)   // left by a killed render of this process id long ago
        do throws(SoundFileError) {
            writer = try SoundFileWriter(path: partial, format: format, channels: channels, sampleRate: sampleRate,
                                         broadcast: broadcast)
        } catch {
            let kind: RenderError.Kind = error.code == .unsupportedFormat ? .badInput : .disk
            throw RenderError(kind, "cannot write '\(path)': \(error.message)")
        }
    }

    deinit { discard() }

    /// Writes interleaved frames. A full disk or an I/O error throws (`disk`).
    func write(_ samples: UnsafePointer<Float>, frames: Int) throws(RenderError) {
        meter?.add(samples, frames: frames, stride: writer.channels)
        groups?.add(samples, frames: frames)
        do throws(SoundFileError) { try writer.write(samples, frames: frames) } catch {
            throw RenderError(.disk, "cannot write '\(path)': \(error.message)")
        }
    }

    /// Closes and syncs the file under its partial name; returns that name (its checksum is taken there, before the
    /// file is published).
    func finish() throws(RenderError) -> String {
        do throws(SoundFileError) {
            writer.flush()
            try writer.close()
        } catch {
            throw RenderError(.disk, "cannot finish '\(path)': \(error.message)")
        }
        let fd = open(partial, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            let synced = fsync(fd)
            close(fd)
            if synced != 0 { throw RenderError(.disk, "cannot sync '\(path)': \(String(cString: strerror(errno)))") }
        }
        finished = true
        return partial
    }

    /// Gives the finished file its final name.
    func publish() throws(RenderError) {
        if !finished { _ = try finish() }
        try Self.link(partial, to: path)
        published = true
        unlink(partial)
    }

    /// Removes what an unfinished output wrote (its partial file); a published output stays. Safe to call twice.
    func discard() {
        guard !published else { return }
        if !finished { try? writer.close() }
        unlink(partial)
    }

    /// Removes the partial files of `path` left by render processes that are gone (killed, or crashed while not
    /// isolated): hidden files `.NAME.rendering-PID` in the output's own folder, which only a render writes, whose
    /// process no longer exists. Returns what it removed.
    @discardableResult
    public static func removeStale(for path: String) -> [String] {
        let ns = path as NSString
        let folder = ns.deletingLastPathComponent
        let prefix = ".\(ns.lastPathComponent).rendering-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(prefix) {
            let digits = name.dropFirst(prefix.count)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let pid = Int32(digits),
                  pid > 0, kill(pid, 0) != 0 && errno == ESRCH else { continue }
            let full = folder.isEmpty ? name : (folder as NSString).appendingPathComponent(name)
            if unlink(full) == 0 { removed.append(full) }
        }
        return removed
    }

    /// Gives `from` the name `to` without replacing anything there.
    static func link(_ from: String, to: String) throws(RenderError) {
        guard Foundation.link(from, to) == 0 else {
            let e = errno
            if e == EEXIST { throw RenderError(.badInput, "'\(to)' exists (made while rendering): never overwritten") }
            throw RenderError(e == ENOSPC || e == EDQUOT || e == EIO ? .disk : .badInput,
                              "cannot name the output '\(to)': \(String(cString: strerror(e)))")
        }
    }

    /// Writes `data` as a new file `path` the same way (partial name, sync, link).
    static func writeNew(_ data: Data, to path: String) throws(RenderError) {
        let partial = partialName(path)
        unlink(partial)
        let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw RenderError(.disk, "cannot write '\(path)': \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let err = errno
        let synced = written == data.count ? fsync(fd) : -1
        close(fd)
        guard written == data.count, synced == 0 else {
            unlink(partial)
            throw RenderError(.disk, "cannot write '\(path)': " + (written < 0 || synced != 0 ? String(cString: strerror(err)) : "short write"))
        }
        defer { unlink(partial) }
        try link(partial, to: path)
    }
}
