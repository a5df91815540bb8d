@testable import Takes
import Testing
import Foundation
@testable import Engine
import TestSupport

/// Retention against reports that lie: forged, edited, pointing at other files, folders, symlinks and reports. Only a
/// file whose report recorded exactly what it is goes; a report goes only with its last file.
@Suite struct RetentionAttackTests {
    static let rate = 48_000
    static let t0 = ISO8601DateFormatter().date(from: "2026-10-01T00:00:00Z")!
    static let now = t0.addingTimeInterval(40 * 86_400)

    /// A folder with one genuine old take of `chunks` chunks (a day old each, well past any guard), its report, and
    /// the policy "keep 1 day".
    struct Scene {
        let dir: String
        let outside: String
        var chunks: [TakeReport.Chunk] = []
        var report: String
        var take: TakeReport

        init(_ label: String, chunks count: Int = 2) throws {
            dir = TestEnvironment.temporaryDirectory("ret-attack-\(label)").path
            outside = TestEnvironment.temporaryDirectory("ret-attack-out-\(label)").path
            let started = RetentionAttackTests.t0
            for c in 0..<count {
                chunks.append(try Self.genuine("\(dir)/log-001-\(c + 1).wav", startFrame: c * 3600 * rate,
                                               ended: started.addingTimeInterval(Double(c + 1) * 3600)))
            }
            report = "\(dir)/log-001.json"
            take = RetentionTests.report(session: "log", take: 1, started: started, chunks: chunks, running: false)
            try take.json().write(to: URL(fileURLWithPath: report))
        }

        static func genuine(_ path: String, startFrame: Int, ended: Date) throws -> TakeReport.Chunk {
            try TestEnvironment.writeChunkWAV(path: path, frames: 4_000, modified: ended)
            var c = TakeReport.Chunk(files: [path], startFrame: startFrame, frames: 3600 * rate)
            c.identity = [FileIdentity.of(path: path)]
            return c
        }

        /// Writes a report of session "log" listing `chunks`, named `name`.
        func forge(_ name: String, take: Int = 7, _ chunks: [TakeReport.Chunk]) throws {
            try RetentionTests.report(session: "log", take: take, started: RetentionAttackTests.t0, chunks: chunks,
                                      running: false).json().write(to: URL(fileURLWithPath: "\(dir)/\(name)"))
        }

        @discardableResult
        func apply(dryRun: Bool = false) -> Retention.Outcome {
            var r = Retention(directory: dir, session: "log",
                              policy: RetentionPolicy(keepSeconds: 86_400, guardSeconds: 3600, dryRun: dryRun))
            r.now = { RetentionAttackTests.now }
            return r.apply()
        }

        var log: String { (try? String(contentsOfFile: "\(dir)/log.retention.log", encoding: .utf8)) ?? "" }
    }

    static func exists(_ p: String) -> Bool { Retention.exists(p) }

    @Test func theGenuineTakeGoesWithItsReport() throws {
        let s = try Scene("genuine")
        let o = s.apply()
        #expect(o.deleted.count == 2 && o.reportsDeleted == [s.report] && o.kept.isEmpty)
        #expect(!s.chunks.flatMap(\.files).contains { Self.exists($0) } && !Self.exists(s.report))
    }

