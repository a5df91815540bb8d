import Commands
import Control
import Foundation
import Jack
import Render
import Takes
import Testing
import TestSupport

/// Scenes (issue 48) as a performer runs them, on private dummy servers: `tandem run` of a preset with `[[scene]]`
/// tables, recalls over OSC and by MIDI program change, a morph from a CC sweep; the audio checked by its samples.
/// The figures go to stdout ("scene figure: ...").
@Suite(.serialized) struct SceneRunTests {
    static let amp = ControlMapRunTests.amp
    static let highpass = "http://plugin.org.uk/swh-plugins/butthigh_iir"
    static var hasPlugins: Bool {
        ControlMapRunTests.hasPlugins && FileManager.default.fileExists(atPath: "/usr/lib/lv2/butterworth-swh.lv2")
    }

    /// The four scenes the click test walks through: gain 0 ↔ -20 dB, the filter at 200 Hz ↔ 5 kHz, its bypass on ↔ off.
    static let scenes = """
        [[scene]]
        name = "open"
        ramp_ms = 30
        values = { "fx/amp/gain" = 0.0, "fx/filter/cutoff" = 200, "fx/filter/@bypass" = false }
        [[scene]]
        name = "thin"
        ramp_ms = 30
        values = { "fx/amp/gain" = -20.0, "fx/filter/cutoff" = 5000, "fx/filter/@bypass" = false }
        [[scene]]
        name = "thin dry"
        ramp_ms = 30
        values = { "fx/amp/gain" = -20.0, "fx/filter/cutoff" = 5000, "fx/filter/@bypass" = true }
        [[scene]]
        name = "loud dry"
        ramp_ms = 30
        values = { "fx/amp/gain" = 0.0, "fx/filter/cutoff" = 200, "fx/filter/@bypass" = true }

        """

    static func fx(isolate: Bool) -> String {
        """
        [[rack]]
        name = "fx"
        client = "sc-fx"
        inputs = 1
        outputs = 1
        isolate = \(isolate)
        [[rack.plugins]]
        uri = "\(amp)"
        name = "amp"
        [[rack.plugins]]
        uri = "\(highpass)"
        name = "filter"
        controls = { cutoff = 200 }

        """
    }

    /// The largest sample-to-sample step of `samples` in `range`.
    static func largestStep(_ samples: [Float], _ range: Range<Int>) -> Float {
        var worst: Float = 0
        for i in max(1, range.lowerBound)..<min(samples.count, range.upperBound) {
            worst = max(worst, abs(samples[i] - samples[i - 1]))
        }
        return worst
    }

