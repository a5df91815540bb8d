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
/// The unit is a chunk (one file, or one per channel with stems) as a take's report lists it, oldest first. Only a
/// file Tandem can prove it wrote is deleted: the report that lists it names this session, and records what the
/// file was when its chunk closed (`FileIdentity`: device, inode, size, modification time, frames), and the file
/// still is exactly that. What it never deletes:
/// - a file no report of this session lists, a file outside the session folder (symlinked folders included), a
///   symbolic link, a folder, a file listed by two reports, a file whose report records no identity (an older
///   version's report, a chunk never closed) or that no longer matches it (replaced, edited, touched, cut);
/// - a take still being written (its report says `"ended": "recording"`): none of its chunks, nor its report; with
///   `closedChunksOfRunningTake` only its last chunk (the one being written) and its report;
/// - a chunk that ended, or whose file was modified, less than `guardSeconds` ago;
/// - a report while any file it lists is still there: a finished take's report goes only in the pass that deleted
///   its last chunk, so a report whose files were lost some other way stays (it is all that is left of the take).
/// Every deletion (or, in a dry run, every deletion it would make), and every chunk kept for a failed proof, is a
/// line in `<session>.retention.log` in the folder, written at the end of the pass (when its deletions made room).
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
        let absolute = directory.hasPrefix("/") ? directory
            : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(directory)
        self.directory = (absolute as NSString).standardizingPath
        self.session = session
        self.policy = policy
    }

    /// One chunk a report lists.
    public struct Chunk: Sendable, Equatable {
        public var report: String
        public var take: Int
        public var index: Int
        /// Absolute paths (a relative one in a report is taken against the session folder).
        public var files: [String]
        /// What the report recorded of each file when the chunk closed (nil: nothing recorded).
        public var identity: [FileIdentity?]?
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
        /// Chunks the policy wanted gone that were kept because they could not be proven Tandem's, with why.
        public var kept: [String] = []
        /// Files that could not be removed, and a log that could not be written, with why.
        public var failures: [String] = []
        /// The pass's log lines when the log could not be written (the recorder logs them instead).
        public var unlogged: [String] = []
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
            guard Self.isRegularFile(path), let report = try? TakeReport.read(from: path), report.session == session,
                  let started = Self.parseDate(report.startedAt), report.sampleRate > 0 else { continue }
            for (i, c) in report.chunks.enumerated() {
                let files = c.files.map { Self.absolute($0, in: directory) }
                let bytes = files.reduce(Int64(0)) { $0 + Self.size($1) }
                let endFrame = Double(max(0, c.startFrame)) + Double(max(0, c.frames))
                let end = started.addingTimeInterval(min(endFrame / Double(report.sampleRate), 1e10))
                out.append(Chunk(report: path, take: report.take, index: i, files: files,
                                 identity: c.identity?.count == files.count ? c.identity : nil, bytes: bytes,
                                 endedAt: end, writing: report.ended == .recording && i == report.chunks.count - 1,
                                 running: report.ended == .recording))
            }
        }
        return out.sorted { ($0.endedAt, $0.report, $0.index) < ($1.endedAt, $1.report, $1.index) }
    }

    /// Whether a chunk may be deleted at all, and if not, why. `claims`: how many reports list each file.
    func protection(_ c: Chunk, at now: Date, claims: [String: Int] = [:]) -> String? {
        held(c, at: now) ?? unproven(c, claims: claims)
    }

    /// Why the policy keeps the chunk whoever wrote it (the take being written, the guard time), or nil.
    func held(_ c: Chunk, at now: Date) -> String? {
        if c.writing { return "being written" }
        if c.running && !policy.closedChunksOfRunningTake { return "part of the take being written" }
        if now.timeIntervalSince(c.endedAt) < policy.guardSeconds { return "younger than the guard time" }
        for f in c.files {
            if let m = Self.modified(f), now.timeIntervalSince(m) < policy.guardSeconds { return "modified recently" }
        }
        return nil
    }

    /// Why the chunk's files cannot be proven the ones Tandem wrote, or nil when every file still there can.
    func unproven(_ c: Chunk, claims: [String: Int]) -> String? {
        guard let identity = c.identity else {
            return "its report records no identity of its files (a chunk never closed, or an older version's report)"
        }
        for (f, id) in zip(c.files, identity) where Self.exists(f) {
            if !Self.isInside(f, directory) { return "\(f): not in the session folder" }
            if (claims[f] ?? 0) > 1 { return "\(f): listed by more than one report" }
            guard let id else { return "\(f): could not be read back when its chunk closed" }
            if let why = id.mismatch(at: f) { return "\(f): \(why)" }
        }
        return nil
    }

    /// Decides and (unless a dry run) deletes; logs every deletion as it happens.
    @discardableResult
    public func apply() -> Outcome {
        let t = now()
        let stamp = ISO8601DateFormatter().string(from: t)
        var outcome = Outcome()
        outcome.dryRun = policy.dryRun
        let chunks = scan()
        var claims: [String: Int] = [:]
        for c in chunks {
            for f in Set(c.files) { claims[f, default: 0] += 1 }
        }
        // Chunks none of whose files are left (deleted by an earlier pass, or by hand) count as gone.
        var gone = Set(chunks.indices.filter { i in !chunks[i].files.contains { Self.exists($0) } })
        var deletedHere = Set<Int>()
        var keptLogged = Set<Int>()
        var freed: Int64 = 0
        let action = policy.dryRun ? "would-delete" : "deleted"

        // The pass's lines go into the log in one write at its end, when its deletions have made room (a line per
        // deletion as it happened took the disk's freed room bit by bit, so more had to go). A log that cannot be
        // written is a failure of the outcome, which the recorder logs with every line.
        var lines: [String] = []
        func log(_ line: String) { lines.append("\(stamp)\t\(line)\n") }

        /// Deletes chunk `i` if it may go; false when it is protected.
        func delete(_ i: Int, _ reason: String) -> Bool {
            let c = chunks[i]
            if held(c, at: t) != nil { return false }
            if let why = unproven(c, claims: claims) {
                // Wanted gone, but not provably Tandem's: kept, and said once per pass.
                if keptLogged.insert(i).inserted {
                    outcome.kept.append("take \(c.take) chunk \(c.index + 1): \(why)")
                    log("kept\ttake \(c.take) chunk \(c.index + 1)\t\(reason), but \(why)")
                }
                return false
            }
            var failed = false
            if !policy.dryRun {
                for f in c.files where Self.exists(f) {
                    if unlink(f) != 0 {
                        outcome.failures.append("\(f): \(String(cString: strerror(errno)))")
                        failed = true
                    }
                }
            }
            gone.insert(i)
            deletedHere.insert(i)
            freed += c.bytes
            outcome.deleted.append(Deletion(chunk: c, reason: reason))
            log("\(action)\ttake \(c.take) chunk \(c.index + 1)\t\(c.bytes) bytes\t"
                + "ended \(ISO8601DateFormatter().string(from: c.endedAt))\t\(reason)\t"
                + c.files.joined(separator: " "))
            if failed { log("failed\ttake \(c.take) chunk \(c.index + 1)\tnot every file could be removed") }
            return true
        }

        if let keep = policy.keepSeconds {
            for i in chunks.indices where !gone.contains(i) && t.timeIntervalSince(chunks[i].endedAt) > keep {
                _ = delete(i, "older than \(Self.describe(seconds: keep))")
            }
        }
        if let target = policy.minFreeBytes {
            // A dry run deletes nothing, so what it would free is added to what the file system reports.
            func free() -> Int64? { freeBytes(directory).map { $0 + (policy.dryRun ? freed : 0) } }
            for i in chunks.indices where !gone.contains(i) && chunks[i].bytes > 0 {
                guard let f = free(), f < target else { break }
                _ = delete(i, "free space under \(Self.describe(bytes: target))")
            }
            if let f = free(), f < target { outcome.freeSpaceShort = true }
        }

        // A finished take's report goes in the pass that deleted its last chunk, once no file it lists is left.
        let byReport = Dictionary(grouping: chunks.indices, by: { chunks[$0].report })
        for (report, indices) in byReport.sorted(by: { $0.key < $1.key })
        where indices.allSatisfy({ gone.contains($0) }) && indices.contains(where: { deletedHere.contains($0) }) {
            guard !indices.contains(where: { chunks[$0].running }) else { continue }
            if !policy.dryRun {
                let left = indices.flatMap { chunks[$0].files }.filter { Self.exists($0) || Self.exists(
                    (directory as NSString).appendingPathComponent(($0 as NSString).lastPathComponent)) }
                if !left.isEmpty {
                    log("kept\treport\t\(report)\tits files are still there: \(left.joined(separator: " "))")
                    continue
                }
                if unlink(report) != 0 {
                    outcome.failures.append("\(report): \(String(cString: strerror(errno)))")
                    log("failed\treport\t\(report)\t\(String(cString: strerror(errno)))")
                    continue
                }
            }
            outcome.reportsDeleted.append(report)
            log("\(action)\treport\t\(report)")
        }
        if outcome.freeSpaceShort, let target = policy.minFreeBytes {
            log("short\tfree space stays under \(Self.describe(bytes: target)): nothing else may be deleted")
        }
        if !lines.isEmpty, let failure = appendLog(lines.joined()) {
            outcome.failures.append(failure)
            outcome.unlogged = lines
        }
        return outcome
    }

    /// Appends `text` to the retention log; the failure in words, or nil.
    func appendLog(_ text: String) -> String? {
        let fd = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { return "\(logPath): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return n == bytes.count ? nil : "\(logPath): \(n < 0 ? String(cString: strerror(errno)) : "short write")"
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
        return lstat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    static func modified(_ path: String) -> Date? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
    }

    /// Whether `path` names a file directly in `directory`, with no symbolic link on the way (the folder's own path
    /// may hold links: both are resolved).
    static func isInside(_ path: String, _ directory: String) -> Bool {
        let parent = (path as NSString).deletingLastPathComponent
        guard let a = realPath(parent), let b = realPath(directory) else { return false }
        return a == b
    }

    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// `name` from a report: absolute as it is, relative against the session folder.
    static func absolute(_ name: String, in directory: String) -> String {
        let p = name.hasPrefix("/") ? name : (directory as NSString).appendingPathComponent(name)
        return (p as NSString).standardizingPath
    }

    /// Whether anything (a file, a folder, a link, even a dangling one) is at `path`.
    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
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
