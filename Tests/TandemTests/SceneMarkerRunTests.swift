import Control
import Foundation
import Jack
import SoundFile
import Testing
import TestSupport

/// Scenes recalled by the cue points of a file the player plays (issue 48, "recalled by ... a marker"), live: `tandem
/// run` on a private dummy server plays a WAV with cue points through rack `fx` (swh amp, in the session's process)
/// into the recorder; the
/// cues `scene quiet` and `scene loud` switch the amp between -20 and 0 dB. The signal is a constant ±0.5 whose sign
/// flips at every cue, so the take shows where each cue played and where the gain changed. An OSC subscriber hears
/// the recalls (source "marker"). Figures to stdout ("scene marker figure: ...").
@Suite(.serialized) struct SceneMarkerRunTests {
    static let rate = 48000
    /// The cues, by file frame: two scenes, a cue naming no scene (twice: told once), a marker that names none.
    static let cues = [CueMarker(frame: 24000, label: "scene quiet"), CueMarker(frame: 42000, label: "scene nowhere"),
                       CueMarker(frame: 54000, label: "scene loud"), CueMarker(frame: 66000, label: "scene nowhere"),
                       CueMarker(frame: 78000, label: "verse")]

    struct Outcome {
        var events: [(kind: String, text: String)]
        var samples: [Float]
        var takeCues: [CueMarker]
        var output: String
    }

