import Coordinator
import Takes
import Testing
import Foundation
import Engine
import Jack
import Presets
import TestSupport

/// After a JACK server restart the session's player goes on from where it was, not from the top of its queue.
@Suite(.serialized) struct PlayerResumeTests {
    /// The files' samples are their own frame numbers: frame k of item 1 is (k + 1) / 2^23, of item 0 the same
    /// negated, so one captured sample says which item and frame was played.
    static func label(_ v: Float) -> Int { Int((Double(abs(v)) * 8_388_608).rounded()) - 1 }

    @Test func afterAServerRestartThePlayerGoesOnFromWhereItWas() throws {
        let name = JackServer.uniqueName("t-presume")
        var server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("presume")
        let first = dir.appendingPathComponent("first.wav").path
        let second = dir.appendingPathComponent("second.wav").path
        try TestEnvironment.writeWAV((0..<24_000).map { -Float($0 + 1) / 8_388_608 }, channels: 1, path: first)
        try TestEnvironment.writeWAV((0..<(20 * 48000)).map { Float($0 + 1) / 8_388_608 }, channels: 1, path: second)
        let (p, problems) = PresetLoader.parse("""
            [session]
            server = "\(name)"
            directory = "\(dir.path)"
            [player]
            client = "pr-play"
            channels = 1
            queue = ["\(first)", "\(second)"]
            [[connect]]
            from = "pr-play:out_1"
            to = "cap:in_1"
            """, file: "resume.toml", baseDirectory: dir.path)
        try #require(problems.isEmpty, "\(problems)")
        let session = Session()
        defer { session.close() }
        var capture = try TestCapture(name: "cap", server: name, channels: 1, seconds: 4)
        try session.apply(p!)
        func pump(_ seconds: Double, until: () -> Bool = { false }) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                _ = session.poll()
                if until() { return true }
                usleep(20_000)
            }
            return until()
        }
        /// Kills the server, waits for the session to notice, starts it again with a fresh capture client and
        /// waits until the session has its player back.
        func restart(_ round: Int) throws {
            server.kill9()
            var lost = false
            #expect(pump(5) {
                lost = lost || session.drainEvents().contains { if case .serverLost = $0 { return true } else { return false } }
                return lost
            }, "round \(round): loss noticed")
            capture.close()
            server = try TestEnvironment.server(named: name)
            capture = try TestCapture(name: "cap", server: name, channels: 1, seconds: 4)
            #expect(pump(5) { !session.isWaitingForServer && session.player != nil }, "round \(round): restored")
        }

        // Round 1: playing, in the middle of item 2.
        _ = pump(1.5)
        let before = try #require(session.player?.position)
        #expect(before.item == 1 && before.playing, "\(before)")
        try restart(1)
        _ = pump(0.6)
        let after = try #require(session.player?.position)
        capture.close()
        let got = capture.samples()
        let start = try #require(got.firstIndex { $0 != 0 }, "the player plays after the restart")
        let resumedAt = Self.label(got[start])
        #expect(got[start] > 0, "item 2 goes on (item 1 was replayed: frame \(resumedAt))")
        // It played on a little between the position read and the kill (and the server's death took a moment).
        #expect(resumedAt >= before.frame && resumedAt <= before.frame + 12_000,
                "resumed at frame \(resumedAt), the position before the kill was \(before.frame)")
        let end = try #require(got.lastIndex { $0 != 0 })
        let breaks = (start...end).filter { got[$0] <= 0 || Self.label(got[$0]) != resumedAt + ($0 - start) }
        #expect(breaks.count == 0, "continuous from there; first break at \(String(describing: breaks.first))")
        #expect(after.item == 1 && after.playing && after.frame > resumedAt, "\(after)")
        let line = "round 1: position \(before.frame) of item 2 read before the kill, first frame played after the "
            + "restart: item \(got[start] > 0 ? 2 : 1) frame \(resumedAt) (\(resumedAt - before.frame) frames on)\n"
        try? line.write(toFile: "/tmp/tandem-player-resume.txt", atomically: true, encoding: .utf8)

        // Round 2: stopped when the server goes: cued at the same frame, silent until asked to play.
        session.player?.stop()
        _ = pump(0.3)
        let stopped = try #require(session.player?.position)
        #expect(!stopped.playing)
        try restart(2)
        _ = pump(0.6)
        let cued = try #require(session.player?.position)
        #expect(!cued.playing && cued.item == stopped.item && cued.frame == stopped.frame, "\(cued) vs \(stopped)")
        #expect(!capture.samples().contains { $0 != 0 }, "silent while stopped")
        session.player?.play()
        _ = pump(0.5)
        capture.close()
        let played = capture.samples()
        let from = try #require(played.firstIndex { $0 != 0 })
        #expect(played[from] > 0 && Self.label(played[from]) == stopped.frame,
                "played from frame \(Self.label(played[from])), stopped at \(stopped.frame)")
    }

    /// A stopped (cued) player that is told to pause, as the transport poll does when it finds the transport of a
    /// restarted server stopped, plays nothing and keeps its cue point.
    @Test func pausingAStoppedPlayerPlaysNothing() throws {
        let rig = try PlayerTests.Rig("pause-stopped", channels: 1) { _ in }
        let a = Signals.noise(frames: 48_000, channels: 1, seed: 11)
        rig.player.load([try rig.file("a.wav", a, channels: 1)], frame: 1000)
        rig.player.waitForFill(seconds: 5)
        rig.player.pause()
        usleep(300_000)
        let position = rig.player.position
        let played = rig.player.playedFrames
        rig.player.close()
        rig.capture.close()
        rig.server.stop()
        #expect(played == 0 && !rig.capture.samples().contains { $0 != 0 }, "played \(played) frames")
        #expect(position.frame == 1000 && !position.playing, "\(position)")
    }

    /// Record-while-playing across a server restart: the new take and the player start on the same frame again,
    /// the player from where it was, and the take's report says from which item and frame (its audio's first frame
    /// is that file frame).
    @Test func recordWhilePlayingGoesOnAfterARestartAndTheReportSaysFromWhere() throws {
        let name = JackServer.uniqueName("t-wrresume")
        var server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("wrresume")
        let file = dir.appendingPathComponent("ramp.wav").path
        try TestEnvironment.writeWAV((0..<(20 * 48000)).map { Float($0 + 1) / 8_388_608 }, channels: 1, path: file)
        let (p, problems) = PresetLoader.parse("""
            [session]
            server = "\(name)"
            directory = "\(dir.path)"
            [recorder]
            client = "wr-rec"
            channels = 1
            [player]
            client = "wr-play"
            channels = 1
            queue = ["\(file)"]
            start = "with-recorder"
            [[connect]]
            from = "wr-play:out_1"
            to = "wr-rec:in_1"
            """, file: "wr.toml", baseDirectory: dir.path)
        try #require(problems.isEmpty, "\(problems)")
        let session = Session()
        var reports: [TakeReport] = []
        func collect() {
            for e in session.drainEvents() { if case .recorder(.takeFinished(let r, _)) = e { reports.append(r) } }
        }
        func pump(_ seconds: Double, until: () -> Bool = { false }) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                _ = session.poll()
                collect()
                if until() { return true }
                usleep(20_000)
            }
            return until()
        }
        try session.apply(p!)
        _ = pump(1.5)
        let before = try #require(session.player?.position)
        server.kill9()
        #expect(pump(5) { reports.count == 1 }, "take 1 ends with the server")
        server = try TestEnvironment.server(named: name)
        #expect(pump(5) { session.recorder?.isRecording == true }, "take 2 runs")
        _ = pump(1)
        session.close()
        collect()
        try #require(reports.count == 2, "\(reports.map(\.take))")
        let r = reports[1]
        let json = try JSONSerialization.jsonObject(with: r.json()) as? [String: Any]
        let playback = json?["playback"] as? [String: Any]
        let startFrame = try #require(playback?["startFrame"] as? Int, "\(String(describing: playback))")
        #expect(playback?["startItem"] == nil || playback?["startItem"] as? Int == 0)
        #expect(startFrame >= before.frame && startFrame <= before.frame + 12_000, "\(startFrame) vs \(before.frame)")
        let take = try TestEnvironment.readAudio(r.chunks[0].files[0]).samples
        #expect(!take.isEmpty && take[0] > 0 && Self.label(take[0]) == startFrame,
                "the take's frame 0 is file frame \(take.first.map { Self.label($0) } ?? -1), the report says \(startFrame)")
    }
}
