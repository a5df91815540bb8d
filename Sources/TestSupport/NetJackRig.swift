import Foundation
import Jack

/// A two-host NetJACK2 rig on this machine, driven through `scripts/netjack-rig.sh` (see docs/SCALING.md): two
/// network namespaces joined by a veth pair (10.213.0.1 master, 10.213.0.2 slave, no other address), each with its own
/// /dev/shm; a dummy master with netmanager and a `jackd -d net` slave, both servers named "default" on their host.
///
/// The rig stops when `stop()` is called, when this object goes away, and, through the script's watcher, when this
/// process dies for any reason. Threads: one owner.
// @unchecked Sendable: all but `running` is constant; `running` changes only in `init` and `stop`, on the one owner's
// thread (a test's).
public final class NetJackRig: @unchecked Sendable {
    public enum Host: String, Sendable { case master, slave }

    /// Where the rig keeps its state and the servers' logs.
    public let directory: URL
    public let channels: Int
    public let period: Int
    /// NetJACK2's network latency in periods (`jackd -d net -l`).
    public let latency: Int
    private var running = true

    /// The script (in the package's `scripts/`, found from this source file's place).
    public static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/netjack-rig.sh").path
    }

    /// Why a rig cannot be built on this machine, or nil when it can (root, the programs, network namespaces).
    public static let unavailableReason: String? = {
        if getuid() != 0 { return "network namespaces and veth pairs need root" }
        for program in ["unshare", "nsenter", "ip", "jackd", "jack_load", "jack_unload", "jack_lsp", "jack_connect"]
        where !TestEnvironment.hasProgram(program) {
            return "'\(program)' is not installed"
        }
        let netmanager = ["/usr/lib/x86_64-linux-gnu/jack/netmanager.so", "/usr/lib/aarch64-linux-gnu/jack/netmanager.so",
                          "/usr/lib/jack/netmanager.so", "/usr/local/lib/jack/netmanager.so"]
        if !netmanager.contains(where: { FileManager.default.fileExists(atPath: $0) }) {
            return "jackd2's netmanager.so is not installed"
        }
        guard let probe = try? TestEnvironment.run(["unshare", "--net", "--mount", "true"], timeout: 10),
              probe.code == 0 else { return "this kernel or container does not allow network namespaces" }
        return nil
    }()

    public static var available: Bool { unavailableReason == nil }

    /// Starts a rig: `channels` audio channels each way, the master's period, NetJACK2's latency in periods.
    public init(_ label: String, channels: Int = 16, period: Int = TestEnvironment.testPeriod, latency: Int = 2)
        throws {
        directory = TestEnvironment.temporaryDirectory("rig-\(label)")
        self.channels = channels
        self.period = period
        self.latency = latency
        let start = try TestEnvironment.run(
            [Self.script, "start", directory.appendingPathComponent("rig").path, "--channels", "\(channels)",
             "--period", "\(period)", "--latency", "\(latency)", "--owner", "\(getpid())", "--life", "600"],
            timeout: 60)
        guard start.code == 0 else {
            running = false
            throw FixtureError( "the NetJACK2 rig did not start: \(start.output)")
        }
    }

    /// The rig's state folder (as the script knows it).
    public var rigPath: String { directory.appendingPathComponent("rig").path }

    /// Starts `arguments` on `host`; the child's pid is the program's own (signals reach it directly).
    public func spawn(_ host: Host, _ arguments: [String], log: String? = nil,
                      environment: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess([Self.script, "exec", rigPath, host.rawValue] + arguments, environment: environment,
                         outputPath: log)
    }

    /// Runs `arguments` on `host` to completion.
    @discardableResult
    public func run(_ host: Host, _ arguments: [String], timeout: Double = 30) throws -> (code: Int32, output: String) {
        try TestEnvironment.run([Self.script, "exec", rigPath, host.rawValue] + arguments, timeout: timeout)
    }

    /// The slave's end of the cable, down or up.
    public func link(up: Bool) throws {
        let r = try TestEnvironment.run([Self.script, "link", rigPath, up ? "up" : "down"], timeout: 10)
        guard r.code == 0 else { throw FixtureError( "link \(up ? "up" : "down"): \(r.output)") }
    }

    /// Stops `host`'s jackd (its clients stay and see a server loss) and starts it again `seconds` later; the
    /// master's netmanager is loaded again, the slave waits until it has re-joined.
    public func restart(_ host: Host, after seconds: Double) throws {
        let r = try TestEnvironment.run([Self.script, "restart", rigPath, host.rawValue, String(format: "%.1f", seconds)],
                                        timeout: 40)
        guard r.code == 0 else { throw FixtureError("restart \(host.rawValue): \(r.output)") }
    }

    /// Ports of `host` matching a regular expression, with their latency lines (`jack_lsp -l`).
    public func ports(_ host: Host) -> String {
        (try? run(host, ["jack_lsp", "-l"]))?.output ?? ""
    }

    /// The latency range JACK declares for `port` on `host` (`mode`: "capture" or "playback"), from `jack_lsp -l`.
    public func declaredLatency(_ host: Host, port: String, mode: String) -> Int? {
        let lines = ports(host).split(separator: "\n").map(String.init)
        guard let i = lines.firstIndex(of: port) else { return nil }
        for line in lines[(i + 1)...] {
            if !line.hasPrefix("\t") { break }
            if line.contains("port \(mode) latency"), let m = line.firstMatch(of: /\[ (\d+) (\d+) \]/) {
                return Int(m.1)
            }
        }
        return nil
    }

    /// The pids of the rig's processes, holders and servers, as the script recorded them.
    public var recordedPids: [pid_t] {
        let env = (try? String(contentsOfFile: rigPath + "/rig.env", encoding: .utf8)) ?? ""
        return env.matches(of: /(?:HOLDER|JACKD)=(\d+)/).compactMap { pid_t($0.1) }
    }

    /// The rig's two network namespaces ("net:[inode]").
    public var namespaces: [String] {
        let env = (try? String(contentsOfFile: rigPath + "/rig.env", encoding: .utf8)) ?? ""
        return env.matches(of: /_NS='(net:\[\d+\])'/).map { String($0.1) }
    }

    /// Processes anywhere on the machine that are in one of `namespaces`.
    public static func processes(in namespaces: [String]) -> [pid_t] {
        guard !namespaces.isEmpty else { return [] }
        let all = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return all.compactMap { pid_t($0) }.filter { pid in
            let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
            return link.map { namespaces.contains($0) } ?? false
        }
    }

    /// Whether `pid` runs (an exited process not yet reaped by its parent, a zombie, does not count).
    public static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[close...].hasPrefix(") Z")
    }

    /// Stops the rig (slave, netmanager, master, holders) and says whether anything was left.
    @discardableResult
    public func stop() -> (clean: Bool, output: String) {
        guard running else { return (true, "") }
        running = false
        let r = (try? TestEnvironment.run([Self.script, "stop", rigPath], timeout: 60)) ?? (code: -1, output: "")
        return (r.code == 0, r.output)
    }

    /// The servers' logs, for a failed test's message.
    public var logs: String {
        ["master-jackd.log", "slave-jackd.log", "watcher.log"].map { name in
            let text = (try? String(contentsOfFile: rigPath + "/" + name, encoding: .utf8)) ?? ""
            return "--- \(name)\n" + text.split(separator: "\n").filter { !$0.contains("XRun") && !$0.contains("Process error") }
                .suffix(15).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    deinit { stop() }
}

/// A test fixture (a rig, a daemon) that could not be set up, in words.
public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
