import Control
import Foundation
import Jack
import Testing
import TestSupport

/// Isolated racks must lose nothing (issue 43): every surface that reaches an in-process rack's chain reaches an
/// isolated one's, through its process, and each test runs both ways (`isolate = false` and `true`) on the real
/// program: a plugin save over HTTP and `tandem ctl`, maps added over HTTP, the source a control event names, a map
/// without `rack` fed MIDI on another rack, and what the session acknowledged kept across a JACK server restart (by
/// reading it back and by the audio).
@Suite(.serialized) struct IsolatedRackParityTests {
    static let amp = "http://lv2plug.in/plugins/eg-amp"
    static var hasPlugins: Bool { FileManager.default.fileExists(atPath: "/usr/lib/lv2/eg-amp.lv2") }

    /// A session "par" beside a recorder: a player looping a constant 0.5 into rack `fx` (eg-amp `amp` at -6 dB, then
    /// `amp2` at -20 dB), its output into a capture client `cap`, a MIDI sender `snd` patched into `midiTo`'s MIDI
    /// input, the HTTP API, the OSC port and a subscriber hearing every event.
    final class Rig {
        var server: JackServer
        let dir: URL
        var sender: MIDISender
        var capture: TestCapture
        let run: TandemProcess
        let http: HTTPTestClient
        let port: Int
        let socket: UDPSocket
        /// Every `/tandem/event` received so far: kind and text.
        var events: [(kind: String, text: String)] = []

        init(_ tag: String, isolate: Bool, midiTo: String = "fx", extra: String = "") throws {
            server = try TestEnvironment.server("par\(tag)\(isolate ? "i" : "p")")
            dir = TestEnvironment.temporaryDirectory("par\(tag)\(isolate ? "i" : "p")")
            try TestEnvironment.writeWAV([Float](repeating: 0.5, count: 48000), channels: 1,
                                         path: dir.appendingPathComponent("dc.wav").path, sample: .float32)
            sender = try MIDISender(name: "snd", server: server.name)
            capture = try TestCapture(name: "cap", server: server.name, channels: 1, seconds: 120)
            port = 21000 + Int(getpid() % 9000) + tag.utf8.count * 7 + (isolate ? 1 : 0)
            let preset = dir.appendingPathComponent("par.toml").path
            try """
                [session]
                name = "par"
                directory = "\(dir.path)"
                control_port = \(port)
                on_server_loss = "resume"
                [recorder]
                client = "par-rec"
                channels = 1
                start = "armed"
                [player]
                client = "par-play"
                channels = 1
                queue = ["dc.wav"]
                loop = "item"
                [[rack]]
                name = "fx"
                client = "fx"
                isolate = \(isolate)
                inputs = 1
                outputs = 1
                midi_inputs = 1
                [[rack.plugins]]
                uri = "\(IsolatedRackParityTests.amp)"
                name = "amp"
                controls = { gain = -6 }
                [[rack.plugins]]
                uri = "\(IsolatedRackParityTests.amp)"
                name = "amp2"
                controls = { gain = -20 }
                \(extra)
                [[connect]]
                from = "par-play:out_1"
                to = "fx:in_1"
                [[connect]]
                from = "fx:out_1"
                to = "cap:in_1"
                [[connect]]
                from = "snd:midi_out"
                to = "\(midiTo):midi_in"
                """.write(toFile: preset, atomically: true, encoding: .utf8)
            run = try TandemProcess(["run", "--no-view", "--http", "127.0.0.1:0", preset], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
            socket = try UDPSocket(port: 0)
            guard run.waitFor("HTTP API listening", timeout: 20),
                  let line = run.output.split(separator: "\n").first(where: { $0.contains("HTTP API listening") }),
                  let range = line.range(of: #":(\d+)/"#, options: .regularExpression),
                  let httpPort = Int(line[range].dropFirst().dropLast()) else {
                run.process.signal(SIGKILL)
                throw RigError(description: "no HTTP server: \(run.output)")
            }
            http = HTTPTestClient(port: httpPort)
            #expect(run.waitFor("connected fx:out_1 -> cap:in_1", timeout: 15), "\(run.output)")
            #expect(run.waitFor("connected snd:midi_out -> \(midiTo):midi_in", timeout: 15), "\(run.output)")
            // An isolated rack's process answers once its client is active.
            #expect(TestEnvironment.waitUntil(timeout: 15) { self.gain("amp") != nil }, "\(run.output)")
            let reply = request("/tandem/subscribe", [.string("osc.udp://127.0.0.1:\(socket.port)/"), .float(60)])
            #expect(reply.first == "ok", "\(reply)")
        }

        struct RigError: Error, CustomStringConvertible { let description: String }

        /// A control of `fx` read over HTTP (nil: no answer yet).
        func gain(_ plugin: String) -> Double? {
            guard let a = http.get("/api/engines/fx/plugins/\(plugin)/controls/gain"), a.status == 200 else { return nil }
            return (a.json as? [String: Any])?["value"] as? Double
        }

        /// Sends an OSC request to the session and returns the reply's strings; events on the way are kept.
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

        /// Whether an event of `kind` with exactly `text` arrives within `timeout` (or has arrived).
        func heard(_ kind: String, _ text: String, timeout: Double = 10) -> Bool {
            TestEnvironment.waitUntil(timeout: timeout) {
                receive()
                return events.contains { $0.kind == kind && $0.text == text }
            }
        }

        /// The mean absolute level of the last `frames` frames captured.
        func recentLevel(frames: Int = 2400) -> Double? {
            let samples = capture.samples()
            guard samples.count >= frames else { return nil }
            return samples.suffix(frames).reduce(0) { $0 + Double(abs($1)) } / Double(frames)
        }

        func stop() {
            if run.process.isRunning {
                run.process.signal(SIGTERM)
                _ = run.process.wait(timeout: 15)
            }
            sender.close()
            capture.close()
            server.stop()
        }
    }

    static func ctl(_ port: Int, _ words: [String]) throws -> (code: Int32, text: String) {
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)"] + words, timeout: 10)
        return (r.code, r.output)
    }

