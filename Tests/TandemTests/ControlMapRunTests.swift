import Control
import Engine
import Foundation
import Jack
import Presets
import Takes
import Testing
import TestSupport

/// Control maps as a user runs them: `tandem run` of a preset with racks and `[[map]]` tables on a private server, a
/// JACK MIDI source sending CCs, notes and program changes into the racks' MIDI inputs, the audio measured by its
/// samples, and an OSC subscriber hearing every value.
@Suite(.serialized) struct ControlMapRunTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"
    static let detune = "http://drobilla.net/plugins/mda/Detune"
    static var hasPlugins: Bool {
        FileManager.default.fileExists(atPath: "/usr/lib/lv2/amp-swh.lv2")
            && FileManager.default.fileExists(atPath: "/usr/lib/lv2/mda.lv2")
    }

    /// A server, a constant 0.5 (DC) played in a loop through rack `fx` (swh amp) into a capture, a MIDI sender
    /// patched into the racks' MIDI inputs, `tandem run` of the preset, and an OSC subscriber.
    final class Rig {
        let server: JackServer
        let dir: URL
        let sender: MIDISender
        let capture: TestCapture
        let run: TandemProcess
        let port: Int
        let socket: UDPSocket
        let presetPath: String
        /// Every `/tandem/event` received so far: kind and text.
        var events: [(kind: String, text: String)] = []

        /// `variants`: more preset files written beside it, each the same setup without maps changed by its function.
        init(_ tag: String, racks: String, maps: String, recorder: Bool = false,
             variants: [String: (String) -> String] = [:], period: Int = TestEnvironment.testPeriod) throws {
            server = try TestEnvironment.server("map\(tag)", period: period)
            dir = TestEnvironment.temporaryDirectory("map\(tag)")
            let dc = dir.appendingPathComponent("dc.wav").path
            try TestEnvironment.writeWAV([Float](repeating: 0.5, count: 48000), channels: 1, path: dc, sample: .float32)
            sender = try MIDISender(name: "snd", server: server.name)
            capture = try TestCapture(name: "cap", server: server.name, channels: 1, seconds: 60, fillSkippedCycles: true)
            port = 33000 + Int(getpid() % 15000) + tag.utf8.count
            presetPath = dir.appendingPathComponent("maps.toml").path
            let directory = dir.path, controlPort = port
            let text = { (maps: String) -> String in
                """
                [session]
                name = "maps"
                directory = "\(directory)"
                control_port = \(controlPort)
                [player]
                channels = 1
                queue = ["dc.wav"]
                loop = "item"
                \(recorder ? "[recorder]\nchannels = 1\n" : "")
                \(racks)
                [[connect]]
                from = "tandem-play:out_1"
                to = "fx:in_1"
                [[connect]]
                from = "fx:out_1"
                to = "cap:in_1"
                [[connect]]
                from = "snd:midi_out"
                to = "/[a-z]+:midi_in/"
                mode = "all"
                \(maps)
                """
            }
            for (name, change) in variants {
                try change(text("")).write(toFile: dir.appendingPathComponent(name).path, atomically: true, encoding: .utf8)
            }
            try text(maps).write(toFile: presetPath, atomically: true, encoding: .utf8)
            run = try TandemProcess(["run", "--no-view", presetPath], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
            socket = try UDPSocket(port: 0)
            #expect(run.waitFor("control protocol listening"), "\(run.output)")
            #expect(run.waitFor("connected snd:midi_out -> fx:midi_in"), "\(run.output)")
            #expect(run.waitFor("connected fx:out_1 -> cap:in_1"), "\(run.output)")
            let reply = request("/tandem/subscribe", [.string("osc.udp://127.0.0.1:\(socket.port)/"), .float(60)])
            #expect(reply.first == "ok", "\(reply)")
        }

        /// Sends a request and returns the reply's strings (status, address, detail); events on the way are kept.
        func request(_ path: String, _ args: [OSCValue] = []) -> [String] {
            _ = socket.send(OSCMessage(path, args).encode(), to: UDPSocket.loopback(port: port))
            var reply: [String] = []
            _ = TestEnvironment.waitUntil(timeout: 5) {
                receive { m in
                    if m.path == "/tandem/reply", m.arguments.count >= 3, m.arguments[1].string == path {
                        reply = m.arguments.compactMap(\.string)
                    }
                }
                return !reply.isEmpty
            }
            return reply
        }

        /// Reads what has arrived; events are kept, other messages handed to `other`.
        func receive(_ other: (OSCMessage) -> Void = { _ in }) {
            while let d = socket.receive(limit: 65536) {
                guard case .success(let m) = OSCMessage.decode(bytes: d.bytes) else { continue }
                if m.path == "/tandem/event", m.arguments.count >= 2, let kind = m.arguments[0].string,
                   let text = m.arguments[1].string {
                    events.append((kind, text))
                } else {
                    other(m)
                }
            }
        }

        /// Waits until `count` events of `kind` whose text starts with `prefix` have arrived; returns their texts.
        @discardableResult
        func wait(for kind: String, prefix: String = "", count: Int = 1, timeout: Double = 10) -> [String] {
            var found: [String] = []
            _ = TestEnvironment.waitUntil(timeout: timeout) {
                receive()
                found = events.filter { $0.kind == kind && $0.text.hasPrefix(prefix) }.map(\.text)
                return found.count >= count
            }
            return found
        }

        /// Mean absolute level of the capture over JACK frames `from..<to`.
        func level(from: Int, to: Int) -> Double? {
            let samples = capture.samples()
            guard let first = capture.firstFrameTime else { return nil }
            let a = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: from) &- first))
            let b = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: to) &- first))
            guard a >= 0, b <= samples.count, a < b else { return nil }
            return samples[a..<b].reduce(0) { $0 + Double(abs($1)) } / Double(b - a)
        }

        func stop() {
            run.process.signal(SIGTERM)
            _ = run.process.wait(timeout: 15)
            sender.close()
            capture.close()
            server.stop()
        }
    }

    /// Rack `fx`: the amp, mono; `rack` and `plugin` are more keys of its table and of its plugin's.
    static func fxRack(rack: String = "", plugin: String = "") -> String {
        """
        [[rack]]
        name = "fx"
        inputs = 1
        outputs = 1
        \(rack)
        [[rack.plugins]]
        uri = "\(amp)"
        \(plugin)
        """
    }

    /// The acceptance: CC 7 mapped onto the amp's gain (-40 to 0 dB, linear in dB). A sweep 0..127 moves the gain and
    /// a subscriber receives every value, in order; held CC values give the output level the curve says.
    @Test(.enabled(if: hasPlugins))
    func sweepingAMappedCCMovesTheGainAndASubscriberHearsEveryValue() throws {
        let rig = try Rig("sweep", racks: Self.fxRack(), maps: """
            [[map]]
            cc = 7
            channel = 1
            engine = "fx"
            plugin = "amp"
            control = "gain"
            min = -40
            max = 0
            """)
        defer { rig.stop() }
        let step = 480   // 10 ms
        let base = rig.sender.frameTime + 9600
        for v in 0...127 { rig.sender.send(frame: base + v * step, bytes: [0xB0, 7, UInt8(v)]) }
        // Then held values, half a second each.
        let held = [0, 32, 64, 96, 127]
        let holdBase = base + 128 * step + 24000
        for (k, v) in held.enumerated() { rig.sender.send(frame: holdBase + k * 24000, bytes: [0xB0, 7, UInt8(v)]) }
        // A message on another channel and another controller moves nothing.
        rig.sender.send(frame: holdBase + 5 * 24000, bytes: [0xB1, 7, 10])
        rig.sender.send(frame: holdBase + 5 * 24000 + 10, bytes: [0xB0, 8, 10])
        let texts = rig.wait(for: "control-changed", prefix: "fx amp gain", count: 128 + held.count, timeout: 20)
        #expect(TestEnvironment.waitUntil(timeout: 10) { rig.sender.frameTime > holdBase + 6 * 24000 })
        usleep(200_000)
        rig.receive()
        let values = rig.events.filter { $0.kind == "control-changed" }.map(\.text)
        let expected = ((0...127).map { $0 } + held).map { v in "fx amp gain \(Float(-40 + (0 - -40) * (Double(v) / 127))) midi" }
        // A server that runs the sender's cycle late (a loaded machine: seen once in a full `make test`) hands several
        // messages over in one cycle, where the maps take the newest of a controller: the premise of "every value in
        // order" is then broken upstream of Tandem, and said so.
        let late = rig.sender.late
        if late > 0 {
            withKnownIssue("the server ran the MIDI sender late \(late) time(s) (a loaded machine)", isIntermittent: true) {
                #expect(values == expected, "\(values.count) values: \(values.prefix(5))… \(values.suffix(6))")
            }
        } else {
            #expect(values == expected, "\(values.count) values: \(values.prefix(5))… \(values.suffix(6))")
            #expect(texts.count == expected.count)
        }
        let status = rig.request("/tandem/status").last ?? ""
        #expect(status.contains("\"mapDropped\":0") && status.contains("\"midiReceived\":135"), "\(status)")
        // The level follows: sampled across the sweep (lagging at most a pass of the control loop), it only rises,
        // from -40 dB to 0 dB.
        var sweep: [Double] = []
        for v in stride(from: 0, through: 127, by: 8) {
            if let l = rig.level(from: base + v * step + 2400, to: base + v * step + 2880) { sweep.append(l) }
        }
        if late > 0 {
            withKnownIssue("the server ran the MIDI sender late (a loaded machine)", isIntermittent: true) {
                #expect(sweep.count == 16 && zip(sweep, sweep.dropFirst()).allSatisfy { $0.0 <= $0.1 + 1e-6 }, "\(sweep)")
            }
        } else {
            #expect(sweep.count == 16 && zip(sweep, sweep.dropFirst()).allSatisfy { $0.0 <= $0.1 + 1e-6 }, "\(sweep)")
        }
        // How long after its message a value reaches the audio: the first output frame at the new level.
        let samples = rig.capture.samples()
        let first = try #require(rig.capture.firstFrameTime)
        var delays: [Int] = []
        for (k, v) in held.enumerated() where k > 0 {
            let at = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: holdBase + k * 24000) &- first))
            let want = Float(0.5 * pow(10, (-40 + 40 * Double(v) / 127) / 20))
            if at >= 0, at < samples.count, let hit = samples[at...].prefix(24000).firstIndex(where: { abs($0 - want) < want * 0.01 }) {
                delays.append(hit - at)
            }
        }
        print("control map figure: CC message to the new level in the output: \(delays) frames (48 kHz)")
        #expect(delays.count == held.count - 1 && delays.allSatisfy { $0 < 4800 }, "\(delays)")
        for (k, v) in held.enumerated() {
            let dB = -40 + 40 * Double(v) / 127
            let want = 0.5 * pow(10, dB / 20)
            let got = try #require(rig.level(from: holdBase + k * 24000 + 4800, to: holdBase + k * 24000 + 21600))
            print("control map figure: CC \(v) -> \(String(format: "%.2f", dB)) dB: level \(String(format: "%.6f", got)), "
                  + "expected \(String(format: "%.6f", want)) (\(String(format: "%+.4f", 20 * log10(got / want))) dB)")
            #expect(abs(got / want - 1) < 0.001, "CC \(v): level \(got), expected \(want)")
        }
    }

    /// `/tandem/map/learn` binds the next CC that moves (its channel, its rack), the map works at once, the list
    /// shows it, and the session saved as a preset keeps it (written by PresetWriter, read back the same).
    @Test(.enabled(if: hasPlugins))
    func learnBindsTheNextCCAndTheSavedPresetKeepsIt() throws {
        let rig = try Rig("learn", racks: Self.fxRack(rack: "midi_inputs = [\"midi_in\"]"), maps: "")
        defer { rig.stop() }
        let reply = rig.request("/tandem/map/learn", [.string("fx"), .string("amp"), .string("gain"), .float(-20),
                                                      .float(0), .string("linear")])
        #expect(reply.first == "ok" && reply.last?.contains("waiting") == true, "\(reply)")
        rig.sender.send(frame: rig.sender.frameTime + 4800, bytes: [0xB2, 21, 127])
        let added = rig.wait(for: "map-added")
        #expect(added == ["0 cc 3 21 @fx -> fx:amp:gain -20..0"], "\(added) \(rig.run.output)")
        #expect(rig.wait(for: "control-changed", prefix: "fx amp gain 0.0 midi").count == 1)
        rig.sender.send(frame: rig.sender.frameTime + 4800, bytes: [0xB2, 21, 0])
        #expect(rig.wait(for: "control-changed", prefix: "fx amp gain -20.0 midi").count == 1, "\(rig.events)")
        let get = rig.request("/tandem/plugin/get", [.string("fx"), .string("amp"), .string("gain")])
        #expect(get.last == "-20.0", "\(get)")
        let list = rig.request("/tandem/map/list")
        #expect(list.last?.contains("\"map\":\"cc 3 21 @fx -> fx:amp:gain -20..0\"") == true
                && list.last?.contains("\"learning\"") != true, "\(list)")
        // An OSC set reaches subscribers too.
        _ = rig.request("/tandem/plugin/set", [.string("fx"), .string("amp"), .string("gain"), .float(-6)])
        #expect(rig.wait(for: "control-changed", prefix: "fx amp gain -6.0 osc").count == 1)
        let saved = rig.request("/tandem/preset/save", [.string("learned")])
        #expect(saved.first == "ok", "\(saved)")
        let (p, problems) = PresetLoader.load(path: rig.dir.appendingPathComponent("learned.toml").path)
        #expect(problems.isEmpty, "\(problems)")
        #expect(p?.maps.map(\.description) == ["cc 3 21 @fx -> fx:amp:gain -20..0"], "\(String(describing: p?.maps))")
        let text = (try? String(contentsOfFile: rig.dir.appendingPathComponent("learned.toml").path, encoding: .utf8)) ?? ""
        #expect(text.contains("[[map]]\ncc = 21\nchannel = 3\nrack = \"fx\"\nengine = \"fx\"\nplugin = \"amp\"\ncontrol = \"gain\""), "\(text)")
        // Cleared, the CC moves nothing.
        #expect(rig.request("/tandem/map/clear", [.float(0)]).first == "ok")
        let before = rig.events.filter { $0.kind == "control-changed" }.count
        rig.sender.send(frame: rig.sender.frameTime + 4800, bytes: [0xB2, 21, 127])
        usleep(400_000)
        rig.receive()
        #expect(rig.events.filter { $0.kind == "control-changed" }.count == before, "\(rig.events)")
        #expect(rig.request("/tandem/plugin/get", [.string("fx"), .string("amp"), .string("gain")]).last == "-6.0")
        // A preset applied by difference reaches subscribers too (source "preset").
        let original = try String(contentsOfFile: rig.presetPath, encoding: .utf8)
        try original.replacingOccurrences(of: "uri = \"\(Self.amp)\"", with: "uri = \"\(Self.amp)\"\ncontrols = { gain = -12.0 }")
            .write(toFile: rig.dir.appendingPathComponent("changed.toml").path, atomically: true, encoding: .utf8)
        let applied = rig.request("/tandem/preset/apply", [.string("changed.toml")])
        #expect(applied.first == "ok", "\(applied)")
        #expect(rig.wait(for: "control-changed", prefix: "fx amp gain -12.0 preset").count == 1, "\(rig.events)")
    }

    /// CC 64 at 64 and above bypasses the amp (the DC passes at 0.5), below brings it back (-20 dB: 0.05); program
    /// change 0 loads the Detune's first LV2 preset (by label: "Out Of Tune", detune 0.8).
    @Test(.enabled(if: hasPlugins))
    func bypassByCCAndProgramChangeToAPluginPreset() throws {
        let racks = Self.fxRack(plugin: "controls = { gain = -20.0 }") + "\n" + """
            [[rack]]
            name = "det"
            [[rack.plugins]]
            uri = "\(Self.detune)"
            name = "det"
            """
        let rig = try Rig("bypass", racks: racks, maps: """
            [[map]]
            cc = 64
            engine = "fx"
            plugin = "amp"
            bypass = true
            [[map]]
            program = true
            rack = "det"
            engine = "det"
            plugin = "det"
            [[map]]
            note = 36
            engine = "fx"
            plugin = "amp"
            bypass = true
            """)
        defer { rig.stop() }
        #expect(rig.run.waitFor("connected snd:midi_out -> det:midi_in"), "\(rig.run.output)")
        let t0 = rig.sender.frameTime + 9600
        rig.sender.send(frame: t0, bytes: [0xB0, 64, 127])
        rig.sender.send(frame: t0 + 24000, bytes: [0xB0, 64, 0])
        rig.sender.send(frame: t0 + 48000, bytes: [0xC0, 0])
        #expect(rig.wait(for: "bypass-changed", prefix: "fx amp", count: 2) == ["fx amp 1 midi", "fx amp 0 midi"],
                "\(rig.events) \(rig.run.output)")
        let loaded = rig.wait(for: "preset-loaded")
        #expect(loaded == ["det det http://drobilla.net/plugins/mda/presets#Detune-out-of-tune midi"], "\(loaded) \(rig.run.output)")
        #expect(rig.wait(for: "control-changed", prefix: "det det detune 0.8").count == 1, "\(rig.events)")
        #expect(rig.request("/tandem/plugin/get", [.string("det"), .string("det"), .string("detune")]).last == "0.8")
        #expect(TestEnvironment.waitUntil(timeout: 5) { rig.sender.frameTime > t0 + 60000 })
        let bypassed = try #require(rig.level(from: t0 + 4800, to: t0 + 21600))
        let back = try #require(rig.level(from: t0 + 24000 + 4800, to: t0 + 24000 + 21600))
        print("control map figure: bypass by CC 64: level \(bypassed) bypassed, \(back) running at -20 dB")
        #expect(abs(bypassed - 0.5) < 1e-4 && abs(back - 0.05) < 1e-4, "bypassed \(bypassed), running \(back)")
        // A note toggles. The sender reaches both racks' MIDI inputs and the map hears every rack: one toggle per
        // message, not one per rack (two would cancel out).
        rig.sender.send(frame: rig.sender.frameTime + 4800, bytes: [0x99, 36, 90])
        #expect(rig.wait(for: "bypass-changed", prefix: "fx amp", count: 3) == ["fx amp 1 midi", "fx amp 0 midi", "fx amp 1 midi"],
                "\(rig.events)")
        usleep(300_000)
        rig.receive()
        #expect(rig.events.filter { $0.kind == "bypass-changed" }.count == 3, "\(rig.events)")
        #expect(rig.request("/tandem/plugin/bypass", [.string("fx"), .string("amp")]).last == "1")
    }

    /// Beside a recorder the rack runs isolated: its process runs the maps (given as --map) and tells the session,
    /// whose subscriber hears each value; the audio follows; a marker map's marker, relayed, lands on the note's frame
    /// in the session's take.
    @Test(.enabled(if: hasPlugins))
    func anIsolatedRackRunsItsMapsAndTheSessionsSubscribersHearThem() throws {
        let rig = try Rig("iso", racks: Self.fxRack(), maps: """
            [[map]]
            cc = 7
            engine = "fx"
            plugin = "amp"
            control = "gain"
            min = -40
            max = 0
            [[map]]
            note = 60
            marker = "pedal"
            """, recorder: true)
        defer { rig.stop() }
        #expect(rig.run.waitFor("take 1 recording"), "\(rig.run.output)")
        let t0 = rig.sender.frameTime + 9600
        rig.sender.send(frame: t0, bytes: [0xB5, 7, 127])
        rig.sender.send(frame: t0 + 24000, bytes: [0xB5, 7, 0])
        rig.sender.send(frame: t0 + 24000 + 33, bytes: [0x95, 60, 1])
        let texts = rig.wait(for: "control-changed", prefix: "fx amp gain", count: 2)
        #expect(texts == ["fx amp gain 0.0 midi", "fx amp gain -40.0 midi"], "\(rig.events) \(rig.run.output)")
        #expect(TestEnvironment.waitUntil(timeout: 5) { rig.sender.frameTime > t0 + 48000 })
        let high = try #require(rig.level(from: t0 + 4800, to: t0 + 21600))
        let low = try #require(rig.level(from: t0 + 24000 + 4800, to: t0 + 24000 + 21600))
        #expect(abs(high - 0.5) < 5e-4 && abs(low - 0.005) < 5e-6, "0 dB: \(high), -40 dB: \(low)")
        rig.run.process.signal(SIGTERM)
        #expect(rig.run.process.wait(timeout: 15) == 0, "\(rig.run.output)")
        let report = try TakeReport.read(from: try #require(announcedReport(rig.run.output), "\(rig.run.output)"))
        let frame = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: t0 + 24000 + 33) &- report.startFrameTime))
        #expect(report.markers == [TakeMarker(frame: frame, label: "pedal", source: "midi")], "\(String(describing: report.markers))")
    }

    /// What a map names of a plugin is looked up with the plugins: `tandem preset check` names a control the plugin
    /// does not have, a range outside the port's, an LV2 preset it does not have, with file, line and key.
    @Test(.enabled(if: hasPlugins))
    func presetCheckLooksUpWhatMapsNameOfAPlugin() throws {
        let dir = TestEnvironment.temporaryDirectory("mapcheck")
        let path = dir.appendingPathComponent("check.toml").path
        try """
            \(Self.fxRack())
            [[rack.plugins]]
            uri = "\(Self.detune)"
            name = "det"
            [[map]]
            cc = 1
            engine = "fx"
            plugin = "amp"
            control = "volume"
            [[map]]
            cc = 2
            engine = "fx"
            plugin = "amp"
            control = "gain"
            min = -100
            max = 0
            [[map]]
            program = true
            engine = "fx"
            plugin = "det"
            presets = ["http://example.org/no-such-preset"]
            [[map]]
            program = true
            engine = "fx"
            plugin = "amp"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "preset", "check", path], timeout: 30)
        #expect(r.code == 2, "\(r.output)")
        for line in ["check.toml:12: map.control: <\(Self.amp)> has no control 'volume' (controls: gain)",
                     "check.toml:17: map.min: control 'gain' = -100.0 is outside its range -70.0 to 70.0",
                     "check.toml:24: map.presets: <\(Self.detune)> has no preset 'http://example.org/no-such-preset'",
                     "check.toml:29: map.program: <\(Self.amp)> has no LV2 presets to choose by program"] {
            #expect(r.output.contains(line), "\(line)\n\(r.output)")
        }
    }

    /// Program change applies Tandem preset files by difference (as /tandem/preset/apply does): the controls they
    /// change reach subscribers, the maps stay (the files have none), a program past the list is said.
    @Test(.enabled(if: hasPlugins))
    func programChangeAppliesAPresetFile() throws {
        func gain(_ dB: Double) -> (String) -> String {
            { $0.replacingOccurrences(of: "uri = \"\(Self.amp)\"", with: "uri = \"\(Self.amp)\"\ncontrols = { gain = \(dB) }") }
        }
        let rig = try Rig("file", racks: Self.fxRack(), maps: """
            [[map]]
            program = true
            files = ["quiet.toml", "loud.toml"]
            """, variants: ["quiet.toml": gain(-30), "loud.toml": gain(-3)])
        defer { rig.stop() }
        rig.sender.send(frame: rig.sender.frameTime + 4800, bytes: [0xC0, 1])
        #expect(rig.wait(for: "control-changed", prefix: "fx amp gain -3.0 preset").count == 1, "\(rig.events) \(rig.run.output)")
        rig.sender.send(frame: rig.sender.frameTime + 4800, bytes: [0xC0, 0])
        #expect(rig.wait(for: "control-changed", prefix: "fx amp gain -30.0 preset").count == 1, "\(rig.events)")
        rig.sender.send(frame: rig.sender.frameTime + 4800, bytes: [0xC0, 5])
        let failed = rig.wait(for: "map-failed")
        #expect(failed.first?.contains("program 5 has no preset file (2 listed)") == true, "\(failed)")
        #expect(rig.request("/tandem/map/list").last?.contains("quiet.toml") == true)
        #expect(rig.request("/tandem/plugin/get", [.string("fx"), .string("amp"), .string("gain")]).last == "-30.0")
    }

    /// `tandem rack --map` refuses what it cannot run, in words, before anything starts.
    @Test func badRackMapsAreRefusedInWords() throws {
        let amp = "http://plugin.org.uk/swh-plugins/amp"
        let cases: [([String], String)] = [
            (["--map", "cc 1 7 -> nope:gain"], "no plugin 'nope' in the rack"),
            (["--map", "cc 1 7 -> other:amp:gain"], "this rack is 'rack', not 'other'"),
            (["--map", "note 60 -> mark"], "markers and preset files go in a preset"),
            (["--map", "cc 1 300 -> amp:gain"], "0 to 127"),
            (["--map", "cc 1 7 -> amp:gain 0..1e99"], "-1e9 to 1e9"),
        ]
        for (args, why) in cases {
            let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "rack", "--plugin", amp] + args, timeout: 20)
            #expect(r.code != 0 && r.output.contains(why), "\(args): \(r.code) \(r.output)")
        }
    }

    /// A mapped note adds a marker to the running take at the note's own frame (the same path as
    /// /tandem/record/mark, source "midi").
    @Test(.enabled(if: hasPlugins))
    func aMappedNoteAddsAMarkerAtItsFrame() throws {
        let rig = try Rig("mark", racks: Self.fxRack(rack: "isolate = false"), maps: """
            [[map]]
            note = 60
            marker = "chorus"
            """, recorder: true)
        defer { rig.stop() }
        #expect(rig.run.waitFor("take 1 recording"), "\(rig.run.output)")
        let at = rig.sender.frameTime + 9600 + 17
        rig.sender.send(frame: at, bytes: [0x90, 60, 100])
        rig.sender.send(frame: at + 100, bytes: [0x90, 61, 100])   // not mapped
        #expect(TestEnvironment.waitUntil(timeout: 5) { rig.sender.frameTime > at + 9600 })
        rig.run.process.signal(SIGTERM)
        #expect(rig.run.process.wait(timeout: 15) == 0, "\(rig.run.output)")
        let report = try TakeReport.read(from: try #require(announcedReport(rig.run.output), "\(rig.run.output)"))
        let markers = report.markers ?? []
        let expected = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: at) &- report.startFrameTime))
        print("control map figure: note-on at take frame \(expected) -> markers \(markers)")
        #expect(markers == [TakeMarker(frame: expected, label: "chorus", source: "midi")], "\(markers)")
    }
}
