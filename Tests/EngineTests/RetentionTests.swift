@testable import Takes
import Testing
import Foundation
@testable import Engine
import TestSupport

/// Retention over 30 simulated days of hourly chunks: exactly what the policy promises is deleted, the running take
/// and other sessions' files are never touched, and the log lists every deletion.
@Suite struct RetentionTests {
    static let rate = 48_000
    static let t0 = ISO8601DateFormatter().date(from: "2026-10-01T00:00:00Z")!
    /// Every simulated chunk is a real WAV of this many frames (16-bit mono), so its identity can be proven.
    static let chunkFrames = 4_978
    static let chunkBytes: Int = {
        let path = TestEnvironment.temporaryDirectory("retention-size").appendingPathComponent("one.wav").path
        try? TestEnvironment.writeChunkWAV(path: path, frames: chunkFrames, modified: Date())
        return Int(Retention.size(path))
    }()
    /// Day 30, 10.5 hours in: the running take (day 30) has closed 10 hourly chunks and is writing its 11th.
    static let now = t0.addingTimeInterval(29 * 86_400 + 10.5 * 3600)

    struct Folder {
        var dir: String
        /// Files by (take, chunk) and the time each chunk ended.
        var files: [String: (take: Int, chunk: Int, ended: Date)] = [:]
        var foreign: [String] = []
        var running: Set<String> = []
        var reports: [Int: String] = [:]
    }

    static func report(session: String, take: Int, started: Date, chunks: [TakeReport.Chunk], running: Bool) -> TakeReport {
        TakeReport(tandemVersion: "test", session: session, take: take, sampleRate: rate, channels: 1, format: "wav",
                   sampleFormat: "int16", stems: false, startedAt: ISO8601DateFormatter().string(from: started),
                   startFrameTime: 0, streamStart: 0, prerollFrames: 0, ports: [], chunks: chunks,
                   frames: chunks.reduce(0) { $0 + $1.frames }, xruns: 0, droppedFrames: 0, drops: [],
                   ended: running ? .recording : .stopped)
    }

    /// A closed chunk as the recorder leaves it: the file, and its report entry with the file's identity (`frames`
    /// is what the entry claims: an hour, where the file holds a few thousand).
    static func chunk(_ path: String, startFrame: Int, frames: Int, modified: Date, closed: Bool = true) throws -> TakeReport.Chunk {
        try TestEnvironment.writeChunkWAV(path: path, frames: chunkFrames, modified: modified)
        var c = TakeReport.Chunk(files: [path], startFrame: startFrame, frames: frames)
        if closed { c.identity = [FileIdentity.of(path: path)] }
        return c
    }

    static func touch(_ path: String, bytes: Int, modified: Date) throws {
        try Data(count: bytes).write(to: URL(fileURLWithPath: path))
        let t = modified.timeIntervalSince1970
        var times = [timeval(tv_sec: Int(t), tv_usec: 0), timeval(tv_sec: Int(t), tv_usec: 0)]
        #expect(utimes(path, &times) == 0)
    }

    /// 29 finished daily takes of 24 hourly chunks, a running take on day 30, another session's old take, a file
    /// no report names, and a report naming a file outside the folder.
    static func makeFolder(_ dir: String) throws -> Folder {
        var f = Folder(dir: dir)
        for take in 1...30 {
            let started = t0.addingTimeInterval(Double(take - 1) * 86_400)
            let isRunning = take == 30
            let count = isRunning ? 11 : 24
            var chunks: [TakeReport.Chunk] = []
            for c in 0..<count {
                let path = "\(dir)/logger-\(String(format: "%03d", take))-\(String(format: "%02d", c)).wav"
                let frames = isRunning && c == count - 1 ? 1_800 * rate : 3_600 * rate
                let ended = started.addingTimeInterval(Double(c * 3_600) + Double(frames / rate))
                chunks.append(try chunk(path, startFrame: c * 3_600 * rate, frames: frames, modified: ended,
                                        closed: !(isRunning && c == count - 1)))
                f.files[path] = (take, c, ended)
                if isRunning { f.running.insert(path) }
            }
            let reportPath = "\(dir)/logger-\(String(format: "%03d", take)).json"
            try report(session: "logger", take: take, started: started, chunks: chunks, running: isRunning).json()
                .write(to: URL(fileURLWithPath: reportPath))
            f.reports[take] = reportPath
        }
        // Another session's old take, a stray old file, and a report of ours naming a file outside the folder.
        let other = "\(dir)/studio-001.wav"
        let otherChunk = try chunk(other, startFrame: 0, frames: 3_600 * rate, modified: t0)
        try report(session: "studio", take: 1, started: t0, chunks: [otherChunk],
                   running: false).json().write(to: URL(fileURLWithPath: "\(dir)/studio-001.json"))
        let stray = "\(dir)/notes.wav"
        try TestEnvironment.writeChunkWAV(path: stray, frames: chunkFrames, modified: t0)
        let outsideDir = TestEnvironment.temporaryDirectory("retention-outside").path
        let outside = "\(outsideDir)/elsewhere.wav"
        let outsideChunk = try chunk(outside, startFrame: 0, frames: 3_600 * rate, modified: t0)
        try report(session: "logger", take: 0, started: t0.addingTimeInterval(-86_400),
                   chunks: [outsideChunk], running: false).json()
            .write(to: URL(fileURLWithPath: "\(dir)/logger-000.json"))
        f.foreign = [other, "\(dir)/studio-001.json", stray, outside]
        return f
    }