    /// `POST /api/plugins/save` and `tandem ctl plugin save` save the rack's chain (its process saves an isolated
    /// one's): on main both said "this session has no plugins" beside isolated racks.
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func pluginSaveSavesTheRack(isolate: Bool) throws {
        let rig = try Rig("save", isolate: isolate)
        defer { rig.stop() }
        let folder = rig.dir.appendingPathComponent("par.plugins/rack-fx").path
        let state = folder + "/amp/state.ttl"
        let saved = rig.http.request("POST", "/api/plugins/save")
        let detail = (saved?.json as? [String: Any])?["detail"] as? String ?? ""
        #expect(saved?.status == 200 && detail.contains(folder), "\(String(describing: saved))")
        #expect(FileManager.default.fileExists(atPath: state), "\(state)")
        try FileManager.default.removeItem(atPath: folder)
        let r = try Self.ctl(rig.port, ["plugin", "save"])
        #expect(r.code == 0 && r.text.contains(folder), "\(r)")
        #expect(FileManager.default.fileExists(atPath: state), "\(state)")
    }

    /// A map added over HTTP drives the rack's control from MIDI on its input, and is cleared over HTTP: on main
    /// `POST /api/maps` answered 400 "this session has no rack in this process" beside an isolated rack.
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func mapsAddedOverHTTPDriveTheRack(isolate: Bool) throws {
        let rig = try Rig("maps", isolate: isolate)
        defer { rig.stop() }
        let added = rig.http.send("POST", "/api/maps", json: ["map": "cc 1 7 -> fx:amp:gain -40..0"])
        #expect(added?.status == 200, "\(String(describing: added))")
        #expect(rig.http.get("/api/maps")?.text.contains("fx:amp:gain") == true)
        // The rack's process takes its maps on its next turn: the CC is sent until a value arrives.
        for (cc, text) in [(UInt8(0), "fx amp gain -40.0 midi"), (127, "fx amp gain 0.0 midi")] {
            let moved = TestEnvironment.waitUntil(timeout: 10) {
                _ = rig.sender.send(frame: rig.sender.frameTime + 480, bytes: [0xB0, 7, cc])
                return rig.heard("control-changed", text, timeout: 0.5)
            }
            #expect(moved, "\(text): \(rig.events) \(rig.run.output)")
        }
        #expect(rig.gain("amp") == 0)
        let cleared = rig.http.request("DELETE", "/api/maps")
        #expect(cleared?.status == 200, "\(String(describing: cleared))")
        #expect(rig.http.get("/api/maps")?.text.contains("fx:amp:gain") == false)
    }

