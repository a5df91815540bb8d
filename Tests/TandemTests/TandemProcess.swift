import Foundation
import Jack
import TestSupport

/// Runs the built `tandem` binary as a subprocess against a private server.
struct TandemProcess {
    let process: ChildProcess
    let logPath: String

    /// `wrapper` runs before the binary (e.g. setpriv to drop capabilities).
    init(_ arguments: [String], server: JackServer, extraEnvironment: [String: String] = [:], log: String,
         wrapper: [String] = []) throws {
        logPath = log
        var env = ["JACK_DEFAULT_SERVER": server.name, "JACK_NO_START_SERVER": "1"]
        for (k, v) in extraEnvironment { env[k] = v }
        process = try ChildProcess(wrapper + [TestEnvironment.product("tandem")] + arguments, environment: env,
                                   outputPath: log)
    }

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits until the output contains `text`.
    /// Waits until the output holds `text` (`occurrence` times).
    func waitFor(_ text: String, timeout: Double = 10, occurrence: Int = 1) -> Bool {
        TestEnvironment.waitUntil(timeout: timeout) {
            occurrence == 1 ? output.contains(text) : output.components(separatedBy: text).count - 1 >= occurrence
        }
    }
}

/// Where a process and its children are stuck, for a test that timed out waiting for it: every thread's name and
/// kernel wait channel, the kernel stacks, and gdb's backtraces where gdb is installed.
func hangReport(_ pid: pid_t) -> String {
    let children = (try? TestEnvironment.run(["pgrep", "-P", String(pid)], timeout: 5))?.output
        .split(separator: "\n").compactMap { pid_t($0) } ?? []
    var lines: [String] = []
    for p in [pid] + children {
        let command = (try? String(contentsOfFile: "/proc/\(p)/cmdline", encoding: .utf8))?
            .replacingOccurrences(of: "\0", with: " ") ?? "?"
        lines.append("process \(p): \(command)")
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(p)/task")) ?? []
        for t in tasks.sorted() {
            let read = { (f: String) in
                ((try? String(contentsOfFile: "/proc/\(p)/task/\(t)/\(f)", encoding: .utf8)) ?? "?")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            lines.append("  thread \(t) \(read("comm")) waits in \(read("wchan"))")
            lines.append(read("stack").split(separator: "\n").prefix(8).map { "    " + $0 }.joined(separator: "\n"))
        }
        if TestEnvironment.hasProgram("gdb"),
           let bt = try? TestEnvironment.run(["gdb", "-p", String(p), "-batch", "-ex", "thread apply all bt"],
                                             timeout: 30) {
            lines.append(bt.output.split(separator: "\n").filter { $0.hasPrefix("#") || $0.hasPrefix("Thread") }
                .joined(separator: "\n"))
        }
    }
    return lines.joined(separator: "\n")
}

/// Starts `sndfile-jackplay` on `file`, auto-connected to `pattern` (printf-style, e.g. "tandem-rec:in_%d").
func startJackplay(_ file: String, pattern: String, server: JackServer, loop: Bool = false, log: String) throws
    -> ChildProcess {
    try ChildProcess(["sndfile-jackplay"] + (loop ? ["--loop=0"] : []) + ["--autoconnect=\(pattern)", file],
                     environment: ["JACK_DEFAULT_SERVER": server.name, "JACK_NO_START_SERVER": "1"],
                     outputPath: log)
}

/// The path of the file a `tandem record` run announced ("take N recording: PATH").
func announcedFile(_ output: String) -> String? {
    guard let line = output.split(separator: "\n").first(where: { $0.contains(" recording: ") }) else { return nil }
    return line.components(separatedBy: " recording: ").last?.components(separatedBy: ", ").first
}

/// The report path a `tandem record` run announced ("...; report PATH").
func announcedReport(_ output: String) -> String? {
    guard let line = output.split(separator: "\n").first(where: { $0.contains("; report ") }) else { return nil }
    return line.components(separatedBy: "; report ").last
}