    @Test func aUsersFilesListedByAForgedReportStay() throws {
        let s = try Scene("user")
        let text = "\(s.dir)/notes.txt"
        try "my notes".write(toFile: text, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Self.t0], ofItemAtPath: text)
        let wav = "\(s.dir)/interview.wav"
        try TestEnvironment.writeChunkWAV(path: wav, frames: 9_000, modified: Self.t0)
        // No identity at all; then the identity of a genuine chunk (another length, another inode).
        try s.forge("forged-a.json", [TakeReport.Chunk(files: [text], startFrame: 0, frames: 10)])
        var lying = TakeReport.Chunk(files: [wav], startFrame: 0, frames: 4_000)
        lying.identity = s.chunks[0].identity
        try s.forge("forged-b.json", take: 8, [lying])
        let o = s.apply()
        #expect(Self.exists(text) && Self.exists(wav))
        #expect(Self.exists("\(s.dir)/forged-a.json") && Self.exists("\(s.dir)/forged-b.json"))
        #expect(o.kept.count == 2, "\(o.kept)")
        #expect(s.log.contains("\tkept\ttake 7 chunk 1\t") && s.log.contains("another file than the one recorded"))
        // The genuine take still goes.
        #expect(!Self.exists(s.report))
    }

    @Test func aReportFolderOrSymlinkListedAsAChunkStays() throws {
        let s = try Scene("kinds")
        let other = try Scene("kinds-other")
        let folder = "\(s.dir)/sub"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let outsideFile = "\(s.outside)/precious.wav"
        try TestEnvironment.writeChunkWAV(path: outsideFile, frames: 4_000, modified: Self.t0)
        let linkOut = "\(s.dir)/link-out.wav"
        try FileManager.default.createSymbolicLink(atPath: linkOut, withDestinationPath: outsideFile)
        let linkIn = "\(s.dir)/link-in.wav"
        try FileManager.default.createSymbolicLink(atPath: linkIn, withDestinationPath: s.chunks[1].files[0])
        // A file in a symlinked subfolder, with its true identity: not in the session folder itself.
        let viaLink = "\(s.dir)/elsewhere"
        try FileManager.default.createSymbolicLink(atPath: viaLink, withDestinationPath: s.outside)
        var through = TakeReport.Chunk(files: ["\(viaLink)/precious.wav"], startFrame: 0, frames: 4_000)
        through.identity = [FileIdentity.of(path: outsideFile)]
        // Another take's genuine report, copied into this folder under its own name.
        let foreignReport = "\(s.dir)/log-002.json"
        try FileManager.default.copyItem(atPath: other.report, toPath: foreignReport)
        var asReport = TakeReport.Chunk(files: [foreignReport], startFrame: 0, frames: 1)
        asReport.identity = [nil]
        try s.forge("forged.json", [TakeReport.Chunk(files: [folder], startFrame: 0, frames: 1),
                                    TakeReport.Chunk(files: [linkOut], startFrame: 1, frames: 1),
                                    TakeReport.Chunk(files: [linkIn], startFrame: 2, frames: 1),
                                    through, asReport])
        let o = s.apply()
        for p in [folder, linkOut, linkIn, outsideFile, foreignReport, "\(s.dir)/forged.json"] {
            #expect(Self.exists(p), "\(p) must stay")
        }
        #expect(!o.deleted.contains { $0.chunk.report.hasSuffix("forged.json") })
        #expect(!s.log.contains("\tdeleted\ttake 7"), "nothing of the forged report is logged as deleted")
    }

    @Test func aChunkListedByTwoReportsStays() throws {
        let s = try Scene("twice")
        try s.forge("copy.json", [s.chunks[0]])
        let o = s.apply()
        #expect(Self.exists(s.chunks[0].files[0]))
        #expect(!Self.exists(s.chunks[1].files[0]), "the chunk only the genuine report lists goes")
        #expect(Self.exists(s.report), "its report stays while one of its files is there")
        #expect(o.kept.contains { $0.contains("listed by more than one report") })
    }

    @Test func anEditedReportOrAChangedFileKeepsTheChunk() throws {
        // The report's record edited: frames, size, inode.
        for field in 0..<3 {
            var s = try Scene("edit-\(field)")
            var id = try #require(s.take.chunks[0].identity?[0])
            switch field {
            case 0: id.frames += 1
            case 1: id.bytes -= 2
            default: id.inode += 1
            }
            s.take.chunks[0].identity = [id]
            try s.take.json().write(to: URL(fileURLWithPath: s.report))
            _ = s.apply()
            #expect(Self.exists(s.chunks[0].files[0]) && !Self.exists(s.chunks[1].files[0]) && Self.exists(s.report))
        }
        // The file changed after the chunk closed: touched, appended to, replaced by another of the same name.
        for change in 0..<3 {
            let s = try Scene("change-\(change)")
            let f = s.chunks[0].files[0]
            switch change {
            case 0:
                var times = [timeval(tv_sec: Int(Self.t0.timeIntervalSince1970) + 5, tv_usec: 0),
                             timeval(tv_sec: Int(Self.t0.timeIntervalSince1970) + 5, tv_usec: 0)]
                _ = utimes(f, &times)
            case 1:
                let h = try FileHandle(forWritingTo: URL(fileURLWithPath: f))
                h.seekToEndOfFile()
                h.write(Data([1, 2, 3, 4]))
                try h.close()
                // Back to the time it had, so only the size tells.
                try FileManager.default.setAttributes([.modificationDate: Self.t0.addingTimeInterval(3600)], ofItemAtPath: f)
            default:
                try FileManager.default.removeItem(atPath: f)
                // Another file of the same length (the inode may well be reused), closed at another time.
                try TestEnvironment.writeChunkWAV(path: f, frames: 4_000, modified: Self.t0.addingTimeInterval(1800))
            }
            let o = s.apply()
            #expect(Self.exists(f), "change \(change)")
            #expect(Self.exists(s.report))
            #expect(o.kept.count == 1, "change \(change): \(o.kept)")
        }
    }

    @Test func aReportWhoseFilesWereLostOtherwiseStays() throws {
        let s = try Scene("lost")
        for f in s.chunks.flatMap(\.files) { unlink(f) }
        let o = s.apply()
        #expect(o.reportsDeleted.isEmpty && Self.exists(s.report))
    }

    @Test func anOlderReportWithoutIdentityIsKeptAndSaidSo() throws {
        var s = try Scene("old")
        for i in s.take.chunks.indices { s.take.chunks[i].identity = nil }
        try s.take.json().write(to: URL(fileURLWithPath: s.report))
        let o = s.apply()
        #expect(o.deleted.isEmpty && o.kept.count == 2 && Self.exists(s.report))
        #expect(s.log.contains("records no identity"))
    }

    @Test func aRelativePathIsTakenInTheSessionFolder() throws {
        var s = try Scene("relative")
        for i in s.take.chunks.indices {
            s.take.chunks[i].files = s.take.chunks[i].files.map { ($0 as NSString).lastPathComponent }
        }
        try s.take.json().write(to: URL(fileURLWithPath: s.report))
        let o = s.apply()
        #expect(o.deleted.count == 2 && !Self.exists(s.report))
    }

    /// The fuzzer: seeded random folders of genuine takes (some running, some with stems, another session's),
    /// users' files, folders, symlinks and files outside, then random lies (forged reports, edited reports, touched,
    /// grown, replaced, removed or symlinked chunks) and a random policy, applied twice. After each case: nothing
    /// Tandem did not write (or that changed since) is gone, and every take of which a file is left has its report.
    @Test func theFuzzerFindsNoViolation() throws {
        let env = ProcessInfo.processInfo.environment
        let seed = UInt64(env["TANDEM_RETENTION_FUZZ_SEED"] ?? "") ?? 20_261_127
        let count = Int(env["TANDEM_RETENTION_FUZZ_COUNT"] ?? "") ?? 300
        var rng = SeededRandom(seed: seed)
        var violations: [String] = []
        var (deleted, kept, reportsDeleted) = (0, 0, 0)
        for n in 0..<count {
            let r = try RetentionFuzzCase.run(n, &rng)
            violations += r.violations.map { "case \(n) (seed \(seed)): \($0)" }
            deleted += r.deleted
            kept += r.kept
            reportsDeleted += r.reportsDeleted
        }
        print("retention fuzz: \(count) cases, seed \(seed): \(deleted) chunks deleted, \(reportsDeleted) reports, "
              + "\(kept) kept unproven; \(violations.count) invariant violations")
        #expect(violations.isEmpty, "\(violations.prefix(20).joined(separator: "\n"))")
        #expect(deleted > count / 2, "the fuzzer's cases must delete something to mean anything")
    }
}

