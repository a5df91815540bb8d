import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

@Suite(.serialized) struct PlayCommandTests {
    /// A 16-channel 24-bit 48 kHz file played into jack_capture (a real peer) arrives sample for sample from its
    /// first frame to its last, and nothing after it.
    @Test(.enabled(if: TestEnvironment.hasProgram("jack_capture")))
    func sixteenChannelsIntoJackCaptureAreBitExact() throws {
        let server = try TestEnvironment.server("play16")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("play16")
        let noise = Signals.noise(frames: 5 * 48000, channels: 16, seed: 160)
        let source = dir.appendingPathComponent("noise16.wav").path
        try TestEnvironment.writeWAV(noise, channels: 16, path: source, sample: .int24)
        let tandem = try TandemProcess(["play", "--wait", source], server: server,
                                       log: dir.appendingPathComponent("tandem.log").path)
        #expect(TestEnvironment.waitUntil(timeout: 10) { JackServer.probe(server.name) && tandem.output.contains("player ready") })
        let capturePath = dir.appendingPathComponent("capture.wav").path
        let peer = try ChildProcess(
            ["jack_capture", "-d", "8", "-c", "16", "-b", "32", "-f", "wav", "-dc", "-ns"]
                + (1...16).flatMap { ["--port", "tandem-play:out_\($0)"] } + [capturePath],
            environment: ["JACK_DEFAULT_SERVER": server.name, "JACK_NO_START_SERVER": "1"],
            outputPath: dir.appendingPathComponent("jack_capture.log").path)
        let observer = try JackClient(name: "observer", server: server.name)
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            (1...16).allSatisfy { !observer.connections(of: "tandem-play:out_\($0)").isEmpty }
        }, "jack_capture connected all 16 ports")
        observer.close()
        tandem.process.signal(SIGUSR1)
        #expect(tandem.process.wait(timeout: 20) == 0, "\(tandem.output)")
        #expect(tandem.output.contains("finished: 240000 frames played, 0 underrun frames"), "\(tandem.output)")
        #expect(peer.wait(timeout: 15) == 0)
        let captured = try TestEnvironment.readAudio(capturePath)
        let alignment = AudioCompare.align(source: noise, recorded: captured.samples, channels: 16)
        let m = try #require(alignment)
        #expect(m.matchedFrames == 240_000 && m.mismatchedFrames == 0 && m.extraFrames == 0, "\(m)")
        // From its first frame: nothing non-silent before the aligned start.
        #expect(!captured.samples[..<(m.recordedOffset * 16)].contains { $0 != 0 })
    }

    /// The player stopped (SIGSTOP) three times for 60 ms while playing: the server runs those cycles without it and
    /// without the sink after it. Every file frame still reaches the sink in order; the player counts the frames of
    /// the skipped cycles and the server's xruns in its summary. The sink also records a clock client's frame-time
    /// labels (a client the stops do not touch), so each skipped cycle shows there as a jump: the sums must agree.
    @Test func cyclesTheServerRanWithoutThePlayerAreCountedInItsSummary() throws {
        let server = try TestEnvironment.server("pmissed")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("pmissed")
        let noise = Signals.noise(frames: 96_000, channels: 1, seed: 4)
        let source = dir.appendingPathComponent("n.wav").path
        try TestEnvironment.writeWAV(noise, channels: 1, path: source)
        let (clock, clockState) = try LoopState.lateClock(name: "clock", server: server.name, stallEvery: 0,
                                                          stallMicros: 0)
        let sink = try TestCapture(name: "sink", server: server.name, channels: 2, seconds: 8)
        try clock.connect("clock:out_1", "sink:in_2")
        let tandem = try TandemProcess(["play", "--wait", "--connect", "sink:in_1", source], server: server,
                                       log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor("player ready"))
        usleep(200_000)
        tandem.process.signal(SIGUSR1)
        #expect(tandem.waitFor("playing 1/1"))
        for _ in 0..<3 {
            usleep(300_000)
            tandem.process.signal(SIGSTOP)
            usleep(60_000)
            tandem.process.signal(SIGCONT)
        }
        #expect(tandem.process.wait(timeout: 10) == 0, "\(tandem.output)")
        sink.close()
        clock.close()
        LoopState.free(clockState)
        let summary = try #require(tandem.output.firstMatch(
            of: /finished: (\d+) frames played, (\d+) underrun frames, (-?\d+) frames of skipped cycles, (\d+) xruns/),
            "\(tandem.output)")
        #expect(Int(summary.1) == 96_000 && Int(summary.2) == 0, "\(tandem.output)")
        let missed = Int(summary.3)!
        #expect(Int(summary.4)! > 0, "the server reported the late cycles: \(tandem.output)")

        let captured = sink.samples()
        let played = stride(from: 0, to: captured.count, by: 2).map { captured[$0] }
        let alignment = AudioCompare.alignment(source: noise, recorded: played, channels: 1)
        #expect(alignment.matchedFrames == 96_000 && alignment.mismatchedFrames == 0, "every file frame, in order: \(alignment)")
        let labels = stride(from: 1, to: captured.count, by: 2).map { captured[$0] }
        let skipped = (1..<labels.count).reduce(0) { $0 + LoopState.labelStep(labels[$1 - 1], labels[$1]) }
        #expect(skipped > 0, "the stops made the server skip the sink's cycles")
        #expect(missed == skipped, "the player counted \(missed) frames of skipped cycles, the sink saw \(skipped)")
    }

    @Test(.enabled(if: TestEnvironment.hasProgram("sndfile-jackplay")))
    func playerCallbackIsCleanWhilePlayingSixteenChannels() throws {
        let server = try TestEnvironment.server("rtplay", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rtplay")
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 30_000, channels: 16), channels: 16, path: source)
        let reportPath = dir.appendingPathComponent("rtcheck.txt").path
        let sink = try TestCapture(name: "sink", server: server.name, channels: 16, seconds: 1)
        let tandem = try TandemProcess(["play", "--loop", "item", "--connect", "sink:in_.*", "--gain=-3", source],
                                       server: server,
                                       extraEnvironment: ["LD_PRELOAD": TestEnvironment.product("libRTCheck.so"),
                                                          "RTCHECK_REPORT": reportPath],
                                       log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor("playing 1/1"))
        usleep(4_000_000)
        tandem.process.signal(SIGINT)
        #expect(tandem.process.wait(timeout: 10) == 0, "\(tandem.output)")
        sink.close()
        let r = RTSafetyTests.lastReport(reportPath)
        #expect(r.cycles > 500, "\(r.line)")
        #expect(r.events == 0, "\(r.line)")
    }

    @Test func badFilesAreNamedAndTheQueueGoesOn() throws {
        let server = try TestEnvironment.server("badplay")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("badplay")
        let good = dir.appendingPathComponent("good.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 2), channels: 2, path: good)
        let missing = dir.appendingPathComponent("missing.wav").path
        let tandem = try TandemProcess(["play", "-c", "2", missing, good, dir.path], server: server,
                                       log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.process.wait(timeout: 10) == 2, "exit 2 when a file could not be played")
        let out = tandem.output
        #expect(out.contains("cannot play '\(missing)'") && out.contains("no such file"))
        #expect(out.contains("cannot play '\(dir.path)'") && out.contains("directory"))
        #expect(out.contains("playing 2/3: \(good)"))
        #expect(out.contains("finished: 4800 frames played"))
    }

    /// A file without read permission: root reads everything, so the player runs as root without the capabilities
    /// that bypass permissions (setpriv); the file is named, the queue goes on.
    @Test(.enabled(if: getuid() == 0 && TestEnvironment.hasProgram("setpriv")))
    func anUnreadableFileIsNamedAndTheQueueGoesOn() throws {
        let server = try TestEnvironment.server("noperm")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("noperm")
        let good = dir.appendingPathComponent("good.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1), channels: 1, path: good)
        let locked = dir.appendingPathComponent("locked.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1), channels: 1, path: locked)
        chmod(locked, 0)
        let t = try TandemProcess(["play", "-c", "1", locked, good], server: server,
                                  log: dir.appendingPathComponent("play.log").path, wrapper:
                                    ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-all"])
        #expect(t.process.wait(timeout: 10) == 2, "\(t.output)")
        #expect(t.output.contains("cannot play '\(locked)'") && t.output.lowercased().contains("permission"), "\(t.output)")
        #expect(t.output.contains("finished: 4800 frames played"))
    }
}
