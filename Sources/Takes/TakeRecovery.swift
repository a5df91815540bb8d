import Foundation
import MIDIFile
import SoundFile
#if canImport(Glibc)
import Glibc
#endif

/// Finds takes that a killed process (or a power loss) left behind and completes their reports.
///
/// A report that still says `"ended": "recording"` while the process that wrote it is gone belongs to an
/// interrupted take. Its files are readable (WAV/RF64 headers are kept current to within 50 ms of audio), so the
/// frames their headers count are counted per chunk, the report is completed with `"ended": "interrupted"`, and it
/// is rewritten in place.
/// Reports of a live process (another Tandem recording into the same folder) are never touched.
public enum TakeRecovery {
    public struct Recovered: Sendable {
        public var report: TakeReport
        public var sidecar: String
    }

    /// The highest take number among the reports of session `session` in `directory` (0: none), so that a new process
    /// recording into the same folder goes on counting: one folder never holds two different "take 1" of a session.
    /// Reads every report there once (at the recorder's start).
    public static func highestTake(in directory: String, session: String) -> Int {
        struct Head: Decodable {
            var session: String
            var take: Int
        }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        var highest = 0
        for name in names where name.hasSuffix(".json") {
            let path = (directory as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path),
                  let head = try? JSONDecoder().decode(Head.self, from: data), head.session == session else { continue }
            highest = max(highest, head.take)
        }
        return highest
    }

    /// Completes every interrupted take in `directory`. Errors on single files are skipped (the report stays).
    public static func recover(directory: String) -> [Recovered] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var out: [Recovered] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = (directory as NSString).appendingPathComponent(name)
            guard var report = try? TakeReport.read(from: path), report.ended == .recording else { continue }
            if let pid = report.pid, report.host == nil || report.host == ProcessInfo.processInfo.hostName {
                if pid == getpid() || kill(pid, 0) == 0 || errno == EPERM { continue }   // still being written
            }
            var total = 0
            for i in report.chunks.indices {
                // The files are complete as they are now: what they are is recorded for retention's proof.
                let ids = report.chunks[i].files.map { FileIdentity.of(path: Retention.absolute($0, in: directory)) }
                let frames = ids.map { $0?.frames ?? 0 }.min() ?? 0
                report.chunks[i].frames = frames
                report.chunks[i].identity = ids
                total += frames
            }
            report.frames = total
            // The take's MIDI file, if it has one: cut inside a flush at the worst, completed here.
            let midi = TakeReport.midiPath(sidecar: path)
            if FileManager.default.fileExists(atPath: midi) { _ = try? MIDIFileWriter.recover(path: midi) }
            report.ended = .interrupted
            let iso = ISO8601DateFormatter().string(from: Date())
            report.endDetail = "the process ended without finalizing this take (killed, crashed or power lost); "
                + "completed from the files on disk at \(iso): \(total) frames"
            do {
                try SidecarFile(existing: path).write(report.json())
                out.append(Recovered(report: report, sidecar: path))
            } catch {
                continue
            }
        }
        return out
    }
}
