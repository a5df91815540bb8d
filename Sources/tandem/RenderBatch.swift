import Foundation
import Jack
import Logging
import Presets
import Render
#if canImport(Glibc)
import Glibc
#endif

/// Runs a render's jobs: in this process one after another, or each in a child process (`tandem render --job`), as
/// many at once as asked, so a plugin that crashes fails its job, named with its signal, a job that hangs is killed
/// after `jobTimeout` seconds without a sign of progress, and the batch goes on. Says what happens as it happens: a
/// progress line on a terminal, JSON lines with `--json`, a line per job otherwise. SIGINT or SIGTERM (`stop`) ends
/// it at its next turn, its children killed and every partial file removed.
///
/// Threads: the main thread only.
final class RenderBatch {
    let jobs: [RenderJob]
    let parallel: Int
    let isolate: Bool
    let json: Bool
    /// Seconds a child may go without a word before it is taken for hung and killed.
    let jobTimeout: Double
    let stop: RenderStop
    private let terminal = isatty(STDERR_FILENO) == 1
    private var progress: [Int: (Int, Int)] = [:]
    private var lastDraw = Date.distantPast
    private var results: [Int: Outcome] = [:]

    /// How one job ended.
    enum Outcome {
        case done(RenderReport)
        case failed(RenderError.Kind, String, signal: Int32?, hung: Bool = false)
    }

    init(jobs: [RenderJob], parallel: Int, isolate: Bool, json: Bool, jobTimeout: Double, stop: RenderStop) {
        self.jobs = jobs
        self.parallel = max(1, parallel)
        self.isolate = isolate
        self.json = json
        self.jobTimeout = jobTimeout
        self.stop = stop
    }

    /// Runs every job; the exit code: 0 all rendered; 4 a disk error; 1 a job failed (crashed or hung); 2 bad
    /// input; 128 + the signal when SIGINT or SIGTERM stopped the batch.
    func run() -> Int32 {
        let began = Date()
        if isolate { runChildren() } else { runHere() }
        clearLine()
        let failed = results.values.compactMap { o -> RenderError.Kind? in
            if case .failed(let k, _, _, _) = o { return k }
            return nil
        }
        var status: Int32 = failed.contains(.disk) ? ExitStatus.diskError.rawValue
            : failed.contains(.failed) ? ExitStatus.failure.rawValue
            : failed.contains(.badInput) ? ExitStatus.badInput.rawValue : ExitStatus.ok.rawValue
        if let signal = stop.signal {
            status = 128 + signal
            if !json {
                Console.err("tandem: stopped by signal \(signal) (\(ChildProcess.signalName(signal))): \(jobs.count - results.count)"
                            + " job(s) not finished, nothing of them left\n")
            }
        }
        let seconds = Date().timeIntervalSince(began)
        let audio = results.values.reduce(0.0) { sum, o in
            if case .done(let r) = o { return sum + Double(r.frames) / Double(max(1, r.sampleRate)) }
            return sum
        }
        let rendered = results.values.filter { if case .done = $0 { return true } else { return false } }.count
        if json {
            var o: [String: Any] = ["event": "finished", "jobs": jobs.count, "rendered": rendered, "failed": failed.count,
                                    "seconds": seconds, "speed": seconds > 0 ? audio / seconds : 0, "exit": Int(status)]
            if let signal = stop.signal {
                o["stoppedBy"] = ChildProcess.signalName(signal)
                o["notFinished"] = jobs.count - results.count
            }
            emit(o)
        } else if jobs.count > 1 {
            say("\(rendered) of \(jobs.count) rendered, \(failed.count) failed, in "
                + String(format: "%.2f s (%.0f× real time)", seconds, seconds > 0 ? audio / seconds : 0))
        }
        return status
    }

    // MARK: In this process

    private func runHere() {
        let logger = Logger(label: "tandem.render")
        for job in jobs {
            if stop.signal != nil { return }
            let partials = [job.output, job.report].map { RenderOutput.partialName($0) }
            stop.track(partials)
            defer { stop.untrack(partials) }
            started(job)
            do throws(RenderError) {
                let report = try Renderer.run(job, logger: logger, progress: { frames, total in
                    self.progressed(job.number, frames, total)
                }, stop: { self.stop.signal })
                finished(job, .done(report))
            } catch {
                if error.kind == .stopped { return }
                finished(job, .failed(error.kind, error.message, signal: nil))
            }
        }
    }

    // MARK: Children

    /// One running child: its process, the read end of its answer pipe, what it has said so far and when.
    private final class Child {
        let job: RenderJob
        let process: ChildProcess
        let fd: Int32
        var buffer = Data()
        var report: String?
        var error: (RenderError.Kind, String)?
        var open = true
        /// When it last said anything (progress comes about ten times a second while its chain runs).
        var heard = Date()
        /// Killed for saying nothing for `jobTimeout` seconds.
        var hung = false
        init(job: RenderJob, process: ChildProcess, fd: Int32) {
            self.job = job
            self.process = process
            self.fd = fd
        }
        /// Its partial files (a child that did not finish leaves them).
        var partials: [String] { [job.output, job.report].map { RenderOutput.partialName($0, pid: process.pid) } }
    }

