import Testing
import Foundation
import Engine
import Jack
import TestSupport

@Suite(.serialized) struct ControlCommandTests {
    static func freePort() -> Int { 30000 + Int(getpid() % 20000) }

    func preset(_ dir: URL, player: Bool) throws -> String {
        let path = dir.appendingPathComponent("live.toml").path
        var text = "[session]\nname = \"live\"\ndirectory = \"\(dir.path)\"\n[recorder]\nchannels = 2\nstart = \"armed\"\n"
            + "[[connect]]\nfrom = \"system:capture_*\"\nto = \"tandem-rec:in_*\"\n"
        if player {
            let audio = dir.appendingPathComponent("tone.wav").path
            try TestEnvironment.writeWAV(Signals.sine(frames: 10 * 48000, channels: 2, frequency: 440, sampleRate: 48000,
                                                      peak: 0.5), channels: 2, path: audio)
            text = text.replacingOccurrences(of: "start = \"armed\"", with: "start = \"immediately\"")
                .replacingOccurrences(of: "system:capture_*", with: "tandem-play:out_*")
                + "[player]\nchannels = 2\nqueue = [\"\(audio)\"]\nloop = \"item\"\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func ctlAndStatusTalkToARunningInstance() throws {
        let server = try TestEnvironment.server("ctl")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("ctl")
        let port = Self.freePort()
        let run = try TandemProcess(["run", "--no-view", "--control-port", "\(port)", try preset(dir, player: false)],
                                    server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("control protocol listening"), "\(run.output)")
        func ctl(_ args: [String]) throws -> (code: Int32, output: String) {
            try TestEnvironment.run([TestEnvironment.product("tandem")] + args, timeout: 10)
        }
        let start = try ctl(["ctl", "--port", "\(port)", "record", "start"])
        #expect(start.code == 0 && start.output.contains("ok"), "\(start.output)")
        #expect(run.waitFor("take 1 recording"))
        let again = try ctl(["ctl", "--port", "\(port)", "record", "start"])
        #expect(again.code == 2 && again.output.contains("a take is already running"), "\(again.output)")
        let status = try ctl(["status", "--port", "\(port)", "--json"])
        #expect(status.code == 0 && status.output.contains("\"recording\":true"), "\(status.output)")
        let human = try ctl(["status", "--port", "\(port)"])
        #expect(human.output.contains("REC") && human.output.contains("in_1"), "\(human.output)")
        let bogus = try ctl(["ctl", "--port", "\(port)", "/tandem/bogus"])
        #expect(bogus.code == 2 && bogus.output.contains("unknown command"))
        let stop = try ctl(["ctl", "--port", "\(port)", "record", "stop"])
        #expect(stop.code == 0)
        #expect(run.waitFor("take 1 stopped"))
        let nobody = try ctl(["status", "--port", "\(port + 1)"])
        #expect(nobody.code == 3 && nobody.output.contains("no Tandem answered"))
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 10) == 0)
    }

    /// The live view in a real terminal (tmux): meters, take, progress; captured with capture-pane.
    @Test(.enabled(if: TestEnvironment.hasProgram("tmux")))
    func liveViewShowsMetersAndProgressInATerminal() throws {
        let server = try TestEnvironment.server("tmux")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("tmux")
        let name = "tandem-\(getpid())"
        let command = "env JACK_DEFAULT_SERVER=\(server.name) JACK_NO_START_SERVER=1 TERM=xterm-256color "
            + "\(TestEnvironment.product("tandem")) run --control-port 0 \(try preset(dir, player: true))"
        let started = try TestEnvironment.run(["tmux", "new-session", "-d", "-s", name, "-x", "110", "-y", "24", command])
        #expect(started.code == 0, "\(started.output)")
        defer { _ = try? TestEnvironment.run(["tmux", "kill-session", "-t", name]) }
        var screen = ""
        _ = TestEnvironment.waitUntil(timeout: 8) {
            screen = (try? TestEnvironment.run(["tmux", "capture-pane", "-p", "-t", name]).output) ?? ""
            return screen.contains("REC") && screen.contains("playing") && screen.contains("#")
        }
        // Steady state: the meter's 300 ms window holds only signal, and the view shows the sine's figures.
        _ = TestEnvironment.waitUntil(timeout: 8) {
            screen = (try? TestEnvironment.run(["tmux", "capture-pane", "-p", "-t", name]).output) ?? screen
            return screen.contains(" -9.0 rms  -6.0 pk")
        }
        try? screen.write(toFile: "/tmp/tandem-liveview-capture.txt", atomically: true, encoding: .utf8)
        #expect(screen.contains("● REC take 1"), "\(screen)")
        #expect(screen.contains("in_1 ") && screen.contains("#"), "meter bars: \(screen)")
        #expect(screen.contains("▶ playing 1/1 [") && screen.contains("tone.wav"), "progress: \(screen)")
        #expect(screen.contains("free ") && screen.contains("ring "), "\(screen)")
        #expect(screen.contains(" -9.0 rms  -6.0 pk"), "a 0.5-amplitude sine reads -9.0 rms / -6.0 peak: \(screen)")
        _ = try TestEnvironment.run(["tmux", "send-keys", "-t", name, "C-c"])
        usleep(500_000)
    }
}
