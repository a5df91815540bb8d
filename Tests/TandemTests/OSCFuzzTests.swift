import Testing
import Foundation
import Control
import Engine
import Jack
import TestSupport

/// The OSC fuzzer (Sources/TestSupport/OSCFuzzer.swift) aimed at a recording session: `tandem run` with a recorder
/// fed by a looped noise source and a player (with a plugin when SWH is installed) for the play and plugin commands.
///
/// CI runs one fixed seed and 3,000 packets. `make fuzz SEED=7 COUNT=20000` (or the environment variables
/// TANDEM_FUZZ_SEEDS=7,8,9 and TANDEM_FUZZ_COUNT=20000, the total over the seeds) runs any amount. A summary of each
/// seed is written to /tmp/tandem-osc-fuzz.txt.
@Suite(.serialized) struct OSCFuzzTests {
    static let ciSeed: UInt64 = 0x0017_F022
    static let lv2Amp = FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2")

    static var seeds: [UInt64] {
        let text = ProcessInfo.processInfo.environment["TANDEM_FUZZ_SEEDS"] ?? ""
        let parsed = text.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
        return parsed.isEmpty ? [ciSeed] : parsed
    }

    static var count: Int {
        ProcessInfo.processInfo.environment["TANDEM_FUZZ_COUNT"].flatMap { Int($0) } ?? 3000
    }

    /// Packets left out (for measuring past a known fault): comma-separated fragments of a packet's description, as
    /// in a failure message; `own-port` stands for the session's control port. Never set in CI.
    static var exclusions: [String] {
        (ProcessInfo.processInfo.environment["TANDEM_FUZZ_EXCLUDE"] ?? "").split(separator: ",").map(String.init)
    }

    /// The fuzzer's list of commands is the protocol's: a new command cannot be left out of the fuzzing.
    @Test func theFuzzerKnowsEveryCommandOfTheProtocol() {
        #expect(OSCFuzzer.commands == ControlProtocol.commands)
    }