    /// A control event says the surface that caused it: on main an isolated rack's said `osc` for a change made over
    /// HTTP (the relay to its process was OSC).
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func controlEventsNameTheirSource(isolate: Bool) throws {
        let rig = try Rig("source", isolate: isolate)
        defer { rig.stop() }
        let set = rig.http.send("PUT", "/api/engines/fx/plugins/amp/controls/gain", json: ["value": -12])
        #expect(set?.status == 200, "\(String(describing: set))")
        #expect(rig.heard("control-changed", "fx amp gain -12.0 http"), "\(rig.events)")
        #expect(rig.request("/tandem/plugin/set", [.string("fx"), .string("amp"), .string("gain"), .float(-3)]).first == "ok")
        #expect(rig.heard("control-changed", "fx amp gain -3.0 osc"), "\(rig.events)")
        #expect(rig.http.send("PUT", "/api/engines/fx/plugins/amp2/bypass", json: ["bypassed": true])?.status == 200)
        #expect(rig.heard("bypass-changed", "fx amp2 1 http"), "\(rig.events)")
        #expect(rig.http.send("PUT", "/api/engines/fx/mix", json: ["mix": 0.5])?.status == 200)
        #expect(rig.heard("chain-level-changed", "fx 0.5 0.0 http"), "\(rig.events)")
    }

    /// A `[[map]]` without `rack` hears every rack's MIDI: CC on an in-process rack's input moves `fx`'s control,
    /// isolated or not (the session relays it to an isolated rack's process). On main it never moved an isolated one.
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func aMapWithoutARackMovesTheRackFromAnotherRacksMIDI(isolate: Bool) throws {
        let rig = try Rig("norack", isolate: isolate, midiTo: "keys", extra: """
            [[rack]]
            name = "keys"
            client = "keys"
            isolate = false
            inputs = 1
            outputs = 1
            midi_inputs = 1
            [[rack.plugins]]
            uri = "\(Self.amp)"
            name = "pad"
            [[map]]
            cc = 7
            engine = "fx"
            plugin = "amp"
            control = "gain"
            min = -40
            max = 0
            """)
        defer { rig.stop() }
        _ = rig.sender.send(frame: rig.sender.frameTime + 480, bytes: [0xB0, 7, 0])
        #expect(rig.heard("control-changed", "fx amp gain -40.0 midi"), "\(rig.events) \(rig.run.output)")
        #expect(rig.gain("amp") == -40)
        _ = rig.sender.send(frame: rig.sender.frameTime + 480, bytes: [0xB0, 7, 127])
        #expect(rig.heard("control-changed", "fx amp gain 0.0 midi"), "\(rig.events)")
        #expect(rig.gain("amp") == 0)
    }

