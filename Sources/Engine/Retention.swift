import Foundation
import Presets
#if canImport(Glibc)
import Glibc
#endif

/// What a retention pass may delete (`[recorder.retention]`).
public struct RetentionPolicy: Sendable, Equatable {
    /// Delete chunks that ended more than this many seconds ago (nil: no age limit).
    public var keepSeconds: Double?
    /// Delete the oldest chunks until the session folder's file system has this many bytes free (nil: no target).
    public var minFreeBytes: Int64?
    /// Never delete a chunk that ended (or whose file was modified) less than this long ago.
    public var guardSeconds: Double
    /// Decide and log, delete nothing.
    public var dryRun: Bool
    /// false (the default): no chunk of a take still being written is deleted. true: only the chunk being written
    /// is kept, so one endless take rotated hourly (a logger) can be kept to N days or to the free-space target.
    public var closedChunksOfRunningTake: Bool

    public init(keepSeconds: Double? = nil, minFreeBytes: Int64? = nil, guardSeconds: Double = 3600, dryRun: Bool = false,
                closedChunksOfRunningTake: Bool = false) {
        self.keepSeconds = keepSeconds
        self.minFreeBytes = minFreeBytes
        self.guardSeconds = guardSeconds
        self.dryRun = dryRun
        self.closedChunksOfRunningTake = closedChunksOfRunningTake
    }
}

/// Applies a retention policy to one session's folder, for unattended recorders whose disk must never fill.
///
/// The unit is a chunk (one file, or one per channel with stems) as a take's report lists it, oldest first. What it
/// never deletes:
/// - anything not listed in a take report (`*.json` beside the takes) that names this session, and any file
///   outside the session folder, whatever a report says;
/// - a take still being written (its report says `"ended": "recording"`): none of its chunks, nor its report; with
///   `closedChunksOfRunningTake` only its last chunk (the one being written) and its report;
/// - a chunk that ended, or whose file was modified, less than `guardSeconds` ago.
/// A finished take's report is deleted with its last remaining chunk. Every deletion (or, in a dry run, every
/// deletion it would make) is appended to `<session>.retention.log` in the folder, one line each.
///
/// Threads: one pass at a time per folder; blocks on the file system. Call it from a worker or the disk writer
/// after a chunk or take is closed, never from the RT thread or the cooperative pool.
public struct Retention {
    public let directory: String
    public let session: String
    public let policy: RetentionPolicy
    /// The clock (injectable for tests).
    public var now: () -> Date = { Date() }
    /// Free bytes on the file system holding `directory` (injectable for tests); nil when unknown.
    public var freeBytes: (String) -> Int64? = Retention.statvfsFree

    public init(directory: String, session: String, policy: RetentionPolicy) {
        self.directory = (directory as NSString).standardizingPath
        self.session = session
        self.policy = policy
    }

    /// One chunk a report lists.
    public struct Chunk: Sendable, Equatable {
        public var report: String
        public var take: Int
        public var index: Int
        public var files: [String]
        public var bytes: Int64
        public var endedAt: Date
        /// Still being written (the last chunk of a running take).
        public var writing: Bool
        /// Part of a take still being written.
        public var running: Bool
    }

    public struct Deletion: Sendable, Equatable {
        public var chunk: Chunk
        /// "older than 7 days", "free space under 2 GiB".
        public var reason: String
    }

    public struct Outcome: Sendable {
        public var deleted: [Deletion] = []
        /// Reports removed with their last chunk.
        public var reportsDeleted: [String] = []
        /// Files that could not be removed, with why.
        public var failures: [String] = []
        /// The free-space target could not be reached with what may be deleted.
        public var freeSpaceShort = false
        public var dryRun = false
    }

    public var logPath: String { (directory as NSString).appendingPathComponent("\(session).retention.log") }