/// A small deterministic generator (SplitMix64), so a failing case is found again from its seed.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One case of the retention fuzzer.
enum RetentionFuzzCase {
    struct Result {
        var violations: [String] = []
        var deleted = 0
        var kept = 0
        var reportsDeleted = 0
    }

    static func run(_ n: Int, _ rng: inout SeededRandom) throws -> Result {
        let dir = TestEnvironment.temporaryDirectory("ret-fuzz-\(n)").path
        let outside = TestEnvironment.temporaryDirectory("ret-fuzz-out-\(n)").path
        defer {
            try? FileManager.default.removeItem(atPath: dir)
            try? FileManager.default.removeItem(atPath: outside)
        }
        let t0 = RetentionAttackTests.t0
        let now = RetentionAttackTests.now
        /// Files that must still be there after the passes (not Tandem's, or changed since it wrote them).
        var mustStay = Set<String>()
        /// Genuine takes: report path -> their chunk files.
        var takes: [String: [String]] = [:]
        var reports: [String: TakeReport] = [:]
        var genuineChunks: [TakeReport.Chunk] = []
        /// What the case did, for the message of a violation.
        var trail: [String] = []

        // Genuine takes of this session (one maybe running) and one of another session.
        let takeCount = Int.random(in: 1...4, using: &rng)
        for take in 1...takeCount {
            let running = take == takeCount && Bool.random(using: &rng)
            let stems = Int.random(in: 0..<4, using: &rng) == 0
            let started = t0.addingTimeInterval(Double(Int.random(in: 0...38, using: &rng)) * 86_400)
            var chunks: [TakeReport.Chunk] = []
            let chunkCount = Int.random(in: 1...4, using: &rng)
            for c in 0..<chunkCount {
                let ended = min(started.addingTimeInterval(Double(c + 1) * 3600), now)
                let files = (stems ? ["a", "b"] : [""]).map { "\(dir)/s-\(String(format: "%03d", take))-\(c + 1)\($0).wav" }
                for f in files { try TestEnvironment.writeChunkWAV(path: f, frames: 1_000 + 500 * c, modified: ended) }
                var chunk = TakeReport.Chunk(files: files, startFrame: c * 3600 * 48_000, frames: 3600 * 48_000)
                if !(running && c == chunkCount - 1) { chunk.identity = files.map { FileIdentity.of(path: $0) } }
                chunks.append(chunk)
                genuineChunks.append(chunk)
            }
            let path = "\(dir)/s-\(String(format: "%03d", take)).json"
            let report = RetentionTests.report(session: "s", take: take, started: started, chunks: chunks, running: running)
            try report.json().write(to: URL(fileURLWithPath: path))
            takes[path] = chunks.flatMap(\.files)
            reports[path] = report
            if running { mustStay.formUnion(chunks.last!.files) }
        }
        let otherWav = "\(dir)/other-001-1.wav"
        try TestEnvironment.writeChunkWAV(path: otherWav, frames: 2_000, modified: t0)
        var otherChunk = TakeReport.Chunk(files: [otherWav], startFrame: 0, frames: 2_000)
        otherChunk.identity = [FileIdentity.of(path: otherWav)]
        try RetentionTests.report(session: "other", take: 1, started: t0, chunks: [otherChunk], running: false).json()
            .write(to: URL(fileURLWithPath: "\(dir)/other-001.json"))
        mustStay.formUnion([otherWav, "\(dir)/other-001.json"])

        // Things nobody may delete: a user's text and audio files, a folder, symlinks, files outside.
        let text = "\(dir)/notes.txt"
        try "notes".write(toFile: text, atomically: true, encoding: .utf8)
        let userWav = "\(dir)/user.wav"
        try TestEnvironment.writeChunkWAV(path: userWav, frames: 3_000, modified: t0)
        let folder = "\(dir)/folder"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let outsideWav = "\(outside)/outside.wav"
        try TestEnvironment.writeChunkWAV(path: outsideWav, frames: 1_000, modified: t0)
        let linkOut = "\(dir)/link-out.wav"
        try FileManager.default.createSymbolicLink(atPath: linkOut, withDestinationPath: outsideWav)
        let linkDir = "\(dir)/link-dir"
        try FileManager.default.createSymbolicLink(atPath: linkDir, withDestinationPath: outside)
        mustStay.formUnion([text, userWav, folder, outsideWav, linkOut, linkDir])

        // The lies.
        let targets = [text, userWav, folder, outsideWav, linkOut, "\(linkDir)/outside.wav", "\(dir)/../x.wav",
                       "user.wav", "\(dir)/missing.wav", otherWav, "\(dir)/other-001.json"]
            + takes.keys.sorted() + genuineChunks.flatMap(\.files)
        let lies = Int.random(in: 0...4, using: &rng)
        for l in 0..<lies {
            switch Int.random(in: 0..<7, using: &rng) {
            case 0, 1:
                // A forged report of this session listing anything, with no identity, a genuine chunk's identity, or
                // a copied genuine chunk.
                var chunks: [TakeReport.Chunk] = []
                for i in 0..<Int.random(in: 1...3, using: &rng) {
                    if !genuineChunks.isEmpty && Bool.random(using: &rng) {
                        chunks.append(genuineChunks.randomElement(using: &rng)!)
                    } else {
                        var c = TakeReport.Chunk(files: [targets.randomElement(using: &rng)!], startFrame: i, frames: 1_000)
                        if Bool.random(using: &rng), let g = genuineChunks.randomElement(using: &rng) {
                            c.identity = g.identity.map { Array($0.prefix(1)) }
                        }
                        chunks.append(c)
                    }
                }
                let forged = "\(dir)/forged-\(l).json"
                try RetentionTests.report(session: "s", take: 90 + l, started: t0, chunks: chunks, running: false).json()
                    .write(to: URL(fileURLWithPath: forged))
                mustStay.insert(forged)
                trail.append("forged \(forged) listing \(chunks.map(\.files))")
            case 2:
                // A genuine report's record edited.
                guard let path = reports.keys.sorted().randomElement(using: &rng), var report = reports[path],
                      let ci = report.chunks.indices.randomElement(using: &rng),
                      var ids = report.chunks[ci].identity, let fi = ids.indices.randomElement(using: &rng),
                      var id = ids[fi] else { continue }
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: id.frames += 1
                case 1: id.bytes += 1
                case 2: id.modified += 1
                default: id.inode &+= 1
                }
                ids[fi] = id
                report.chunks[ci].identity = ids
                try report.json().write(to: URL(fileURLWithPath: path))
                reports[path] = report
                if Retention.exists(report.chunks[ci].files[fi]) { mustStay.insert(report.chunks[ci].files[fi]) }
                trail.append("edited the record of \(report.chunks[ci].files[fi])")
            case 3:
                // A genuine chunk touched, grown or replaced after it closed.
                guard let c = genuineChunks.randomElement(using: &rng), let f = c.files.randomElement(using: &rng),
                      Retention.exists(f) else { continue }
                let how = Int.random(in: 0..<3, using: &rng)
                trail.append(["touched", "grew", "replaced"][how] + " \(f)")
                switch how {
                case 0:
                    var times = [timeval(tv_sec: Int(t0.timeIntervalSince1970) + 7, tv_usec: 0),
                                 timeval(tv_sec: Int(t0.timeIntervalSince1970) + 7, tv_usec: 0)]
                    _ = utimes(f, &times)
                case 1:
                    let h = try FileHandle(forWritingTo: URL(fileURLWithPath: f))
                    h.seekToEndOfFile()
                    h.write(Data([0, 0]))
                    try h.close()
                default:
                    unlink(f)
                    try TestEnvironment.writeChunkWAV(path: f, frames: 1_000, modified: t0)
                }
                mustStay.insert(f)
            case 4:
                // A genuine chunk replaced by a symlink to a file outside.
                guard let c = genuineChunks.randomElement(using: &rng), let f = c.files.first, Retention.exists(f) else { continue }
                unlink(f)
                try FileManager.default.createSymbolicLink(atPath: f, withDestinationPath: outsideWav)
                mustStay.insert(f)
                trail.append("symlinked \(f)")
            case 5:
                // A genuine chunk deleted by hand.
                if let c = genuineChunks.randomElement(using: &rng), let f = c.files.first, !mustStay.contains(f) {
                    unlink(f)
                    trail.append("removed \(f)")
                }
            default:
                // Garbage in a report of this session's name.
                let junk = "\(dir)/s-\(String(format: "%03d", 50 + l)).json"
                try Data("{\"session\": \"s\", \"chunks\": [".utf8).write(to: URL(fileURLWithPath: junk))
                mustStay.insert(junk)
            }
        }