    static func retention(_ dir: String, _ policy: RetentionPolicy, capacity: Int64? = nil) -> Retention {
        var r = Retention(directory: dir, session: "logger", policy: policy)
        r.now = { now }
        if let capacity {
            // A disk of `capacity` bytes holding what the folder holds.
            r.freeBytes = { d in capacity - used(d) }
        }
        return r
    }

    /// Bytes of the folder's files but the retention log (the simulated disk holds the takes).
    static func used(_ d: String) -> Int64 {
        ((try? FileManager.default.contentsOfDirectory(atPath: d)) ?? []).filter { !$0.hasSuffix(".retention.log") }
            .reduce(Int64(0)) { $0 + Retention.size("\(d)/\($1)") }
    }

    static func exists(_ p: String) -> Bool { FileManager.default.fileExists(atPath: p) }

    static func logLines(_ r: Retention) -> [String] {
        ((try? String(contentsOfFile: r.logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test func keepsSevenDaysExactly() throws {
        let dir = TestEnvironment.temporaryDirectory("retention-age").path
        let f = try Self.makeFolder(dir)
        let r = Self.retention(dir, RetentionPolicy(keepSeconds: 7 * 86_400, guardSeconds: 2 * 3600))
        let outcome = r.apply()
        let cutoff = Self.now.addingTimeInterval(-7 * 86_400)
        let expected = Set(f.files.filter { $0.value.ended < cutoff }.keys)
        #expect(expected.count == 22 * 24 + 10)
        #expect(Set(outcome.deleted.flatMap(\.chunk.files)) == expected)
        for (path, _) in f.files { #expect(Self.exists(path) == !expected.contains(path), "\(path)") }
        for p in f.running { #expect(Self.exists(p)) }
        for p in f.foreign { #expect(Self.exists(p)) }
        // Reports of takes 1...22 went with their last chunks; take 23 keeps 14 chunks and its report.
        #expect(Set(outcome.reportsDeleted) == Set((1...22).compactMap { f.reports[$0] }))
        #expect(Self.exists(f.reports[23]!) && Self.exists(f.reports[30]!))
        // The log lists every deletion, one line each.
        let lines = Self.logLines(r)
        #expect(lines.filter { $0.contains("\tdeleted\ttake ") }.count == expected.count)
        for path in expected { #expect(lines.contains { $0.hasSuffix("\t" + path) }, "\(path) not in the log") }
        #expect(lines.filter { $0.contains("\tdeleted\treport\t") }.count == 22)
        // A second pass has nothing left to do.
        #expect(r.apply().deleted.isEmpty)
    }

    @Test func freesExactlyEnoughOldestFirst() throws {
        let dir = TestEnvironment.temporaryDirectory("retention-free").path
        let f = try Self.makeFolder(dir)
        // The disk is full (0 bytes free); 100 chunks must go, the oldest first, and not one more.
        let target = Int64(100 * Self.chunkBytes)
        let r = Self.retention(dir, RetentionPolicy(minFreeBytes: target, guardSeconds: 2 * 3600), capacity: Self.used(dir))
        #expect(r.freeBytes(dir) == 0)
        let outcome = r.apply()
        let oldest = f.files.sorted { ($0.value.ended, $0.key) < ($1.value.ended, $1.key) }.map(\.key)
        #expect(!outcome.freeSpaceShort)
        #expect(outcome.deleted.flatMap(\.chunk.files) == Array(oldest.prefix(100)))
        #expect(r.freeBytes(dir)! >= target)
        // Takes 1 to 4 (96 chunks) are gone with their reports; take 5 lost its first 4 chunks.
        #expect(Set(outcome.reportsDeleted) == Set((1...4).compactMap { f.reports[$0] }))
        for p in f.running + f.foreign { #expect(Self.exists(p)) }
    }

    @Test func anUnreachableTargetNeverReachesTheRunningTake() throws {
        let dir = TestEnvironment.temporaryDirectory("retention-short").path
        let f = try Self.makeFolder(dir)
        let r = Self.retention(dir, RetentionPolicy(minFreeBytes: 1 << 40, guardSeconds: 2 * 3600), capacity: 1 << 30)
        let outcome = r.apply()
        #expect(outcome.freeSpaceShort)
        #expect(outcome.deleted.count == 29 * 24)
        for p in f.running + f.foreign { #expect(Self.exists(p)) }
        #expect(Self.logLines(r).last?.contains("\tshort\t") == true)

        // Allowed to take closed chunks of the running take: all but the one being written and the two within the
        // guard time (they ended 0.5 h and 1.5 h ago).
        let r2 = Self.retention(dir, RetentionPolicy(minFreeBytes: 1 << 40, guardSeconds: 2 * 3600,
                                                     closedChunksOfRunningTake: true), capacity: 1 << 30)
        let o2 = r2.apply()
        let kept = f.running.filter { Self.exists($0) }.sorted()
        #expect(kept == f.running.sorted().suffix(3))
        #expect(o2.deleted.count == 8)
        #expect(Self.exists(f.reports[30]!))
    }

    @Test func aDryRunDecidesTheSameAndDeletesNothing() throws {
        let dirA = TestEnvironment.temporaryDirectory("retention-dry").path
        let dirB = TestEnvironment.temporaryDirectory("retention-wet").path
        let a = try Self.makeFolder(dirA)
        _ = try Self.makeFolder(dirB)
        let policy = RetentionPolicy(keepSeconds: 10 * 86_400, minFreeBytes: Int64(50 * Self.chunkBytes), guardSeconds: 3600)
        var dry = policy
        dry.dryRun = true
        let capacity = Self.used(dirA)
        let wouldDelete = Self.retention(dirA, dry, capacity: capacity).apply()
        let didDelete = Self.retention(dirB, policy, capacity: capacity).apply()
        #expect(wouldDelete.deleted.map { ($0.chunk.files[0] as NSString).lastPathComponent }
                == didDelete.deleted.map { ($0.chunk.files[0] as NSString).lastPathComponent })
        #expect(wouldDelete.deleted.count > 19 * 24)
        for p in a.files.keys { #expect(Self.exists(p)) }
        let lines = Self.logLines(Self.retention(dirA, dry))
        #expect(lines.filter { $0.contains("\twould-delete\ttake ") }.count == wouldDelete.deleted.count)
        #expect(!lines.contains { $0.contains("\tdeleted\t") })
    }

    /// The same on a real small tmpfs (root only): free space measured by statvfs.
    @Test(.enabled(if: getuid() == 0)) func onASmallTmpfs() throws {
        let mount = TestEnvironment.temporaryDirectory("retention-tmpfs").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 4)
        defer { TestEnvironment.unmount(mount) }
        var chunks: [TakeReport.Chunk] = []
        let started = Self.now.addingTimeInterval(-3 * 86_400)
        for c in 0..<72 {
            let path = "\(mount)/logger-001-\(c).wav"
            chunks.append(try Self.chunk(path, startFrame: c * 3_600 * Self.rate, frames: 3_600 * Self.rate,
                                         modified: started.addingTimeInterval(Double((c + 1) * 3600))))
        }
        try Self.report(session: "logger", take: 1, started: started, chunks: chunks, running: false).json()
            .write(to: URL(fileURLWithPath: "\(mount)/logger-001.json"))
        let before = try #require(Retention.statvfsFree(mount))
        var st = stat()
        #expect(stat(chunks[0].files[0], &st) == 0)
        // 20 chunks' pages (the retention log, written after the pass, then takes a page of them).
        let target = before + 20 * Int64(st.st_blocks) * 512
        var r = Retention(directory: mount, session: "logger", policy: RetentionPolicy(minFreeBytes: target, guardSeconds: 3600))
        r.now = { Self.now }
        let outcome = r.apply()
        let after = try #require(Retention.statvfsFree(mount))
        #expect(after + 4096 >= target)
        #expect(outcome.deleted.count == 20)
        #expect(outcome.deleted.map(\.chunk.index) == Array(0..<20))
        #expect(Self.logLines(r).filter { $0.contains("\tdeleted\ttake ") }.count == 20)
    }
}