    /// The chunks of this session's takes, oldest first.
    public func scan() -> [Chunk] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var out: [Chunk] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = (directory as NSString).appendingPathComponent(name)
            guard let report = try? TakeReport.read(from: path), report.session == session,
                  let started = Self.parseDate(report.startedAt), report.sampleRate > 0 else { continue }
            for (i, c) in report.chunks.enumerated() {
                let files = c.files.map { $0.hasPrefix("/") ? $0 : (directory as NSString).appendingPathComponent($0) }
                let bytes = files.reduce(Int64(0)) { $0 + Self.size($1) }
                let end = started.addingTimeInterval(Double(c.startFrame + c.frames) / Double(report.sampleRate))
                out.append(Chunk(report: path, take: report.take, index: i, files: files, bytes: bytes, endedAt: end,
                                 writing: report.ended == .recording && i == report.chunks.count - 1,
                                 running: report.ended == .recording))
            }
        }
        return out.sorted { ($0.endedAt, $0.report, $0.index) < ($1.endedAt, $1.report, $1.index) }
    }

    /// Whether a chunk may be deleted at all, and if not, why.
    func protection(_ c: Chunk, at now: Date) -> String? {
        if c.writing { return "being written" }
        if c.running && !policy.closedChunksOfRunningTake { return "part of the take being written" }
        if now.timeIntervalSince(c.endedAt) < policy.guardSeconds { return "younger than the guard time" }
        for f in c.files {
            if !Self.isInside(f, directory) { return "outside the session folder" }
            if let m = Self.modified(f), now.timeIntervalSince(m) < policy.guardSeconds { return "modified recently" }
        }
        return nil
    }

    /// Decides and (unless a dry run) deletes; logs every deletion.
    @discardableResult
    public func apply() -> Outcome {
        let t = now()
        var outcome = Outcome()
        outcome.dryRun = policy.dryRun
        var chunks = scan()
        // Chunks none of whose files are left (deleted by an earlier pass, or by hand) count as gone.
        var gone = Set(chunks.indices.filter { i in !chunks[i].files.contains { FileManager.default.fileExists(atPath: $0) } })
        var freed: Int64 = 0

        func delete(_ i: Int, _ reason: String) {
            let c = chunks[i]
            if !policy.dryRun {
                for f in c.files where FileManager.default.fileExists(atPath: f) {
                    if unlink(f) != 0 { outcome.failures.append("\(f): \(String(cString: strerror(errno)))") }
                }
            }
            gone.insert(i)
            freed += c.bytes
            outcome.deleted.append(Deletion(chunk: c, reason: reason))
        }

        if let keep = policy.keepSeconds {
            for i in chunks.indices where !gone.contains(i) && t.timeIntervalSince(chunks[i].endedAt) > keep
                && protection(chunks[i], at: t) == nil {
                delete(i, "older than \(Self.describe(seconds: keep))")
            }
        }
        if let target = policy.minFreeBytes {
            // A dry run deletes nothing, so what it would free is added to what the file system reports.
            func free() -> Int64? { freeBytes(directory).map { $0 + (policy.dryRun ? freed : 0) } }
            for i in chunks.indices where !gone.contains(i) && chunks[i].bytes > 0 {
                guard let f = free(), f < target else { break }
                if protection(chunks[i], at: t) == nil { delete(i, "free space under \(Self.describe(bytes: target))") }
            }
            if let f = free(), f < target { outcome.freeSpaceShort = true }
        }

        // A finished take's report goes with its last chunk.
        let byReport = Dictionary(grouping: chunks.indices, by: { chunks[$0].report })
        for (report, indices) in byReport.sorted(by: { $0.key < $1.key }) where indices.allSatisfy({ gone.contains($0) }) {
            guard !indices.contains(where: { chunks[$0].running }) else { continue }
            if !policy.dryRun && unlink(report) != 0 {
                outcome.failures.append("\(report): \(String(cString: strerror(errno)))")
                continue
            }
            outcome.reportsDeleted.append(report)
        }
        chunks.removeAll()
        log(outcome, at: t)
        return outcome
    }

    /// Appends one line per deletion: time, action, bytes, take/chunk, reason, files.
    func log(_ outcome: Outcome, at t: Date) {
        guard !outcome.deleted.isEmpty || !outcome.reportsDeleted.isEmpty || outcome.freeSpaceShort
              || !outcome.failures.isEmpty else { return }
        let stamp = ISO8601DateFormatter().string(from: t)
        let action = outcome.dryRun ? "would-delete" : "deleted"
        var text = ""
        for d in outcome.deleted {
            text += "\(stamp)\t\(action)\ttake \(d.chunk.take) chunk \(d.chunk.index + 1)\t\(d.chunk.bytes) bytes\t"
                + "ended \(ISO8601DateFormatter().string(from: d.chunk.endedAt))\t\(d.reason)\t"
                + d.chunk.files.joined(separator: " ") + "\n"
        }
        for r in outcome.reportsDeleted { text += "\(stamp)\t\(action)\treport\t\(r)\n" }
        for f in outcome.failures { text += "\(stamp)\tfailed\t\(f)\n" }
        if outcome.freeSpaceShort, let target = policy.minFreeBytes {
            text += "\(stamp)\tshort\tfree space stays under \(Self.describe(bytes: target)): nothing else may be deleted\n"
        }
        let fd = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    // MARK: Helpers

    public static func statvfsFree(_ path: String) -> Int64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        let free = Double(s.f_bavail) * Double(s.f_frsize)
        return free.isFinite && free < 9e18 ? Int64(free) : nil
    }

    static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    static func modified(_ path: String) -> Date? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
    }

    static func isInside(_ path: String, _ directory: String) -> Bool {
        let p = (path as NSString).standardizingPath
        return p.hasPrefix(directory.hasSuffix("/") ? directory : directory + "/") && !p.contains("/../")
    }

    static func parseDate(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        if let d = f.date(from: s) { return d }
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s)
    }

    static func describe(seconds: Double) -> String {
        seconds >= 86_400 && seconds.truncatingRemainder(dividingBy: 86_400) == 0 ? "\(Limits.number(seconds / 86_400)) days"
            : "\(Limits.number(seconds)) s"
    }

    static func describe(bytes: Int64) -> String {
        bytes >= 1 << 30 ? String(format: "%.1f GiB", Double(bytes) / Double(1 << 30))
            : String(format: "%.1f MiB", Double(bytes) / Double(1 << 20))
    }
}