    private func runChildren() {
        var waiting = jobs[...]
        var running: [Child] = []
        while !waiting.isEmpty || !running.isEmpty {
            if stop.signal != nil {
                // Stopped: every child killed, its partial files removed; the jobs not started stay so.
                for child in running { child.process.signal(SIGKILL) }
                for child in running {
                    _ = child.process.wait(timeout: 5)
                    close(child.fd)
                    for path in child.partials { unlink(path) }
                    stop.untrack(child.partials)
                }
                return
            }
            while running.count < parallel, let job = waiting.first {
                waiting = waiting.dropFirst()
                started(job)
                do {
                    let child = try spawn(job)
                    stop.track(child.partials)
                    running.append(child)
                } catch {
                    finished(job, .failed(.failed, "cannot start its process: \(error)", signal: nil))
                }
            }
            var fds = running.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            _ = poll(&fds, nfds_t(fds.count), 200)
            for (k, child) in running.enumerated() where fds[k].revents != 0 { read(child) }
            // The watchdog: a child silent for jobTimeout seconds is hung (a plugin that does not return).
            for child in running where child.open && !child.hung && Date().timeIntervalSince(child.heard) > jobTimeout {
                child.hung = true
                child.process.signal(SIGKILL)
            }
            if stop.signal != nil { continue }
            for child in running where !child.open {
                let code = child.process.wait(timeout: 30) ?? {
                    child.process.signal(SIGKILL)
                    return child.process.wait(timeout: 5) ?? 137
                }()
                close(child.fd)
                let job = child.job
                // What a child that died wrote keeps its partial name: removed here.
                for path in child.partials { unlink(path) }
                stop.untrack(child.partials)
                if child.hung {
                    finished(job, .failed(.failed, "its process gave no sign of progress for \(Limits.number(jobTimeout)) s"
                                          + " (--job-timeout) and was killed: a plugin hung; its output was not written",
                                          signal: SIGKILL, hung: true))
                } else if code > 128 {
                    let sig = code - 128
                    finished(job, .failed(.failed, "its process was killed by signal \(sig) (\(ChildProcess.signalName(sig)))"
                                          + " while rendering: a plugin crashed; its output was not written", signal: sig))
                } else if let report = child.report, code == 0 {
                    do {
                        finished(job, .done(try RenderReport.read(from: report)))
                    } catch {
                        finished(job, .failed(.failed, "its report '\(report)' cannot be read: \(error)", signal: nil))
                    }
                } else if let (kind, message) = child.error {
                    finished(job, .failed(kind, message, signal: nil))
                } else {
                    finished(job, .failed(.failed, "its process ended with code \(code) and said nothing", signal: nil))
                }
            }
            running.removeAll { !$0.open }
        }
    }