    /// The acceptance's click test, live: a 997 Hz sine (amplitude 0.5) through rack `fx` (swh amp, then swh's
    /// Butterworth high-pass) into the recorder, while OSC recalls the four scenes in turn: 20 at once (`RAMP_MS` 0,
    /// for the comparison), then 100 with the scenes' ramp, at random gaps (so at random phases of the sine). The
    /// largest step of the take within each recall's ramp (from the control log's frame) is held against the sine's
    /// own. Then the take rendered again with `render --take`: identical, ramps and all.
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func recallsDoNotClickAndTheTakeRendersAgain(isolate: Bool) throws {
        let server = try TestEnvironment.server("scn\(isolate ? "i" : "p")")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("scene-clicks-\(isolate)")
        let source = dir.appendingPathComponent("sine.wav").path
        let seconds = 15.5
        // An isolated rack's process may still be starting when the take does: a second of the sine first, unlooked at.
        let sine = Signals.sine(frames: Int(seconds + 2) * 48000, channels: 1, frequency: 997, sampleRate: 48000,
                                peak: 0.5)
        let lead = isolate ? 48000 : 0
        try TestEnvironment.writeWAV([Float](repeating: 0, count: lead) + sine, channels: 1, path: source, sample: .float32)
        let port = 36000 + Int(getpid() % 15000) + (isolate ? 7 : 0)
        let text = """
            [session]
            name = "scenes"
            directory = "\(dir.path)"
            exit_after = "take"
            save_plugins = false
            restore_plugins = false
            control_port = \(port)
            [recorder]
            client = "sc-rec"
            channels = 1
            duration = \(seconds)
            [player]
            client = "sc-play"
            channels = 1
            queue = ["\(source)"]
            start = "with-recorder"
            \(Self.fx(isolate: isolate))
            [[connect]]
            from = "sc-play:out_1"
            to = "sc-fx:in_1"
            [[connect]]
            from = "sc-fx:out_1"
            to = "sc-rec:in_1"
            \(Self.scenes)
            """
        let path = dir.appendingPathComponent("scenes.toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", path], timeout: 60)
        try #require(check.code == 0, "\(check.output)")
        let run = try TandemProcess(["run", "--no-view", path], server: server, log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("take 1 recording", timeout: 20), "\(run.output)")
        let started = Date()
        let names = ["open", "thin", "thin dry", "loud dry"]
        var random = SeededRandom(seed: isolate ? 11 : 5)
        var at = 1.0 + Double(lead) / 48000
        for k in 0..<120 {
            let wait = at - Date().timeIntervalSince(started)
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
            let values: [CommandValue] = [.text(names[(k + 1) % names.count])] + (k < 20 ? [.number(0)] : [])
            let reply = try CommandSurfacesTests.osc(port, "/tandem/scene/recall", values)
            #expect(reply.ok, "\(reply.detail)")
            at += 0.06 + Double(random.next() % 80) / 1000
            if at > seconds - 0.5 { break }
        }
        // Then a morph from "open" to "thin" in 21 steps of 50 ms (the take's log holds each step's glide too).
        for k in 0...20 where at < seconds - 0.2 {
            let wait = at - Date().timeIntervalSince(started)
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
            let reply = try CommandSurfacesTests.osc(port, "/tandem/scene/morph",
                                                     [.text("open"), .text("thin"), .number(Double(k) / 20)])
            #expect(reply.ok, "\(reply.detail)")
            at += 0.05
        }
        #expect(run.process.wait(timeout: seconds + 30) == 0, "\(run.output)")
        let take = try #require(announcedFile(run.output), "\(run.output)")
        let reportPath = try #require(announcedReport(run.output))
        let report = try JSONDecoder().decode(TakeSidecar.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
        let log = try #require(report.controlLog)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportPath))) as? [String: Any] ?? [:]
        let xruns = (json["xruns"] as? Int ?? 0) + (json["missedFrames"] as? Int ?? 0) + (json["repeatedFrames"] as? Int ?? 0)
        let recorded = try TestEnvironment.readAudio(take).samples
        let sineStep = Self.largestStep(sine, 0..<48000)
        // Each recall's changes, by the frame of the cycle that applied them (all of a recall in one cycle in
        // process; an isolated rack's arrive one by one over its control port).
        let entries = log.entries.filter { $0.engine == "fx" && $0.frame > 0 }
        var starts: [Int: Bool] = [:]
        for e in entries {
            let ramped = e.address == "/tandem/plugin/bypass" ? e.args.count >= 4 : e.args.count >= 5
            starts[e.frame] = (starts[e.frame] ?? false) || ramped
        }
        var abrupt: Float = 0, glided: Float = 0
        for (frame, ramped) in starts {
            let step = Self.largestStep(recorded, frame..<(frame + (ramped ? 1440 : 0) + 2 * log.period))
            if ramped { glided = max(glided, step) } else { abrupt = max(abrupt, step) }
        }
        let recalls = starts.count
        let gains = entries.filter { $0.args.count >= 3 && $0.args[2].name == "gain" }
        print("scene figure: \(isolate ? "isolated" : "in-process") rack, \(recalls) cycles that started a recall's changes"
              + " (120 recalls and a 21-step morph sent): largest step at a recall ramped over 30 ms \(glided) (x\(glided / sineStep) the sine's"
              + " own \(sineStep)), at once \(abrupt) (x\(abrupt / sineStep)); take xruns \(xruns)")
        // In process every recall is one cycle: as many starts as recalls sent.
        if !isolate { #expect(recalls >= 110, "\(recalls) cycles started a recall's changes") } else { #expect(recalls >= 110) }
        #expect(glided > 0 && glided <= sineStep * 1.5, "ramped: \(glided) against \(sineStep)")
        #expect(abrupt > sineStep * 3, "at once: \(abrupt)")

        // Rendered again from the take's report: the same samples.
        let presetPath = dir.appendingPathComponent("render.toml").path
        try text.replacingOccurrences(of: "control_port = \(port)\n", with: "").write(toFile: presetPath, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("again.wav").path
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "render", presetPath, "--take", reportPath,
                                         "-o", out, "--tail", "0"], timeout: 120)
        #expect(r.code == 0, "\(r.output)")
        let again = try TestEnvironment.readAudio(out).samples
        let n = min(again.count, recorded.count)
        let differ = zip(again.prefix(n), recorded.prefix(n)).filter { $0 != $1 }.count
        print("scene figure: \(isolate ? "isolated" : "in-process") render --take of the take with \(gains.count) logged"
              + " gain changes: \(differ) of \(n) samples differ")
        if xruns > 0 {
            withKnownIssue("the server dropped cycles in the live take (a loaded machine)", isIntermittent: true) {
                #expect(differ == 0)
            }
        } else {
            #expect(n > 48000 * 10 && differ == 0, "\(differ) of \(n) differ")
        }
    }