        // A random policy, applied twice.
        let dryRun = Int.random(in: 0..<5, using: &rng) == 0
        let capacity = Int64.random(in: 0...200_000, using: &rng)
        let policy = RetentionPolicy(keepSeconds: Bool.random(using: &rng) ? Double(Int.random(in: 1...40, using: &rng)) * 86_400 : nil,
                                     minFreeBytes: Bool.random(using: &rng) ? Int64.random(in: 1...400_000, using: &rng) : nil,
                                     guardSeconds: Double(Int.random(in: 60...172_800, using: &rng)), dryRun: dryRun,
                                     closedChunksOfRunningTake: Bool.random(using: &rng))
        var r = Retention(directory: dir, session: "s", policy: policy)
        r.now = { now }
        r.freeBytes = { d in capacity - RetentionTests.used(d) }
        let before = Set((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
        var result = Result()
        for _ in 0..<2 {
            let o = r.apply()
            result.deleted += o.deleted.count
            result.kept += o.kept.count
            result.reportsDeleted += o.reportsDeleted.count
        }

        // The invariants.
        for p in mustStay.sorted() where !Retention.exists(p) {
            result.violations.append("deleted \(p), not Tandem's to delete; \(trail); policy \(policy)")
        }
        for (report, files) in takes.sorted(by: { $0.key < $1.key }) where !Retention.exists(report) {
            let left = files.filter { Retention.exists($0) }
            if !left.isEmpty { result.violations.append("report \(report) gone while \(left) are left; \(trail)") }
        }
        if dryRun {
            let after = Set((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            let gone = before.subtracting(after)
            if !gone.isEmpty { result.violations.append("a dry run deleted \(gone.sorted())") }
        }
        return result
    }
}
