import Testing
import Foundation
import Jack
import Plugins
import TestSupport

/// The real-time path, proven: the LD_PRELOAD interposer counts allocations, locks, writes and Swift runtime
/// calls made inside process callbacks.
@Suite(.serialized) struct RTSafetyTests {
    struct Report {
        var cycles = 0
        var events = -1
        var line = ""
    }

    static func lastReport(_ path: String) -> Report {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("rtcheck ") }) else { return Report() }
        var r = Report(line: String(line))
        for field in line.split(separator: " ") {
            let kv = field.split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0] == "cycles" { r.cycles = Int(kv[1]) ?? 0 }
            if kv.count == 2, kv[0] == "events" { r.events = Int(kv[1]) ?? -1 }
        }
        return r
    }

    var interposer: String { TestEnvironment.product("libRTCheck.so") }

    /// Steady recording of 16 channels (fed by sndfile-jackplay, rotating files every second): zero events.
    @Test(.enabled(if: TestEnvironment.hasProgram("sndfile-jackplay")))
    func recorderCallbackIsCleanWhileRecordingSixteenChannels() throws {
        let server = try TestEnvironment.server("rtrec", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rtrec")
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 16), channels: 16, path: source)
        let reportPath = dir.appendingPathComponent("rtcheck.txt").path
        let tandem = try TandemProcess(["record", "-c", "16", "-d", dir.path, "--rotate", "1"], server: server,
                                       extraEnvironment: ["LD_PRELOAD": interposer, "RTCHECK_REPORT": reportPath],
                                       log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor(" recording: "))
        let player = try startJackplay(source, pattern: "tandem-rec:in_%d", server: server, loop: true,
                                       log: dir.appendingPathComponent("jackplay.log").path)
        usleep(4_000_000)
        tandem.process.signal(SIGINT)
        #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output)")
        player.stop()
        let r = Self.lastReport(reportPath)
        #expect(r.cycles > 500, "\(r.line)")
        #expect(r.events == 0, "\(r.line)")
        #expect(tandem.output.contains("chunk 3"), "rotation happened while measured")
    }

    /// The check can fail: a callback that builds an array and a string each cycle is caught.
    /// Recording and playing through a chain of SWH plugins (a high-pass filter, then an amplifier) and the LADSPA
    /// SDK's high-pass, one instance per channel; the recorder also through x42's delay line with 1000 frames of
    /// latency, dry input beside: the process callbacks, plugins included, make no allocation, lock or write.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2")
                   && TestEnvironment.hasProgram("sndfile-jackplay")))
    func callbacksAreCleanWithAChainOfSWHPlugins() throws {
        let server = try TestEnvironment.server("rtlv2", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rtlv2")
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 4), channels: 4, path: source)
        // And a LADSPA plugin in each engine's chain (issue 47): the SDK's high-pass, one instance per channel.
        let ladspa = FileManager.default.fileExists(atPath: "/usr/lib/ladspa/filter.so")
            ? ["--plugin", "ladspa:filter/hpf,cutoff_frequency_hz=30"] : []
        let chain = ["--plugin", "http://plugin.org.uk/swh-plugins/highpass_iir,cutoff=80",
                     "--plugin", "http://plugin.org.uk/swh-plugins/amp,gain=-3"] + ladspa
        let recReport = dir.appendingPathComponent("rec.txt").path
        // The recorder also runs a plugin with latency and records the dry input, delayed to match (the dry delay
        // line and the latency announcement are on the process thread).
        let latent = FileManager.default.fileExists(atPath: "/usr/lib/lv2/nodelay.lv2/nodelay.so")
            ? ["--plugin", "http://gareus.org/oss/lv2/nodelay,delay=1000", "--dry",
               // A side-chain compressor (its side input silent), and a bypassed plugin with latency (the host's
               // latency-aligned dry path).
               "--plugin", "http://plugin.org.uk/swh-plugins/sc2,threshold=-20",
               "--plugin", "http://gareus.org/oss/lv2/nodelay,name=bypassed,delay=300,bypass"] : []
        let rec = try TandemProcess(["record", "-c", "4", "-d", dir.path, "--loudness"] + chain + latent, server: server,
                                    extraEnvironment: ["LD_PRELOAD": interposer, "RTCHECK_REPORT": recReport],
                                    log: dir.appendingPathComponent("rec.log").path)
        #expect(rec.waitFor(" recording: "))
        let player = try startJackplay(source, pattern: "tandem-rec:in_%d", server: server, loop: true,
                                       log: dir.appendingPathComponent("jackplay.log").path)
        usleep(3_000_000)
        rec.process.signal(SIGINT)
        #expect(rec.process.wait(timeout: 15) == 0, "\(rec.output)")
        player.stop()
        let playReport = dir.appendingPathComponent("play.txt").path
        let play = try TandemProcess(["play", source, "--loop", "all", "--loudness", "--connect", "system:playback_.*"] + chain,
                                     server: server,
                                     extraEnvironment: ["LD_PRELOAD": interposer, "RTCHECK_REPORT": playReport],
                                     log: dir.appendingPathComponent("play.log").path)
        usleep(3_000_000)
        play.process.signal(SIGINT)
        #expect(play.process.wait(timeout: 15) == 0, "\(play.output)")
        for (name, path) in [("record", recReport), ("play", playReport)] {
            let r = Self.lastReport(path)
            #expect(r.cycles > 300, "\(name): \(r.line)")
            #expect(r.events == 0, "\(name): \(r.line)")
        }
    }

    @Test func interposerCatchesABadCallback() throws {
        let server = try TestEnvironment.server("rtbad", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rtbad")
        var results: [String: Report] = [:]
        for mode in ["clean", "bad"] {
            let reportPath = dir.appendingPathComponent("\(mode).txt").path
            let p = try ChildProcess([TestEnvironment.product("rtcheck-probe"), server.name, mode, "1.5"],
                                     environment: ["LD_PRELOAD": interposer, "RTCHECK_REPORT": reportPath],
                                     outputPath: dir.appendingPathComponent("\(mode).log").path)
            #expect(p.wait(timeout: 15) == 0)
            results[mode] = Self.lastReport(reportPath)
        }
        #expect(results["clean"]!.cycles > 100 && results["clean"]!.events == 0, "\(results["clean"]!.line)")
        #expect(results["bad"]!.cycles > 100 && results["bad"]!.events > 0, "\(results["bad"]!.line)")
    }

    /// A rack running a chain of SWH and x42 plugins (high-pass, amplifier, x42's fil4 EQ; two channels, one instance
    /// each) and two LADSPA ones (swh's amp, the SDK's high-pass) for 5 s, in its own `tandem rack` process and isolated under a recording session: its callback (and the
    /// recorder's beside it) makes no allocation, lock or write. Every process under the interposer appends its line.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2")
                   && PluginHost.shared.plugin("http://gareus.org/oss/lv2/fil4#mono") != nil
                   && PluginHost.shared.plugin("ladspa:amp_1181/amp") != nil
                   && TestEnvironment.hasProgram("sndfile-jackplay")))
    func rackCallbacksAreCleanInAndOutOfIsolation() throws {
        let server = try TestEnvironment.server("rtrack", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rtrack")
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 2), channels: 2, path: source)
        // LADSPA plugins beside the LV2 ones (issue 47): the glue around their run adds nothing.
        let chain = ["http://plugin.org.uk/swh-plugins/highpass_iir,cutoff=80", "http://plugin.org.uk/swh-plugins/amp,gain=-3",
                     "http://gareus.org/oss/lv2/fil4#mono", "ladspa:amp_1181/amp,amps_gain_db=-1",
                     "ladspa:filter/hpf,cutoff_frequency_hz=40"]
        let environment = { (report: String) in ["LD_PRELOAD": interposer, "RTCHECK_REPORT": report] }
        let player = try startJackplay(source, pattern: "fx:in_%d", server: server, loop: true,
                                       log: dir.appendingPathComponent("jackplay.log").path)
        defer { player.stop() }

        // In its own process, as `tandem rack`.
        let alone = dir.appendingPathComponent("alone.txt").path
        let rack = try TandemProcess(["rack", "--name", "fx", "--inputs", "2", "--loudness"] + chain.flatMap { ["--plugin", $0] },
                                     server: server, extraEnvironment: environment(alone),
                                     log: dir.appendingPathComponent("rack.log").path)
        #expect(rack.waitFor("rack fx ready"), "\(rack.output)")
        usleep(5_000_000)
        rack.process.signal(SIGINT)
        #expect(rack.process.wait(timeout: 10) == 0, "\(rack.output)")
        let r = Self.lastReport(alone)
        #expect(r.cycles > 800 && r.events == 0, "\(r.line)")

        // Isolated under a session that records its output.
        let isolated = dir.appendingPathComponent("isolated.txt").path
        let path = dir.appendingPathComponent("iso.toml").path
        try """
            [session]
            name = "rtiso"
            directory = "\(dir.path)"
            [recorder]
            channels = 2
            [[rack]]
            name = "fx"
            inputs = 2
            \(chain.map { "[[rack.plugins]]\nuri = \"\($0.split(separator: ",")[0])\"" }.joined(separator: "\n"))
            [[connect]]
            from = "fx:out_*"
            to = "tandem-rec:in_*"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", "--control-port", "0", path], server: server,
                                    extraEnvironment: environment(isolated),
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("connected fx:out_2 -> tandem-rec:in_2"), "\(run.output)")
        usleep(5_000_000)
        run.process.signal(SIGINT)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let lines = ((try? String(contentsOfFile: isolated, encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.hasPrefix("rtcheck ") }
        #expect(lines.count >= 2, "the session and the rack's process each report: \(lines)")
        for line in lines {
            #expect(line.contains(" events=0") && !line.contains(" cycles=0 "), "\(line)")
        }
    }

    /// Scenes recalled and morphed while the rack runs (issue 48): glides in slices, a toggle switched under the
    /// stage's crossfade, a ramped bypass, the mix and gain gliding, holds: the callbacks stay clean.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/lv2/butterworth-swh.lv2")
                   && PluginHost.shared.plugin("http://gareus.org/oss/lv2/fil4#mono") != nil
                   && TestEnvironment.hasProgram("sndfile-jackplay")))
    func callbacksAreCleanWhileScenesGlide() throws {
        let server = try TestEnvironment.server("rtscene", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rtscene")
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: source)
        let player = try startJackplay(source, pattern: "fx:in_%d", server: server, loop: true,
                                       log: dir.appendingPathComponent("jackplay.log").path)
        defer { player.stop() }
        let report = dir.appendingPathComponent("scenes.txt").path
        let port = 31000 + Int(getpid() % 20000)
        let path = dir.appendingPathComponent("scenes.toml").path
        try """
            [session]
            name = "rtscene"
            directory = "\(dir.path)"
            control_port = \(port)
            [[rack]]
            name = "fx"
            inputs = 1
            outputs = 1
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/amp"
            name = "amp"
            [[rack.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/butthigh_iir"
            name = "hp"
            [[rack.plugins]]
            uri = "http://gareus.org/oss/lv2/fil4#mono"
            name = "eq"
            [[scene]]
            name = "a"
            ramp_ms = 40
            values = { "fx/amp/gain" = 0.0, "fx/hp/cutoff" = 100, "fx/eq/HighPass" = 0, "fx/hp/@bypass" = false, "fx/@mix" = 1.0, "fx/@gain" = 0.0 }
            [[scene]]
            name = "b"
            ramp_ms = 40
            values = { "fx/amp/gain" = -20.0, "fx/hp/cutoff" = 3000, "fx/eq/HighPass" = 1, "fx/hp/@bypass" = true, "fx/@mix" = 0.5, "fx/@gain" = -6.0 }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", path], server: server,
                                    extraEnvironment: ["LD_PRELOAD": interposer, "RTCHECK_REPORT": report],
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("control protocol listening"), "\(run.output)")
        for k in 0..<40 {
            let reply = k % 4 == 3
                ? try CommandSurfacesTests.osc(port, "/tandem/scene/morph", [.text("a"), .text("b"), .number(Double(k % 8) / 8)])
                : try CommandSurfacesTests.osc(port, "/tandem/scene/recall", [.text(k % 2 == 0 ? "b" : "a")])
            #expect(reply.ok, "\(reply.detail)")
            usleep(70_000)
        }
        run.process.signal(SIGINT)
        #expect(run.process.wait(timeout: 15) == 0, "\(run.output)")
        let r = Self.lastReport(report)
        print("rtcheck figure: scenes recalled and morphed 40 times in a rack: \(r.line)")
        #expect(r.cycles > 400 && r.events == 0, "\(r.line)")
    }

    /// MIDI flowing: `tandem play` plays a dense MIDI file (about 330 events a second, looped) from its MIDI port into
    /// `tandem record --midi-port`, which writes it into the take's MIDI file: both callbacks stay clean.
    @Test func callbacksAreCleanWithMIDIFlowing() throws {
        let server = try TestEnvironment.server("rtmidi", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rtmidi")
        let song = dir.appendingPathComponent("dense.mid").path
        _ = try Mido.run("""
            import sys, mido
            f = mido.MidiFile(type=0, ticks_per_beat=480); t = mido.MidiTrack(); f.tracks.append(t)
            for i in range(2000):
                t.append(mido.Message('note_on', note=i % 128, velocity=100, time=3))
                t.append(mido.Message('note_off', note=i % 128, velocity=0, time=3))
            f.save(sys.argv[1])
            """, [song])
        let recReport = dir.appendingPathComponent("rec.txt").path
        let playReport = dir.appendingPathComponent("play.txt").path
        let rec = try TandemProcess(["record", "-c", "1", "-d", dir.path, "--midi-port", "midi_in"], server: server,
                                    extraEnvironment: ["LD_PRELOAD": interposer, "RTCHECK_REPORT": recReport],
                                    log: dir.appendingPathComponent("rec.log").path)
        #expect(rec.waitFor(" recording: "))
        let play = try TandemProcess(["play", song, "--loop", "all"], server: server,
                                     extraEnvironment: ["LD_PRELOAD": interposer, "RTCHECK_REPORT": playReport],
                                     log: dir.appendingPathComponent("play.log").path)
        let patch = try JackClient(name: "patch", server: server.name)
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            (try? patch.connect("tandem-play:midi_out", "tandem-rec:midi_in")) != nil
        })
        usleep(4_000_000)
        play.process.signal(SIGINT)
        rec.process.signal(SIGINT)
        #expect(play.process.wait(timeout: 15) == 0, "\(play.output)")
        #expect(rec.process.wait(timeout: 15) == 0, "\(rec.output)")
        patch.close()
        let midi = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasSuffix(".mid") && $0 != "dense.mid" })
        let recorded = try Mido.frames(dir.appendingPathComponent(midi).path, rate: 48000).events.count
        #expect(recorded > 1000, "events recorded while measured: \(recorded)")
        for (name, path) in [("record", recReport), ("play", playReport)] {
            let r = Self.lastReport(path)
            #expect(r.cycles > 300, "\(name): \(r.line)")
            #expect(r.events == 0, "\(name): \(r.line)")
        }
    }
}
