import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// `tandem record` and `tandem play` run through the same session loop as `tandem run`: the control protocol
/// reaches them, and they show the live view on a terminal.
@Suite(.serialized) struct OneRunPolicyTests {
    static func freePort() -> Int { 31000 + Int(getpid() % 20000) }

    func ctl(_ args: [String]) throws -> (code: Int32, output: String) {
        try TestEnvironment.run([TestEnvironment.product("tandem")] + args, timeout: 10)
    }

    @Test func recordAnswersStatusAndCtlLikeRun() throws {
        let server = try TestEnvironment.server("onerec")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("onerec")
        let port = Self.freePort()
        let audio = dir.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.sine(frames: 4 * 48000, channels: 2, frequency: 440, sampleRate: 48000,
                                                  peak: 0.5), channels: 2, path: audio)
        let play = try TandemProcess(["play", "--loop", "item", "--client", "src", audio], server: server,
                                     log: dir.appendingPathComponent("play.log").path)
        defer { play.process.signal(SIGTERM); _ = play.process.wait(timeout: 10) }
        #expect(play.waitFor("playing 1/1"), "\(play.output)")
        let rec = try TandemProcess(["record", "-c", "2", "--dir", dir.path, "--session", "one", "--connect", "src:out_.*",
                                     "--control-port", "\(port)"], server: server,
                                    log: dir.appendingPathComponent("rec.log").path)
        #expect(rec.waitFor("control protocol listening"), "\(rec.output)")
        #expect(rec.waitFor("take 1 recording"), "\(rec.output)")
        usleep(500_000)
        let status = try ctl(["status", "--port", "\(port)", "--json"])
        #expect(status.code == 0 && status.output.contains("\"recording\":true"), "\(status.output)")
        #expect(status.output.contains("\"client\":\"tandem-rec\""), "\(status.output)")
        let stop = try ctl(["ctl", "--port", "\(port)", "record", "stop"])
        #expect(stop.code == 0, "\(stop.output)")
        #expect(rec.waitFor("take 1 stopped"), "\(rec.output)")
        // Stopped, not ended: the recorder stays armed and a second take starts on command.
        let start = try ctl(["ctl", "--port", "\(port)", "record", "start"])
        #expect(start.code == 0 && rec.waitFor("take 2 recording"), "\(start.output) \(rec.output)")
        usleep(300_000)
        rec.process.signal(SIGTERM)
        #expect(rec.process.wait(timeout: 10) == 0, "\(rec.output)")
        #expect(rec.output.contains("take 2 stopped") && rec.output.contains("cycle cost"), "\(rec.output)")
        // The takes hold the tone (by its samples: a 0.5-amplitude sine, not silence).
        let takes = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("one-") && $0.hasSuffix(".wav") }
        #expect(takes.count == 2, "\(takes)")
        for take in takes {
            let r = try SoundFileReader(path: dir.appendingPathComponent(take).path)
            let samples = try r.readAll()
            let peak = samples.map { abs($0) }.max() ?? 0
            #expect(r.frames > 4800 && abs(peak - 0.5) < 0.01, "\(take): \(r.frames) frames, peak \(peak)")
        }
    }

    @Test func playAnswersStatusAndCtlLikeRun() throws {
        let server = try TestEnvironment.server("oneplay")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("oneplay")
        let port = Self.freePort() + 1
        let audio = dir.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.sine(frames: 48000, channels: 2, frequency: 440, sampleRate: 48000,
                                                  peak: 0.5), channels: 2, path: audio)
        let play = try TandemProcess(["play", "--wait", "--control-port", "\(port)", audio], server: server,
                                     log: dir.appendingPathComponent("play.log").path)
        #expect(play.waitFor("control protocol listening"), "\(play.output)")
        let waiting = try ctl(["status", "--port", "\(port)", "--json"])
        #expect(waiting.code == 0 && waiting.output.contains("\"playing\":false"), "\(waiting.output)")
        let go = try ctl(["ctl", "--port", "\(port)", "play", "play"])
        #expect(go.code == 0, "\(go.output)")
        #expect(play.waitFor("playing 1/1"), "\(play.output)")
        #expect(play.process.wait(timeout: 10) == 0, "\(play.output)")
        #expect(play.output.contains("finished: 48000 frames played, 0 underrun frames"), "\(play.output)")
    }

    /// The live view of `tandem record` in a real terminal (tmux), captured with capture-pane.
    @Test(.enabled(if: TestEnvironment.hasProgram("tmux")))
    func recordShowsTheLiveViewInATerminal() throws {
        let server = try TestEnvironment.server("onetmux")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("onetmux")
        let name = "tandem-rec-\(getpid())"
        let command = "env JACK_DEFAULT_SERVER=\(server.name) JACK_NO_START_SERVER=1 TERM=xterm-256color "
            + "\(TestEnvironment.product("tandem")) record -c 2 --dir \(dir.path) --connect 'system:capture_.*'"
        let started = try TestEnvironment.run(["tmux", "new-session", "-d", "-s", name, "-x", "110", "-y", "24", command])
        #expect(started.code == 0, "\(started.output)")
        defer { _ = try? TestEnvironment.run(["tmux", "kill-session", "-t", name]) }
        var screen = ""
        let shown = TestEnvironment.waitUntil(timeout: 8) {
            screen = (try? TestEnvironment.run(["tmux", "capture-pane", "-p", "-t", name]).output) ?? ""
            return screen.contains("● REC take 1") && screen.contains("in_1 ")
        }
        try? screen.write(toFile: "/tmp/tandem-record-liveview-capture.txt", atomically: true, encoding: .utf8)
        #expect(shown, "\(screen)")
        #expect(screen.contains("free ") && screen.contains("ring "), "\(screen)")
        _ = try TestEnvironment.run(["tmux", "send-keys", "-t", name, "C-c"])
        usleep(500_000)
    }
}
