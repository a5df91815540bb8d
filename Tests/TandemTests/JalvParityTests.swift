import Foundation
import Jack
import Testing
import TestSupport

/// Parity with jalv (Debian's jalv, a real peer): the same noise through the same plugin with the same non-default
/// controls, once in Tandem's player chain and once in jalv, both captured by in-process JACK clients on one
/// private server, aligned by their first sample, compared sample for sample.
@Suite(.serialized) struct JalvParityTests {
    static let ready = TestEnvironment.hasProgram("jalv")
        && FileManager.default.fileExists(atPath: "/usr/lib/lv2/highpass_iir-swh.lv2")
        && FileManager.default.fileExists(atPath: "/usr/lib/lv2/lcr_delay-swh.lv2")

    struct Outcome {
        var compared = 0, differing = 0
        var largest: Float = 0
        var lag = 0
        /// Xruns the server reported during the run (a client skipped a cycle: the two paths no longer agree, for no
        /// fault of either host).
        var xruns = 0
        /// The first differing frame, counted from the first frame of noise, and the two values there.
        var firstDifference: (frame: Int, tandem: Float, jalv: Float)?
    }

    /// Tandem's player with `--plugin` into one capture; Tandem's player without plugins into jalv into another.
    /// `rack`: Tandem's side is a rack (`tandem rack`, fed by a plugin-less player) instead of the player's chain.
    static func compare(tag: String, uri: String, controls: [(String, Double)], inputs: [String], outputs: [String],
                        rack: Bool = false) throws -> Outcome {
        let channels = inputs.count
        // A long period: fewer chances for a loaded machine to make the server skip a client (an xrun).
        let server = try TestEnvironment.server("jalv\(tag)", period: 1024)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("jalv\(tag)")
        let seconds = 2
        let noise = Signals.noise(frames: seconds * 48000, channels: channels, seed: 0x51DE + UInt64(channels)).map { $0 * 0.5 }
        let file = dir.appendingPathComponent("noise.wav").path
        // Half a second of silence first: whatever a late connection cuts off is silence, and each plugin's state
        // is still its initial one when the noise arrives.
        // And a second of silence after: a player that ends (its client leaving the graph) does so after the compared
        // stretch (a client leaving can cost the clients after it a cycle, which shifts a delay's tail).
        try TestEnvironment.writeWAV([Float](repeating: 0, count: 24000 * channels) + noise
                                     + [Float](repeating: 0, count: 48000 * channels), channels: channels, path: file)
        let tandemCapture = try TestCapture(name: "capt", server: server.name, channels: channels, seconds: 20)
        let jalvCapture = try TestCapture(name: "capj", server: server.name, channels: channels, seconds: 20)

        // Tandem: file → player chain → capt, or file → player → rack → capt.
        let spec = ([uri] + controls.map { "\($0.0)=\($0.1)" }).joined(separator: ",")
        if rack {
            let rk = try TandemProcess(["rack", "--name", "rk", "--inputs", "\(channels)", "--plugin", spec]
                                       + (1...channels).flatMap { ["--connect-out", "capt:in_\($0)"] },
                                       server: server, log: dir.appendingPathComponent("rack.log").path)
            defer { rk.process.signal(SIGTERM); _ = rk.process.wait(timeout: 10) }
            #expect(rk.waitFor("connected rk:out_\(channels) -> capt:in_\(channels)"), "\(rk.output)")
            let played = try TandemProcess(["play"] + (1...channels).flatMap { ["--connect", "rk:in_\($0)"] } + [file],
                                           server: server, log: dir.appendingPathComponent("tandem.log").path)
            #expect(played.process.wait(timeout: 30) == 0, "\(played.output)")
        } else {
            let played = try TandemProcess(["play", "--plugin", spec] + (1...channels).flatMap { ["--connect", "capt:in_\($0)"] }
                                           + [file], server: server, log: dir.appendingPathComponent("tandem.log").path)
            #expect(played.process.wait(timeout: 30) == 0, "\(played.output)")
        }

        // jalv: its console reads commands from stdin and exits at end of input, so stdin is a pipe held open.
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[1]) }
        let jalv = try ChildProcess(["jalv", "-n", "jalvp", "-x"] + controls.flatMap { ["-c", "\($0.0)=\($0.1)"] } + [uri],
                                    environment: ["JACK_DEFAULT_SERVER": server.name, "JACK_NO_START_SERVER": "1"],
                                    outputPath: dir.appendingPathComponent("jalv.log").path, stdinFD: fds[0])
        close(fds[0])
        defer { jalv.stop(SIGTERM) }
        let client = jalvCapture.client
        #expect(TestEnvironment.waitUntil(timeout: 10) { outputs.allSatisfy { client.portExists("jalvp:\($0)") } })
        // Ports exist before jalv activates its client; JACK refuses connections until then.
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            outputs.enumerated().allSatisfy { k, port in
                client.connections(of: "capj:in_\(k + 1)").contains("jalvp:\(port)")
                    || (try? client.connect("jalvp:\(port)", "capj:in_\(k + 1)")) != nil
            }
        })
        let source = try TandemProcess(["play"] + inputs.flatMap { ["--connect", "jalvp:\($0)"] } + [file],
                                       server: server, log: dir.appendingPathComponent("source.log").path)
        #expect(source.process.wait(timeout: 30) == 0, "\(source.output)")
        usleep(300_000)
        let xruns = jalvCapture.client.notifications.count(.xrun)
        tandemCapture.close()
        jalvCapture.close()

        let a = tandemCapture.samples(), b = jalvCapture.samples()
        // The plugin did something: Tandem's output is not its input.
        let start = try #require(a.firstIndex { abs($0) > 1e-6 })
        #expect(zip(a[start...].prefix(4800), noise.prefix(4800)).contains { $0 != $1 })
        // Align on the first sample each capture got from the plugin (both started from silence), then by the lag
        // around it with the least difference.
        func onset(_ x: [Float]) -> Int? { x.firstIndex { abs($0) > 1e-6 }.map { $0 / channels } }
        let oa = try #require(onset(a)), ob = try #require(onset(b))
        var best = Outcome()
        best.differing = Int.max
        let end = seconds * 48000 + 12000
        for d in -8...8 {
            let lag = ob - oa + d
            var out = Outcome()
            out.lag = lag
            var f = oa
            // The noise and a quarter second of its tail: past that the tail is below 1e-9, where a skipped cycle on
            // a loaded machine (a time shift of a signal that small) is all a difference could be.
            while f < a.count / channels && f + lag < b.count / channels && f + lag >= 0 && f - oa < end {
                for c in 0..<channels {
                    let diff = abs(a[f * channels + c] - b[(f + lag) * channels + c])
                    if diff > 0 {
                        out.differing += 1
                        if out.firstDifference == nil {
                            out.firstDifference = (f - oa, a[f * channels + c], b[(f + lag) * channels + c])
                        }
                    }
                    out.largest = max(out.largest, diff)
                }
                out.compared += 1
                f += 1
            }
            if out.differing < best.differing { best = out }
        }
        best.xruns = xruns
        print("measured: \(uri) \(controls) Tandem vs jalv: \(best.compared) frames compared at lag \(best.lag),"
              + " \(best.differing) samples differ, largest difference \(best.largest)"
              + ", \(xruns) xrun(s)" + (best.firstDifference.map { ", first at noise frame \($0.frame) (Tandem \($0.tandem), jalv \($0.jalv))" } ?? ""))
        return best
    }

    /// Up to four runs: a run with differences and server xruns is run again; differences without an xrun fail.
    static func clean(_ run: () throws -> Outcome) throws -> Outcome {
        var r = try run()
        for _ in 0..<3 where r.differing != 0 && r.xruns > 0 { r = try run() }
        return r
    }

    @Test(.enabled(if: ready))
    func monoHighpassEqualsJalvSampleForSample() throws {
        let r = try Self.clean { try Self.compare(tag: "mono", uri: "http://plugin.org.uk/swh-plugins/highpass_iir",
                                 controls: [("cutoff", 1000), ("stages", 3)], inputs: ["input"], outputs: ["output"]) }
        #expect(r.compared == 2 * 48000 + 12000 && r.differing == 0, "\(r)")
    }

    /// The same two plugins in a rack (`tandem rack`, live between ports): equal to jalv sample for sample.
    @Test(.enabled(if: ready), arguments: ["mono", "stereo"])
    func aRackEqualsJalvSampleForSample(_ shape: String) throws {
        let r = try Self.clean {
            shape == "mono"
                ? try Self.compare(tag: "rackmono", uri: "http://plugin.org.uk/swh-plugins/highpass_iir",
                                   controls: [("cutoff", 1000), ("stages", 3)], inputs: ["input"], outputs: ["output"],
                                   rack: true)
                : try Self.compare(tag: "rackstereo", uri: "http://plugin.org.uk/swh-plugins/lcrDelay",
                                   controls: Self.delayControls, inputs: ["in_l", "in_r"], outputs: ["out_l", "out_r"],
                                   rack: true)
        }
        #expect(r.compared == 2 * 48000 + 12000 && r.differing == 0, "\(r)")
    }

    static let delayControls: [(String, Double)] = [("ldel", 100), ("llev", 30), ("cdel", 250), ("clev", 40), ("rdel", 400),
                                                    ("rlev", 20), ("feedback", 30), ("high_d", 70), ("low_d", 20),
                                                    ("spread", 40), ("wet", 1)]

    @Test(.enabled(if: ready))
    func stereoDelayEqualsJalvSampleForSample() throws {
        let r = try Self.clean { try Self.compare(tag: "stereo", uri: "http://plugin.org.uk/swh-plugins/lcrDelay",
                                 controls: [("ldel", 100), ("llev", 30), ("cdel", 250), ("clev", 40), ("rdel", 400),
                                            ("rlev", 20), ("feedback", 30), ("high_d", 70), ("low_d", 20),
                                            ("spread", 40), ("wet", 1)],
                                 inputs: ["in_l", "in_r"], outputs: ["out_l", "out_r"]) }
        #expect(r.compared == 2 * 48000 + 12000 && r.differing == 0, "\(r)")
    }
}

/// Tandem's crash-on-command test plugin really crashes its host (what crash isolation will have to survive): in
/// `tandem play`, mode 1 ends the process by SIGSEGV and mode 2 by SIGABRT, from the process thread.
@Suite(.serialized) struct CrashPluginTests {
    @Test(.enabled(if: TestPlugins.canBuild))
    func theCrashPluginKillsAnUnisolatedHost() throws {
        let lv2 = try TestPlugins.lv2Path()
        let server = try TestEnvironment.server("crashplug", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("crashplug")
        let file = dir.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: file)
        for (mode, signal) in [(1, SIGSEGV), (2, SIGABRT)] {
            let play = try TandemProcess(["play", "--plugin", "\(TestPlugins.crash),mode=\(mode)", file], server: server,
                                         extraEnvironment: ["LV2_PATH": lv2, "SWIFT_BACKTRACE": "enable=no"],
                                         log: dir.appendingPathComponent("play\(mode).log").path)
            let code = play.process.wait(timeout: 20)
            #expect(code == 128 + signal, "mode \(mode): exit \(String(describing: code)); \(play.output)")
        }
    }
}
