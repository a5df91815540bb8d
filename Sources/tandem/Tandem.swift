import ArgumentParser
import Coordinator
import Engine
import Presets
import Foundation
import Jack
import Realtime
import Logging
import Takes

/// Exit codes, documented in docs/CLI.md.
enum ExitStatus: Int32 {
    case ok = 0
    case failure = 1
    case badInput = 2
    case jackUnavailable = 3
    case diskError = 4
    case interrupted = 5

    /// The exit code of a session that ended by itself.
    init(_ end: SessionEnd) {
        switch end {
        case .takeComplete: self = .ok
        case .serverLost: self = .jackUnavailable
        case .diskError: self = .diskError
        case .playbackComplete(let failed): self = failed > 0 ? .badInput : .ok
        }
    }
}

@main
struct Tandem: ParsableCommand {
    /// Parses and runs, mapping every usage error to exit code 2 (ArgumentParser's own default is 64).
    static func main() {
        withoutBacktracer()
        headlessToolkits()
        Console.ignoreBrokenPipes()
        do {
            // A session manager starts its clients with no arguments: `tandem` alone under NSM is `tandem run` (events
            // only: the session manager's log is no terminal).
            let underNSM = CommandLine.arguments.count == 1 && ProcessInfo.processInfo.environment["NSM_URL"] != nil
            let arguments = Array(CommandLine.arguments.dropFirst())
            if let why = unknownHelpTopic(arguments) {
                Console.err("tandem: \(why)\n")
                Foundation.exit(ExitStatus.badInput.rawValue)
            }
            var command = try parseAsRoot(underNSM ? ["run", "--no-view"] : joiningNegativeValues(arguments))
            try command.run()
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            Console.err((fullMessage(for: error) + "\n"))
            Foundation.exit(ExitStatus.badInput.rawValue)
        }
    }

    /// `tandem help WORDS` naming no command: what to say (ArgumentParser printed the overview and exited 0).
    static func unknownHelpTopic(_ arguments: [String]) -> String? {
        guard arguments.first == "help", arguments.count > 1 else { return nil }
        var command: any ParsableCommand.Type = Tandem.self
        for word in arguments.dropFirst() where !word.hasPrefix("-") {
            let known = command.configuration.subcommands
            guard let next = known.first(where: { $0._commandName == word }) else {
                let names = known.map { $0._commandName }.joined(separator: ", ")
                return known.isEmpty ? "'\(command._commandName)' has no command '\(word)'"
                    : "no command '\(word)' (commands: \(names))"
            }
            command = next
        }
        return nil
    }

    /// The arguments with a negative number after a long option joined to it (`--gain -6` as `--gain=-6`):
    /// ArgumentParser takes "-6" for an option and said "Missing value". Nothing after `--` is touched.
    static func joiningNegativeValues(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--" {
                out += arguments[i...]
                break
            }
            if a.hasPrefix("--"), !a.contains("="), i + 1 < arguments.count, isNegativeNumber(arguments[i + 1]) {
                out.append(a + "=" + arguments[i + 1])
                i += 2
                continue
            }
            out.append(a)
            i += 1
        }
        return out
    }

    static func isNegativeNumber(_ s: String) -> Bool {
        s.count > 1 && s.hasPrefix("-") && Double(s.dropFirst()) != nil && s.dropFirst().first?.isNumber == true
    }

    /// Starts this program again with the Swift runtime's backtracer off, unless `SWIFT_BACKTRACE` is set already
    /// (set it to get backtraces). When a plugin aborts or crashes a process, the backtracer stops every thread and
    /// symbolicates for 32 s here before the process ends, and all that time its JACK clients hold up the server:
    /// other clients' calls time out and other sessions' loops hang in a connect. Without it the process is gone in
    /// 0.2 s and the server drops its clients. The exec keeps the pid, the descriptors and the arguments.
    static func withoutBacktracer() {
        guard getenv("SWIFT_BACKTRACE") == nil, setenv("SWIFT_BACKTRACE", "enable=no", 1) == 0 else { return }
        _ = execv("/proc/self/exe", CommandLine.unsafeArgv)
        // No exec (no /proc): the backtracer stays.
    }

    /// Tells Qt there is no display when there is none (`QT_QPA_PLATFORM=offscreen`, unless set): plugins built
    /// on Qt (drumkv1, padthv1, samplv1, synthv1) otherwise abort in their instantiate on a headless box, looking
    /// for an X server, and take their process with them (jalv aborts the same way). With it they run.
    static func headlessToolkits() {
        let env = ProcessInfo.processInfo.environment
        guard env["QT_QPA_PLATFORM"] == nil, (env["DISPLAY"] ?? "").isEmpty, (env["WAYLAND_DISPLAY"] ?? "").isEmpty else { return }
        setenv("QT_QPA_PLATFORM", "offscreen", 1)
    }

    static let configuration = CommandConfiguration(
        commandName: "tandem",
        abstract: "A headless recorder and player that lives in a JACK graph.",
        version: TandemVersion.string,
        subcommands: [RunCommand.self, RecordCommand.self, PlayCommand.self, RackCommand.self, RenderCommand.self, LoudnessCommand.self,
                      PresetCommand.self, StitchCommand.self,
                      StatusCommand.self, CtlCommand.self, PortsCommand.self, PluginsCommand.self, HTTPTokenCommand.self, DemoCommand.self,
                      BenchWriterCommand.self])
}

/// Options every command that talks to JACK shares.
struct ServerOptions: ParsableArguments {
    @Option(name: .long, help: "JACK server name (default: $JACK_DEFAULT_SERVER or 'default').")
    var server: String?

    @Flag(name: .shortAndLong, help: "Log more (lifecycle details).")
    var verbose = false

    func validate() throws {
        if let server, let why = Limits.nameProblem(server, what: "--server", bytes: Limits.serverNameBytes) {
            throw ValidationError(why)
        }
    }

    @Flag(name: .shortAndLong, help: "Log only warnings and errors.")
    var quiet = false

    /// Sets up logging to stderr. `quieter` lowers the default to warnings (a live view owns the terminal).
    func bootstrapLogging(quieter: Bool = false) {
        JackLibrary.routeMessages(verbose: verbose)
        let level: Logger.Level = verbose ? .debug : quiet || quieter ? .warning : .info
        LoggingSystem.bootstrap { label in
            var h = ConsoleLogHandler(label: label)
            h.logLevel = level
            return h
        }
    }
}

/// Prints `message` to stderr and exits with `status`.
func fail(_ status: ExitStatus, _ message: String) -> Never {
    Console.err("tandem: \(message)\n")
    Foundation.exit(status.rawValue)
}

/// Writes a line to stdout at once (no buffering: scripts and pipes see it when it happens).
func say(_ line: String) {
    Console.out((line + "\n"))
}

/// "cycle cost: p50 … p99 … max … µs over N cycles (… % of the period)".
func cycleCostLine(_ s: CycleHistogram.Summary, period: Int, rate: Int) -> String {
    let periodMicros = Double(period) / Double(max(1, rate)) * 1e6
    func us(_ ns: Int) -> String { String(format: "%.1f", Double(ns) / 1000) }
    let share = periodMicros > 0 ? Double(s.p99) / 1000 / periodMicros * 100 : 0
    return "cycle cost: p50 \(us(s.p50)) µs, p99 \(us(s.p99)) µs, max \(us(s.max)) µs over \(s.count) cycles "
        + "(p99 \(String(format: "%.2f", share)) % of the \(String(format: "%.0f", periodMicros)) µs period)"
}