    /// The same seed makes the same packets; another seed makes others; every kind of packet occurs.
    @Test func theFuzzerIsRepeatableAndCoversEveryKind() {
        let target = OSCFuzzer.Target(controlPort: 9999, sessionFiles: ["a.toml"], plugins: [("player", "level", "gain")])
        var a = OSCFuzzer(seed: 7, target: target), b = OSCFuzzer(seed: 7, target: target), c = OSCFuzzer(seed: 8, target: target)
        var same = true, differs = false
        for _ in 0..<2000 {
            let (pa, pb, pc) = (a.next(), b.next(), c.next())
            same = same && pa.bytes == pb.bytes
            differs = differs || pa.bytes != pc.bytes
        }
        #expect(same && differs)
        #expect(Set(a.kinds.keys) == ["typed", "types", "self-subscribe", "address", "garbage", "truncated", "bitflip",
                                      "tags", "oversized", "bundle"], "\(a.kinds)")
        var seekHuge = false
        var d = OSCFuzzer(seed: 1, target: target)
        for _ in 0..<5000 {
            let p = d.next()
            if p.summary.hasPrefix("/tandem/play/seek") && (p.summary.contains("1e+15") || p.summary.contains("1000000000000000")) {
                seekHuge = true
            }
        }
        #expect(seekHuge, "seek 1e15 is among the values tried")
    }

    /// Thousands of hostile packets at a recording session: it answers every ping, never crashes, a SIGINT sent
    /// during a flood ends it within 1 s, and every take it wrote is intact (readable, frames as reported,
    /// "stopped", the source's audio frame for frame).
    @Test(.timeLimit(.minutes(30)))
    func aRecordingSessionSurvivesTheOSCFuzzer() throws {
        let seeds = Self.seeds
        let perSeed = max(1, Self.count / seeds.count)
        var lines: [String] = []
        for seed in seeds {
            let o = try fuzzSession(seed: seed, count: perSeed)
            lines.append(o.description)
            print(o.description)
            #expect(o.crash == nil, "seed \(seed): the session died (exit \(o.crash ?? 0)) after \(o.sent) packets; last packets:\n\(o.lastPackets)\n\(o.log)")
            #expect(o.hang == nil, "seed \(seed): no pong within 2 s after \(o.sent) packets; last packets:\n\(o.lastPackets)\n\(o.hang ?? "")")
            if o.crash == nil && o.hang == nil {
                #expect(o.pongsMissing == 0, "seed \(seed): \(o.pongsMissing) pings unanswered")
                #expect(o.burstsMiscounted == 0 && o.unanswered == 0,
                        "\(o.unansweredMessage)")
            }
            guard o.crash == nil else { continue }
            #expect(o.stopSeconds.map { $0 < 1 } == true,
                    "seed \(seed): SIGINT during a flood ended the session in \(o.stopSeconds.map { String(format: "%.3f s", $0) } ?? "never (killed after 10 s)")\(o.stopHang.map { "\n" + $0 } ?? "")")
            #expect(o.exitCode == 0, "seed \(seed): exit code \(o.exitCode.map(String.init) ?? "none") after SIGINT\n\(o.log)")
            #expect(!o.takes.isEmpty, "seed \(seed): no take")
            for t in o.takes { #expect(t.problems.isEmpty, "seed \(seed): \(t)") }
        }
        try? (lines.joined(separator: "\n") + "\n").write(toFile: "/tmp/tandem-osc-fuzz.txt", atomically: true, encoding: .utf8)
    }

    struct Outcome: CustomStringConvertible {
        var seed: UInt64
        var sent = 0
        var pings = 0
        var refusedByKernel = 0
        var pongsMissing = 0
        var burstsMiscounted = 0
        var miscounted: [String] = []
        var replies = 0
        var crash: Int32?
        var hang: String?
        var stopSeconds: Double?
        var stopHang: String?
        var exitCode: Int32?
        var floodSent = 0
        var takes: [TakeCheck] = []
        var kinds: [String: Int] = [:]
        var lastPackets = ""
        var log = ""
        var seconds = 0.0

        var unanswered: Int { sent + pings - replies }
        var unansweredMessage: String {
            "seed \(seed): every message gets exactly one reply; \(unanswered) of \(sent + pings) got none, "
                + "\(burstsMiscounted) bursts miscounted, e.g.\n" + miscounted.joined(separator: "\n")
        }

        var description: String {
            let intact = takes.filter(\.problems.isEmpty).count
            return "seed \(seed): \(sent) packets + \(pings) pings/markers in \(String(format: "%.1f", seconds)) s, "
                + "\(replies) replies (\(unanswered) missing, \(burstsMiscounted) bursts miscounted); crash: \(crash.map { "exit \($0)" } ?? "none"), hang: \(hang == nil ? "none" : "yes"); "
                + "SIGINT during a flood of \(floodSent) packets: "
                + (stopSeconds.map { String(format: "%.3f s", $0) } ?? "no exit within 10 s")
                + ", exit \(exitCode.map(String.init) ?? "-"); takes intact \(intact)/\(takes.count)"
                + (takes.isEmpty ? "" : " [" + takes.map(\.description).joined(separator: " | ") + "]")
                + (crash == nil ? "" : "; " + log)
                + "; kinds \(kinds.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
        }
    }

    func fuzzSession(seed: UInt64, count: Int) throws -> Outcome {
        var o = Outcome(seed: seed)
        let server = try TestEnvironment.server("fuzz\(seed % 10000)")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("oscfuzz-\(seed)")
        let noise = try LoopedNoise(dir: dir)
        let port = LoopbackUDP.freePort()
        let preset = dir.appendingPathComponent("fuzz.toml").path
        var text = """
            [session]
            name = "fuzz"
            directory = "\(dir.path)"
            control_port = \(port)
            [recorder]
            client = "fz-rec"
            channels = 2
            [player]
            client = "fz-play"
            channels = 2
            queue = ["\(noise.path)"]
            loop = "item"

            """
        var plugins: [(engine: String, name: String, symbol: String)] = []
        if Self.lv2Amp {
            text += "[[player.plugins]]\nuri = \"http://plugin.org.uk/swh-plugins/amp\"\nname = \"level\"\ncontrols = { gain = 0 }\n"
            plugins.append(("player", "level", "gain"))
        }
        try text.write(toFile: preset, atomically: true, encoding: .utf8)
        // No backtracer: a trap ends the process at once (exit 132/133) instead of seconds later.
        let run = try TandemProcess(["run", preset], server: server, extraEnvironment: ["SWIFT_BACKTRACE": "enable=no"],
                                    log: dir.appendingPathComponent("run.log").path)
        defer { if run.process.isRunning { run.process.stop(SIGKILL) } }
        guard run.waitFor("take 1 recording"), run.waitFor("control protocol listening") else {
            o.crash = run.process.isRunning ? nil : run.process.exitCode
            o.log = run.output
            Issue.record("the session did not start: \(run.output)")
            return o
        }
        let source = try noise.play(into: "fz-rec:in_.*", server: server, client: "fz-src",
                                    log: dir.appendingPathComponent("source.log").path)
        defer { source.process.stop(SIGINT) }
        _ = source.waitFor("playing")
        usleep(300_000)

        let target = OSCFuzzer.Target(controlPort: port, sessionFiles: ["fuzz.toml", "noise.wav"], plugins: plugins)
        var fuzzer = OSCFuzzer(seed: seed, target: target)
        let socket = try LoopbackUDP()
        let ping = OSCWire.message("/tandem/ping", [])
        var recent: [OSCFuzzer.Packet] = []
        var burstBytes = 0
        let started = Date()

        var burst: [OSCFuzzer.Packet] = []
        var markers = 0

        /// Sends a ping and then a marker (an unknown address that names the burst, so its error reply is known),
        /// reads replies until the marker's arrives or `timeout` passes, and checks the ping was answered and every
        /// packet of the burst got exactly one reply. False when the marker's reply never came.
        func checkpoint(timeout: Double) -> Bool {
            markers += 1
            let marker = "/fuzz/marker/\(markers)"
            socket.send(ping, to: port)
            socket.send(OSCWire.message(marker, []), to: port)
            o.pings += 2
            let deadline = Date().addingTimeInterval(timeout)
            var pong = false, replies = 0
            while case let left = deadline.timeIntervalSinceNow, left > 0 {
                guard let bytes = socket.receive(timeout: min(left, 0.05)) else {
                    if !run.process.isRunning { return false }
                    continue
                }
                guard let m = OSCWire.decodeStrings(bytes), m.address == "/tandem/reply" else { continue }
                o.replies += 1
                if m.strings.count >= 2 && m.strings[1] == marker {
                    if !pong { o.pongsMissing += 1 }
                    let answered = replies - 1          // less the ping's own
                    if answered != burst.count {
                        o.burstsMiscounted += 1
                        if o.miscounted.count < 5 {
                            o.miscounted.append("burst of \(burst.count) got \(answered) replies:\n"
                                                + burst.prefix(30).map { "    \($0)" }.joined(separator: "\n"))
                        }
                    }
                    return true
                }
                replies += 1
                if m.strings.count >= 3 && m.strings[1] == "/tandem/ping" && m.strings[2] == "pong" { pong = true }
            }
            return false
        }

        fuzzing: for i in 0..<count {
            var p = fuzzer.next()
            let excluded = Self.exclusions.map { $0 == "own-port" ? ":\(port)" : $0 }
            while excluded.contains(where: { p.description.contains($0) || ($0 == ":\(port)" && p.description.contains("\"\(port)\"")) }) {
                p = fuzzer.next()
            }
            recent.append(p)
            if recent.count > 30 { recent.removeFirst() }
            if socket.send(p.bytes, to: port) {
                o.sent += 1
                burst.append(p)
                burstBytes += p.bytes.count
            } else {
                o.refusedByKernel += 1          // over the datagram size limit: never sent, nothing to answer
            }
            if burst.count >= 24 || burstBytes > 60_000 || i == count - 1 {
                // Answering means within 2 s (a session stuck in a loop that still answers now and then is not).
                let alive = checkpoint(timeout: 2)
                if !alive && run.output.contains("Fatal error") { _ = run.process.wait(timeout: 30) }
                if !run.process.isRunning {
                    o.crash = run.process.exitCode
                    break fuzzing
                }
                if !alive {
                    o.hang = hangReport(run.process.pid)
                    break fuzzing
                }
                burst.removeAll()
                burstBytes = 0
                if Date().timeIntervalSince(started) > max(120, Double(count) / 40) {
                    o.hang = "too slow: \(o.sent) packets in \(Int(Date().timeIntervalSince(started))) s\n" + hangReport(run.process.pid)
                    break fuzzing
                }
            }
        }
        // Late replies (a fuzzed ping answered after ours) still count.
        // (Bounded in time: a session in a loop may push without end.)
        let drainUntil = Date().addingTimeInterval(0.3)
        while Date() < drainUntil, let bytes = socket.receive(timeout: 0.1) {
            if OSCWire.decodeStrings(bytes)?.address == "/tandem/reply" { o.replies += 1 }
        }
        o.seconds = Date().timeIntervalSince(started)
        o.kinds = fuzzer.kinds
        o.lastPackets = recent.suffix(12).map { "  \($0)" }.joined(separator: "\n")

        if run.process.isRunning {
            // A flood from another thread (another stream of the same fuzzer), then SIGINT in the middle of it.
            let excluded = Self.exclusions.flatMap { $0 == "own-port" ? [":\(port)", "\"\(port)\""] : [$0] }
            let flood = try OSCFlood(port: port, seed: seed ^ 0xF100D, target: target, exclude: excluded)
            usleep(500_000)
            if run.process.isRunning {
                let signalled = Date()
                run.process.signal(SIGINT)
                let code = run.process.wait(timeout: 10)
                if code != nil {
                    o.stopSeconds = Date().timeIntervalSince(signalled)
                } else {
                    o.stopHang = hangReport(run.process.pid)
                    run.process.stop(SIGKILL)
                }
                o.exitCode = code
            } else {
                o.crash = run.process.exitCode
                o.lastPackets = "(during the flood)"
            }
            flood.stop()
            o.floodSent = flood.sent
        } else if o.crash == nil {
            o.crash = run.process.exitCode
        }
        let fatal = run.output.split(separator: "\n").filter { $0.contains("Fatal error") || $0.contains("Illegal instruction") }
        o.log = fatal.isEmpty ? String(run.output.suffix(2000)) : fatal.joined(separator: "\n")
        source.process.stop(SIGINT)
        o.takes = TakeCheck.reports(in: dir.path).map { TakeCheck.verify(report: $0, source: noise.index) }
        return o
    }
}