    /// Starts `tandem render --job` with the job as JSON on its stdin; it answers on fd 3.
    private func spawn(_ job: RenderJob) throws -> Child {
        var input: [Int32] = [0, 0], answer: [Int32] = [0, 0]
        guard pipe(&input) == 0, pipe(&answer) == 0 else {
            throw RenderError(.failed, "no pipe: \(String(cString: strerror(errno)))")
        }
        for fd in [input[1], answer[0]] { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let process: ChildProcess
        do {
            process = try ChildProcess([exe, "render", "--job"] + (json ? ["--json"] : []),
                                       streams: [0: .fd(input[0]), 1: .path("/dev/null", O_WRONLY), 2: .fd(STDERR_FILENO),
                                                 3: .fd(answer[1])])
        } catch {
            for fd in input + answer { close(fd) }
            throw error
        }
        close(input[0])
        close(answer[1])
        let data = (try? JSONEncoder().encode(job)) ?? Data()
        _ = data.withUnsafeBytes { Glibc.write(input[1], $0.baseAddress, $0.count) }
        close(input[1])
        return Child(job: job, process: process, fd: answer[0])
    }

    /// Reads what a child said: `progress FRAMES TOTAL`, `done REPORT`, `error KIND MESSAGE`.
    private func read(_ child: Child) {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = Glibc.read(child.fd, &bytes, bytes.count)
        if n <= 0 {
            if n == 0 || (errno != EINTR && errno != EAGAIN) { child.open = false }
            return
        }
        child.heard = Date()
        child.buffer.append(contentsOf: bytes[0..<n])
        while let newline = child.buffer.firstIndex(of: 0x0A) {
            let line = String(decoding: child.buffer[child.buffer.startIndex..<newline], as: UTF8.self)
            child.buffer.removeSubrange(child.buffer.startIndex...newline)
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            switch parts.first {
            case "progress" where parts.count == 3:
                progressed(child.job.number, Int(parts[1]) ?? 0, Int(parts[2]) ?? 0)
            case "done" where parts.count >= 2:
                child.report = parts.dropFirst().joined(separator: " ")
            case "error" where parts.count == 3:
                child.error = (RenderError.Kind(rawValue: parts[1]) ?? .failed, parts[2])
            default: break
            }
        }
    }

    // MARK: Telling

    private func started(_ job: RenderJob) {
        if json { emit(["event": "started", "job": job.number, "input": job.inputs.first?.path ?? job.midi ?? "", "output": job.output]) }
    }

    private func progressed(_ number: Int, _ frames: Int, _ total: Int) {
        progress[number] = (frames, total)
        if json {
            emit(["event": "progress", "job": number, "frames": frames, "total": total])
            return
        }
        guard terminal, Date().timeIntervalSince(lastDraw) > 0.1 else { return }
        lastDraw = Date()
        let done = progress.values.reduce(0) { $0 + $1.0 }, total = progress.values.reduce(0) { $0 + max($1.0, $1.1) }
        let share = total > 0 ? Double(done) / Double(total) * 100 : 0
        Console.err(String(format: "\rrendering: %d of %d job(s) done, %d running, %.0f %%   ",
                           results.count, jobs.count, progress.count - results.count, share))
    }

    private func finished(_ job: RenderJob, _ outcome: Outcome) {
        results[job.number] = outcome
        clearLine()
        switch outcome {
        case .done(let r):
            if json {
                var o: [String: Any] = ["event": "done", "job": job.number, "input": job.inputs.first?.path ?? job.midi ?? "",
                                        "output": r.output, "report": job.report, "frames": r.frames, "seconds": r.seconds,
                                        "speed": r.speed, "latency": r.latency.frames]
                if let notes = r.notes { o["notes"] = notes }
                if let l = r.loudness {
                    var d: [String: Any] = [:]
                    for (key, value) in [("integrated", l.integrated), ("range", l.range), ("truePeak", l.truePeak),
                                         ("samplePeak", l.samplePeak), ("momentaryMax", l.momentaryMax),
                                         ("shortTermMax", l.shortTermMax)] {
                        d[key] = value.map { $0 as Any } ?? NSNull()
                    }
                    if let note = l.note { d["note"] = note }
                    o["loudness"] = d
                }
                emit(o)
            } else {
                say("rendered \(job.name) -> \(r.output): \(r.frames) frames (\(String(format: "%.3f", Double(r.frames) / Double(max(1, r.sampleRate)))) s"
                    + " of audio in \(String(format: "%.2f", r.seconds)) s, \(String(format: "%.0f", r.speed))× real time);"
                    + " report \(job.report)")
                for note in r.notes ?? [] { say("  note: \(note)") }
                if let l = r.loudness { say("  loudness: \(l.summary)") }
            }
        case .failed(let kind, let message, let signal, let hung):
            if json {
                var o: [String: Any] = ["event": "failed", "job": job.number, "input": job.inputs.first?.path ?? job.midi ?? "",
                                        "kind": kind.rawValue, "error": message]
                if let signal {
                    o["signal"] = Int(signal)
                    o["signalName"] = ChildProcess.signalName(signal)
                }
                if hung { o["hung"] = true }
                emit(o)
            } else {
                Console.err("tandem: job \(job.number) (\(job.name)) failed: \(message)\n")
            }
        }
    }

    private func clearLine() {
        if terminal && !json && !progress.isEmpty { Console.err("\r\u{1B}[K") }
    }

    private func emit(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
              let line = String(data: data, encoding: .utf8) else { return }
        say(line)
    }

}

/// A child of a batch (`tandem render --job`): its job as JSON on stdin, its answers on fd 3 (progress lines, then
/// `done REPORT` or `error KIND MESSAGE`); it ends with its parent.
enum RenderChild {
    static func run() -> Never {
        _ = ChildProcess.endWithParent(signal: SIGKILL)
        // A terminal's Ctrl-C reaches the whole process group: the parent decides, and kills its children.
        Glibc.signal(SIGINT, SIG_IGN)
        let data = FileHandle.standardInput.readDataToEndOfFile()
        func answer(_ line: String) {
            let bytes = Array((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(3, $0.baseAddress, $0.count) }
        }
        guard let job = try? JSONDecoder().decode(RenderJob.self, from: data) else {
            answer("error failed the job it was given cannot be read")
            exit(ExitStatus.failure.rawValue)
        }
        do throws(RenderError) {
            let report = try Renderer.run(job, logger: Logger(label: "tandem.render")) { frames, total in
                answer("progress \(frames) \(total)")
            }
            answer("progress \(report.frames) \(report.frames)")
            answer("done \(job.report)")
            exit(0)
        } catch {
            answer("error \(error.kind.rawValue) \(error.message)")
            let code: ExitStatus = error.kind == .disk ? .diskError : error.kind == .badInput ? .badInput : .failure
            exit(code.rawValue)
        }
    }
}