    /// Runs the preset with `scene_markers = on` and returns what was heard and recorded; `seek`: the player is sent
    /// there (seconds) as soon as the take has started.
    static func run(_ tag: String, on: Bool, seek: Double? = nil, isolate: Bool = false) throws -> Outcome {
        let server = try TestEnvironment.server("scmk\(tag)")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("scene-markers-\(tag)")
        let wav = dir.appendingPathComponent("cued.wav").path
        var samples = [Float](repeating: 0.5, count: 120_000)
        for (k, cue) in cues.enumerated() {
            for i in cue.frame..<(k + 1 < cues.count ? cues[k + 1].frame : samples.count) { samples[i] = k % 2 == 0 ? -0.5 : 0.5 }
        }
        try TestEnvironment.writeWAV(samples, channels: 1, path: wav, sample: .float32)
        try CueChunks.write(cues, to: wav)
        let port = 35000 + Int(getpid() % 15000) + tag.utf8.count * 3
        let text = """
            [session]
            name = "cues"
            directory = "\(dir.path)"
            exit_after = "take"
            save_plugins = false
            restore_plugins = false
            control_port = \(port)
            [recorder]
            client = "cm-rec"
            channels = 1
            start = "armed"
            duration = 2.0
            [player]
            client = "cm-play"
            channels = 1
            queue = ["\(wav)"]
            start = "with-recorder"
            scene_markers = \(on)
            [[rack]]
            name = "fx"
            client = "cm-fx"
            inputs = 1
            outputs = 1
            isolate = \(isolate)
            [[rack.plugins]]
            uri = "\(ControlMapRunTests.amp)"
            name = "amp"
            [[connect]]
            from = "cm-play:out_1"
            to = "cm-fx:in_1"
            [[connect]]
            from = "cm-fx:out_1"
            to = "cm-rec:in_1"
            [[scene]]
            name = "quiet"
            ramp_ms = 0
            values = { "fx/amp/gain" = -20.0 }
            [[scene]]
            name = "loud"
            ramp_ms = 0
            values = { "fx/amp/gain" = 0.0 }
            """
        let path = dir.appendingPathComponent("cues.toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        defer { run.process.signal(SIGTERM) }
        #expect(run.waitFor("control protocol listening"), "\(run.output)")
        #expect(run.waitFor("connected cm-fx:out_1 -> cm-rec:in_1"), "\(run.output)")
        let socket = try UDPSocket(port: 0)
        var events: [(kind: String, text: String)] = []
        var replies: [String] = []
        func receive() {
            while let d = socket.receive(limit: 65536) {
                guard case .success(let m) = OSCMessage.decode(bytes: d.bytes) else { continue }
                let strings = m.arguments.compactMap(\.string)
                if m.path == "/tandem/event", strings.count >= 2 { events.append((strings[0], strings[1])) }
                if m.path == "/tandem/reply", strings.count >= 2 { replies.append(strings[1]) }
            }
        }
        func request(_ address: String, _ args: [OSCValue]) {
            _ = socket.send(OSCMessage(address, args).encode(), to: UDPSocket.loopback(port: port))
            #expect(TestEnvironment.waitUntil(timeout: 5) { receive(); return replies.contains(address) }, "\(address)")
        }
        request("/tandem/subscribe", [.string("osc.udp://127.0.0.1:\(socket.port)/"), .float(60)])
        request("/tandem/record/start", [])
        if let seek { request("/tandem/play/seek", [.double(seek)]) }
        #expect(run.process.wait(timeout: 30) == 0, "\(run.output)")
        receive()
        let take = try #require(announcedFile(run.output), "\(run.output)")
        return Outcome(events: events, samples: try TestEnvironment.readAudio(take).samples,
                       takeCues: (try? CueChunks.read(from: take)) ?? [], output: run.output)
    }

    @Test(.enabled(if: ControlMapRunTests.hasPlugins))
    func cuesInTheFileRecallScenesWithinAPeriodOrTwo() throws {
        let o = try Self.run("on", on: true)
        let recalls = o.events.filter { $0.kind == "scene-recalled" }.map(\.text)
        #expect(recalls == ["quiet 0 1 marker", "loud 0 1 marker"], "\(o.events)")
        let refusals = o.events.filter { $0.kind == "refused" }.map(\.text)
        #expect(refusals.count == 1 && refusals.first?.hasPrefix("cue 'scene nowhere' at frame 42000 of ") == true
                && refusals.first?.hasSuffix("no scene 'nowhere' (scenes: 'quiet', 'loud')") == true, "\(refusals)")
        // Where the file's first frame is in the take (an armed recorder may keep frames before it).
        let r = o.samples
        let first = try #require(r.firstIndex { abs($0) > 0.1 })
        // Each cue's frame in the take: the sign flips there.
        for cue in Self.cues where first + cue.frame < r.count {
            let at = first + cue.frame
            #expect(r[at - 1] * r[at] < 0, "no flip at cue \(cue.label) (take frame \(at)): \(r[at - 1]) \(r[at])")
        }
        let period = TestEnvironment.testPeriod
        let quietAt = first + Self.cues[0].frame, loudAt = first + Self.cues[2].frame
        let quiet = try #require((quietAt..<loudAt).first { abs(r[$0]) < 0.1 }, "the gain never dropped")
        let loud = try #require((loudAt..<r.count).first { abs(r[$0]) > 0.3 }, "the gain never came back")
        #expect(r[(quiet + 1)..<loudAt].allSatisfy { abs($0) < 0.1 }, "the gain came back before the cue 'scene loud'")
        print("scene marker figure: cue played to changed output: quiet \(quiet - quietAt) frames, loud \(loud - loudAt)"
              + " frames (period \(period))")
        #expect(quiet - quietAt <= 2 * period && loud - loudAt <= 2 * period, "\(quiet - quietAt), \(loud - loudAt)")
        // The take has the recalls as its markers, at the cues' frames (a take played back with scene_markers replays them).
        let marks = o.takeCues.filter { $0.label.hasPrefix("scene ") }
        #expect(marks.map(\.label) == ["scene quiet", "scene loud"], "\(o.takeCues)")
        if marks.count == 2 {
            #expect(abs(marks[0].frame - quietAt) <= 1 && abs(marks[1].frame - loudAt) <= 1,
                    "take markers \(marks.map(\.frame)), cues at \(quietAt), \(loudAt)")
        }
    }

    /// The same cues with rack `fx` isolated (a recording session's default): the recalls reach its process (the
    /// relay takes the source `marker`) and the gain follows.
    @Test(.enabled(if: ControlMapRunTests.hasPlugins))
    func cuesRecallScenesInAnIsolatedRack() throws {
        let o = try Self.run("iso", on: true, isolate: true)
        let recalls = o.events.filter { $0.kind == "scene-recalled" }.map(\.text)
        #expect(recalls.count == 2 && recalls[0].hasPrefix("quiet 0 1 marker") && recalls[1].hasPrefix("loud 0 1 marker")
                && !recalls.contains { $0.contains("not applied") }, "\(o.events)")
        let r = o.samples
        let first = try #require(r.firstIndex { abs($0) > 0.1 })
        let quietAt = first + Self.cues[0].frame, loudAt = first + Self.cues[2].frame
        let quiet = (quietAt..<loudAt).first { abs(r[$0]) < 0.1 }
        #expect(quiet != nil, "the gain never dropped")
        if let quiet { print("scene marker figure: isolated rack, cue played to changed output: \(quiet - quietAt) frames") }
    }

    /// A seek at once to 1.2 s (frame 57600) jumps over the cues of the two scenes, which the reader had already put
    /// in the ring: they are discarded unplayed and recall nothing; the cue after the seek point is told.
    @Test(.enabled(if: ControlMapRunTests.hasPlugins))
    func cuesASeekSkipsRecallNothing() throws {
        let o = try Self.run("seek", on: true, seek: 1.2)
        #expect(!o.events.contains { $0.kind == "scene-recalled" }, "\(o.events)")
        let refusals = o.events.filter { $0.kind == "refused" }.map(\.text)
        #expect(refusals.count == 1 && refusals.first?.hasPrefix("cue 'scene nowhere' at frame 66000 of ") == true,
                "\(refusals)")
    }

    @Test(.enabled(if: ControlMapRunTests.hasPlugins))
    func withoutSceneMarkersTheCuesRecallNothing() throws {
        let o = try Self.run("off", on: false)
        #expect(!o.events.contains { $0.kind == "scene-recalled" || $0.kind == "refused" }, "\(o.events)")
        #expect(o.events.contains { $0.kind == "item-started" }, "\(o.events)")
        let r = o.samples
        let first = try #require(r.firstIndex { abs($0) > 0.1 })
        #expect(r[first...].prefix(96_000 - first).allSatisfy { abs($0) > 0.4 }, "the gain changed")
    }
}