    /// MIDI program change to the first changed output frame, 100 times (two scenes in turn, gain 0 ↔ -6 dB on a
    /// constant 0.5, ramp 0 and 30 ms), with rack `fx` in the session's process and isolated (then the change is
    /// relayed to its process: the lag shows). Then a morph from a CC sweep: the gain moves from 0 to -20 dB, each of
    /// the 128 values in turn, only down.
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func programChangeRecallsWithinAPeriodAndACCSweepMorphs(isolate: Bool) throws {
        let racks = """
            [[rack]]
            name = "fx"
            inputs = 1
            outputs = 1
            isolate = \(isolate)
            midi_inputs = ["midi_in"]
            [[rack.plugins]]
            uri = "\(Self.amp)"
            name = "amp"
            [[rack]]
            name = "pedal"
            inputs = 1
            outputs = 1
            isolate = false
            midi_inputs = ["midi_in"]
            [[rack.plugins]]
            uri = "\(Self.amp)"
            name = "amp"
            """
        let maps = """
            [[map]]
            program = true
            rack = "pedal"
            scenes = ["full", "down", "full slow", "down slow"]
            [[map]]
            cc = 11
            rack = "pedal"
            morph = ["full", "quiet"]
            [[scene]]
            name = "full"
            ramp_ms = 0
            values = { "fx/amp/gain" = 0.0 }
            [[scene]]
            name = "down"
            ramp_ms = 0
            values = { "fx/amp/gain" = -6.0 }
            [[scene]]
            name = "full slow"
            values = { "fx/amp/gain" = 0.0 }
            [[scene]]
            name = "down slow"
            values = { "fx/amp/gain" = -6.0 }
            [[scene]]
            name = "quiet"
            values = { "fx/amp/gain" = -20.0 }
            """
        let rig = try ControlMapRunTests.Rig("scene\(isolate ? "i" : "p")", racks: racks, maps: maps, period: 256)
        defer { rig.stop() }
        #expect(rig.run.waitFor("connected snd:midi_out -> pedal:midi_in"), "\(rig.run.output)")
        let period = rig.server.period
        func measure(programs: [Int], label: String) throws -> [Int] {
            let gap = 2400   // 50 ms
            let base = rig.sender.frameTime + 9600
            for (k, p) in programs.enumerated() { rig.sender.send(frame: base + k * gap, bytes: [0xC0, UInt8(p)]) }
            #expect(TestEnvironment.waitUntil(timeout: 30) { rig.sender.frameTime > base + programs.count * gap + 9600 })
            let samples = rig.capture.samples()
            let first = try #require(rig.capture.firstFrameTime)
            var delays: [Int] = []
            for k in 0..<programs.count {
                let at = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: base + k * gap) &- first))
                guard at > 0, at + gap <= samples.count else { continue }
                let before = samples[at - 1]
                if let hit = samples[at..<(at + gap)].firstIndex(where: { abs($0 - before) > 1e-4 }) { delays.append(hit - at) }
            }
            let sorted = delays.sorted()
            let p50 = sorted.isEmpty ? -1 : sorted[sorted.count / 2], p99 = sorted.isEmpty ? -1 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            print("scene figure: \(isolate ? "isolated" : "in-process") rack, program change to the first changed output"
                  + " frame, \(label): p50 \(p50), p99 \(p99), max \(sorted.last ?? -1) frames (period \(period)) over"
                  + " \(delays.count) recalls; late MIDI \(rig.sender.late)")
            #expect(delays.count == programs.count, "\(delays.count) of \(programs.count) recalls changed the output")
            return sorted
        }
        // Each program changes the gain (the rig starts at "full"; the first of each run goes down).
        let quick = try measure(programs: (0..<100).map { ($0 + 1) % 2 }, label: "ramp 0")
        let slow = try measure(programs: (0..<20).map { 2 + ($0 + 1) % 2 }, label: "ramp 30 ms")
        if isolate {
            // Relayed over the rack's control port: the pipe's lag is measured, not promised.
            #expect((quick.last ?? .max) < 48000 / 10)
        } else {
            // One period here (p99 251 of 256 frames, measured); a loaded machine may wake the control loop late,
            // so the test allows two, and the figure line says which.
            let p99 = quick[min(quick.count - 1, quick.count * 99 / 100)]
            #expect(p99 <= 2 * period, "in-process: \(quick)")
            #expect((quick.first ?? .max) <= period && (slow.first ?? .max) <= period)
        }
        let recalled = rig.wait(for: "scene-recalled", count: 120, timeout: 10)
        #expect(recalled.count >= 120)

        // The morph: CC 11 from 0 to 127, one value every 10 ms.
        _ = rig.request("/tandem/scene/recall", [.string("full")])
        usleep(100_000)
        rig.receive()
        rig.events.removeAll()
        let step = 480
        let base = rig.sender.frameTime + 9600
        for v in 0...127 { rig.sender.send(frame: base + v * step, bytes: [0xB0, 11, UInt8(v)]) }
        let changed = rig.wait(for: "control-changed", prefix: "fx amp gain", count: 130, timeout: 20)
        #expect(TestEnvironment.waitUntil(timeout: 10) { rig.sender.frameTime > base + 128 * step + 4800 })
        usleep(200_000)
        rig.receive()
        let morphs = rig.events.filter { $0.kind == "scene-morphed" }.count
        let values = rig.events.filter { $0.kind == "control-changed" && $0.text.hasPrefix("fx amp gain") && $0.text.hasSuffix("midi") }
            .compactMap { Double($0.text.split(separator: " ")[3]) }.suffix(128)
        let wanted = (0...127).map { Float(-20 * Double($0) / 127) }
        let hit = Set(values.map { Float($0) })
        print("scene figure: \(isolate ? "isolated" : "in-process") morph from a CC sweep: \(morphs) morph events,"
              + " \(values.count) gain values, \(wanted.filter { hit.contains($0) }.count) of 128 hit, first"
              + " \(values.first ?? .nan) dB, last \(values.last ?? .nan) dB (\(changed.count) control events)")
        #expect(zip(values, values.dropFirst()).allSatisfy { $0.1 <= $0.0 }, "only down: \(values)")
        #expect(values.last == -20)
        if isolate {
            // Each step is relayed to the rack's process and answered before the next: steps that come faster than
            // that are passed over (the newest wins), so not every value is hit. Measured, not promised.
            #expect(hit.count >= 16, "\(hit.count) of 128 values hit")
        } else {
            #expect(values.count == 128 && wanted.allSatisfy { hit.contains($0) }, "every value hit: \(values)")
        }
    }

    /// Bad input on the command surfaces (OSC here; HTTP in SceneRouteTests), capture from the running rig, a scene
    /// that names what the rig no longer has (the rest applies, the rest is reported), and a preset whose scene names a
    /// control its plugin lacks: refused by `preset check` and by `run` in the same words.
    @Test(.enabled(if: hasPlugins))
    func badScenesAreRefusedInWordsAndARecallAppliesWhatItCan() throws {
        let racks = """
            [[rack]]
            name = "fx"
            inputs = 1
            outputs = 1
            midi_inputs = ["midi_in"]
            [[rack.plugins]]
            uri = "\(Self.amp)"
            name = "amp"
            [[rack.plugins]]
            uri = "\(Self.highpass)"
            name = "filter"
            """
        let scenes = """
            [[scene]]
            name = "a"
            values = { "fx/amp/gain" = -3.0, "fx/filter/cutoff" = 300, "fx/@mix" = 0.5 }
            [[scene]]
            name = "b"
            values = { "fx/amp/gain" = -9.0 }
            [[map]]
            cc = 11
            rack = "fx"
            morph = ["a", "b"]
            """
        let rig = try ControlMapRunTests.Rig("scenebad", racks: racks, maps: scenes)
        defer { rig.stop() }
        func ask(_ path: String, _ args: [OSCValue]) -> (ok: Bool, detail: String) {
            let r = rig.request(path, args)
            // ok: [ok, address, detail]; a refusal: [error, address, detail, kind].
            return (r.first == "ok", r.first == "ok" ? (r.last ?? "") : r.dropFirst(2).joined(separator: " "))
        }
        var r = ask("/tandem/scene/recall", [.string("nosuch")])
        #expect(!r.ok && r.detail.contains("nosuch") && r.detail.contains("'a', 'b'"), "\(r)")
        for bad in [Double.nan, -1, 1e9, .infinity] {
            r = ask("/tandem/scene/recall", [.string("a"), .double(bad)])
            #expect(!r.ok && r.detail.lowercased().contains("ramp"), "ramp \(bad): \(r)")
        }
        for bad in [Double.nan, -0.1, 2, .infinity] {
            r = ask("/tandem/scene/morph", [.string("a"), .string("b"), .double(bad)])
            #expect(!r.ok, "position \(bad): \(r)")
        }
        r = ask("/tandem/scene/morph", [.string("a"), .string("a"), .double(0.5)])
        #expect(!r.ok, "\(r)")
        r = ask("/tandem/scene/recall", [.string("a")])
        #expect(r.ok && r.detail.contains("3 value(s)"), "\(r)")
        #expect(ask("/tandem/plugin/get", [.string("fx"), .string("amp"), .string("gain")]).detail == "-3.0")
        // A morph between scenes with different values: the union, each missing end taken from the running rig
        // (b has no cutoff and no mix: they stay at a's 300 Hz and 0.5 all the way).
        r = ask("/tandem/scene/morph", [.string("a"), .string("b"), .double(0.5)])
        #expect(r.ok && r.detail.contains("3 value(s)"), "\(r)")
        #expect(ask("/tandem/plugin/get", [.string("fx"), .string("amp"), .string("gain")]).detail == "-6.0")
        #expect(ask("/tandem/plugin/get", [.string("fx"), .string("filter"), .string("cutoff")]).detail == "300.0")
        #expect(ask("/tandem/plugin/mix", [.string("fx")]).detail == "0.5")
        _ = ask("/tandem/scene/recall", [.string("a")])
        // Captured from the running rig: every control, bypass, mix and gain.
        r = ask("/tandem/scene/save", [.string("snap")])
        #expect(r.ok, "\(r)")
        let list = ask("/tandem/scene/list", []).detail
        #expect(list.contains("\"name\":\"snap\"") && list.contains("\"fx\\/amp\\/gain\":-3")
                && list.contains("\"fx\\/filter\\/@bypass\":0") && list.contains("\"fx\\/@mix\":0.5"), "\(list)")
        #expect(!ask("/tandem/scene/save", [.string("x"), .string("fx/amp/nope")]).ok)
        #expect(!ask("/tandem/scene/save", [.string("x"), .string("fx//gain")]).ok)
        #expect(!ask("/tandem/scene/save", [.string("")]).ok)
        #expect(!ask("/tandem/scene/save", [.string(String(repeating: "n", count: 65))]).ok)
        #expect(!ask("/tandem/scene/rename", [.string("snap"), .string("a")]).ok)
        #expect(ask("/tandem/scene/rename", [.string("snap"), .string("snap 2")]).ok)
        #expect(!ask("/tandem/scene/delete", [.string("snap")]).ok)
        // A scene a map names: renamed, the map follows; deleted, refused naming the map.
        #expect(ask("/tandem/scene/rename", [.string("a"), .string("a2")]).ok)
        #expect(ask("/tandem/map/list", []).detail.contains("morph a2 b"), "\(ask("/tandem/map/list", []))")
        r = ask("/tandem/scene/delete", [.string("b")])
        #expect(!r.ok && r.detail.contains("map 0") && r.detail.contains("clear the map first"), "\(r)")
        #expect(ask("/tandem/scene/rename", [.string("a2"), .string("a")]).ok)
        // A list too long for a datagram is refused in words, never lost.
        for k in 0..<200 { _ = ask("/tandem/scene/save", [.string("capture number \(k) " + String(repeating: "x", count: 40))]) }
        r = ask("/tandem/scene/list", [])
        #expect(!r.ok && r.detail.contains("more than one datagram carries") && r.detail.contains("HTTP"), "\(r.detail.prefix(300))")
        r = ask("/tandem/scene/recall", [.string("nosuch")])
        #expect(!r.ok && r.detail.contains("and 191 more"), "\(r.detail.prefix(300))")
        // The filter removed from the chain: "a" still sets the gain and the mix, and says what it could not.
        #expect(ask("/tandem/scene/recall", [.string("b")]).ok)
        #expect(ask("/tandem/plugin/remove", [.string("fx"), .string("filter")]).ok)
        r = ask("/tandem/scene/recall", [.string("a"), .double(0)])
        #expect(r.ok && r.detail.contains("2 value(s)") && r.detail.contains("fx/filter/cutoff"), "\(r)")
        #expect(ask("/tandem/plugin/get", [.string("fx"), .string("amp"), .string("gain")]).detail == "-3.0")
        let recalled = rig.wait(for: "scene-recalled", prefix: "a 0 2 osc", count: 1)
        #expect(recalled.first?.contains("not applied") == true, "\(recalled)")
        #expect(rig.run.process.isRunning)

        // A scene naming a control the plugin lacks: refused by check and by run, in the same words.
        let bad = rig.dir.appendingPathComponent("bad.toml").path
        try """
            [session]
            name = "bad"
            directory = "\(rig.dir.path)"
            \(racks)
            [[scene]]
            name = "oops"
            values = { "fx/amp/gian" = -3.0, "fx/filter/cutoff" = "5 kHz" }
            """.write(toFile: bad, atomically: true, encoding: .utf8)
        let check = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", bad], timeout: 60)
        let run = try TestEnvironment.run([TestEnvironment.product("tandem"), "run", "--no-view", bad],
                                          environment: ["JACK_DEFAULT_SERVER": rig.server.name], timeout: 60)
        let words = "scene 'oops': 'fx/amp/gian': <\(Self.amp)> has no control 'gian'"
        #expect(check.code == 2 && check.output.contains(words) && check.output.contains("has a unit"), "\(check.output)")
        #expect(run.code == 2 && run.output.contains(words), "\(run.output)")
        print("scene figure: bad input: preset check and run both exit 2 with \"\(words)\"; recall of a scene whose"
              + " filter was removed: \(r.detail)")
    }
}