    /// One MIDI source patched into an in-process rack and into `fx`: a map without `rack` onto `fx` fires once per
    /// message, isolated or not (an isolated `fx`'s process fires it from its own input; the session, which hears
    /// the other rack, does not fire it again).
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func aMapHeardByTwoRacksFiresOncePerMessage(isolate: Bool) throws {
        let rig = try Rig("twice", isolate: isolate, midiTo: "keys", extra: """
            [[rack]]
            name = "keys"
            client = "keys"
            isolate = false
            inputs = 1
            outputs = 1
            midi_inputs = 1
            [[rack.plugins]]
            uri = "\(Self.amp)"
            name = "pad"
            [[connect]]
            from = "snd:midi_out"
            to = "fx:midi_in"
            [[map]]
            cc = 7
            engine = "fx"
            plugin = "amp"
            control = "gain"
            min = -40
            max = 0
            """)
        defer { rig.stop() }
        #expect(rig.run.waitFor("connected snd:midi_out -> fx:midi_in"), "\(rig.run.output)")
        let texts = ["fx amp gain -40.0 midi", "fx amp gain 0.0 midi"]
        for (cc, text) in zip([UInt8(0), 127], texts) {
            _ = rig.sender.send(frame: rig.sender.frameTime + 480, bytes: [0xB0, 7, cc])
            #expect(rig.heard("control-changed", text), "\(text): \(rig.events) \(rig.run.output)")
        }
        // A third message: once it is heard, a second firing of the first two would have been heard too.
        _ = rig.sender.send(frame: rig.sender.frameTime + 480, bytes: [0xB0, 7, 64])
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            rig.receive()
            return rig.events.contains { $0.kind == "control-changed" && $0.text.hasPrefix("fx amp gain -19.") }
        }, "\(rig.events)")
        print("events heard, isolate \(isolate): \(rig.events.filter { $0.kind == "control-changed" }.map(\.text))")
        let counts = texts.map { t in rig.events.filter { $0.kind == "control-changed" && $0.text == t }.count }
        #expect(counts == [1, 1], "each message once: \(rig.events)")
    }

    /// Item D: a control value, a bypass, the mix and the gain set over HTTP (200), the server killed at once and
    /// started again: after the restore the rack has every value, read over HTTP and OSC and heard in its output. On
    /// main an isolated rack came back with its preset's values (its process had not saved them yet).
    @Test(.enabled(if: hasPlugins), arguments: [false, true])
    func whatTheSessionAcknowledgedSurvivesAServerRestart(isolate: Bool) throws {
        let rig = try Rig("restore", isolate: isolate)
        defer { rig.stop() }
        // 0.5 through -6 dB and -20 dB.
        let before = 0.5 * pow(10, -26.0 / 20)
        #expect(TestEnvironment.waitUntil(timeout: 10) { rig.recentLevel().map { abs($0 - before) < 1e-3 } ?? false },
                "\(String(describing: rig.recentLevel())) vs \(before)")
        for (path, body) in [("/api/engines/fx/plugins/amp/controls/gain", ["value": -12] as [String: Any]),
                             ("/api/engines/fx/plugins/amp2/bypass", ["bypassed": true]),
                             ("/api/engines/fx/mix", ["mix": 0.5]), ("/api/engines/fx/gain", ["gain": -6])] {
            let a = rig.http.send("PUT", path, json: body)
            #expect(a?.status == 200, "\(path): \(String(describing: a))")
        }
        // At once (closing a client first would wake the rack's loop, which then saves its state in time).
        rig.server.kill9()
        #expect(rig.run.waitFor("JACK server lost"), "\(rig.run.output)")
        #expect(TestEnvironment.waitUntil(timeout: 10) { rig.sender.client.wasShutDown && rig.capture.client.wasShutDown })
        rig.sender.close()
        rig.capture.close()
        rig.server = try TestEnvironment.server(named: rig.server.name)
        rig.sender = try MIDISender(name: "snd", server: rig.server.name)
        rig.capture = try TestCapture(name: "cap", server: rig.server.name, channels: 1, seconds: 120)
        #expect(rig.run.waitFor("JACK server is back", timeout: 20), "\(rig.run.output)")
        #expect(TestEnvironment.waitUntil(timeout: 15) { rig.gain("amp") == -12 },
                "gain after the restore: \(String(describing: rig.gain("amp")))\n\(rig.run.output)")
        #expect(rig.request("/tandem/plugin/bypass", [.string("fx"), .string("amp2")]).last == "1")
        #expect(rig.request("/tandem/plugin/mix", [.string("fx")]).last.flatMap(Double.init) == 0.5)
        #expect(rig.request("/tandem/plugin/gain", [.string("fx")]).last.flatMap(Double.init) == -6)
        // By the audio: -6 dB of (half the dry 0.5, half of it through -12 dB), amp2 bypassed.
        let after = pow(10, -6.0 / 20) * (0.5 * 0.5 + 0.5 * 0.5 * pow(10, -12.0 / 20))
        #expect(TestEnvironment.waitUntil(timeout: 10) { rig.recentLevel().map { abs($0 - after) < 1e-3 } ?? false },
                "level \(String(describing: rig.recentLevel())), want \(after)\n\(rig.run.output)")
    }
}
