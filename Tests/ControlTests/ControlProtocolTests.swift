import Coordinator
import Testing
import Foundation
import Control
import Engine
import Jack
import Presets
import TestSupport

/// The OSC control protocol against a real session and real OSC peers (oscsend, oscdump from liblo-tools).
@Suite(.serialized) struct ControlProtocolTests {
    final class Rig {
        let server: JackServer
        let dir: URL
        let session = Session()
        let control: ControlProtocol
        let source: JackClient
        let sourceState: UnsafeMutablePointer<LoopState>

        init(_ label: String) throws {
            server = try TestEnvironment.server(label)
            dir = TestEnvironment.temporaryDirectory(label)
            let peak = pow(10, -6.0 / 20)
            let sine = Signals.sine(frames: 48000, channels: 1, frequency: 1000, sampleRate: 48000, peak: peak)
            (source, sourceState) = try LoopState.source(name: "src", server: server.name, channels: 1,
                                                         samples: Array(repeating: sine, count: 30).flatMap { $0 })
            let text = """
                [session]
                name = "ctl"
                server = "\(server.name)"
                directory = "\(dir.path)"
                [recorder]
                client = "ctl-rec"
                channels = 1
                start = "armed"
                [[connect]]
                from = "src:out_1"
                to = "ctl-rec:in_1"
                """
            let (p, problems) = PresetLoader.parse(text, file: "ctl.toml", baseDirectory: dir.path)
            try #require(problems.isEmpty, "\(problems)")
            try session.apply(p!)
            control = try ControlProtocol(session: session, port: 0)
            sourceState.pointee.started.store(1)
        }

        /// Runs the control loop (as `tandem run` does) for `seconds`.
        func pump(_ seconds: Double) {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                _ = session.poll()
                session.sampleMeters()
                control.poll(events: session.drainNumberedEvents())
                usleep(20_000)
            }
        }

        func send(_ args: [String]) throws {
            let r = try TestEnvironment.run(["oscsend", "127.0.0.1", "\(control.port)"] + args)
            #expect(r.code == 0, "oscsend \(args): \(r.output)")
            pump(0.2)
        }

        func close() {
            session.close()
            source.close()
            LoopState.free(sourceState)
            server.stop()
        }
    }

    static let peersAvailable = TestEnvironment.hasProgram("oscsend") && TestEnvironment.hasProgram("oscdump")

    @Test(.enabled(if: peersAvailable))
    func oscPeersStartStopReadStatusSubscribeAndGetErrors() throws {
        let rig = try Rig("osc")
        defer { rig.close() }
        let listenPort = 20000 + Int(getpid() % 20000)
        let dumpLog = rig.dir.appendingPathComponent("oscdump.log").path
        let dump = try ChildProcess(["oscdump", "-L", "\(listenPort)"], outputPath: dumpLog)
        defer { dump.stop() }
        usleep(300_000)
        func dumped() -> String { (try? String(contentsOfFile: dumpLog, encoding: .utf8)) ?? "" }

        try rig.send(["/tandem/subscribe", "sf", "osc.udp://127.0.0.1:\(listenPort)/", "0.1"])
        try rig.send(["/tandem/record/start"])
        rig.pump(1.5)
        try rig.send(["/tandem/status"])
        try rig.send(["/tandem/bogus"])
        try rig.send(["/tandem/play/load", "s", "/etc/passwd"])
        try rig.send(["/tandem/play/load", "s", "../../etc/passwd"])
        try rig.send(["/tandem/record/stop"])
        rig.pump(1)
        let out = dumped()
        #expect(out.contains("\"ok\" \"/tandem/subscribe\""), "\(out.prefix(2000))")
        #expect(out.contains("\"ok\" \"/tandem/record/start\""))
        #expect(out.contains("/tandem/event ssh \"take-started\""))
        #expect(out.contains("\"ok\" \"/tandem/status\"") && out.contains("\\\"recording\\\":true") || out.contains("\"recording\":true"))
        #expect(out.contains("\"error\" \"/tandem/bogus\" \"unknown command '/tandem/bogus'"))
        #expect(out.contains("\"error\" \"/tandem/play/load\" \"'/etc/passwd' is outside the session directory"))
        #expect(out.contains("\"error\" \"/tandem/play/load\" \"'../../etc/passwd' is outside the session directory"))
        #expect(out.contains("\"ok\" \"/tandem/record/stop\""))
        #expect(out.contains("/tandem/event ssh \"take-finished\""))
        // Meters: the -6 dBFS sine reads -6.0 peak and -9.0 RMS on its channel.
        let meterLines = out.split(separator: "\n").filter { $0.contains(" /tandem/meters ff ") }   // oscdump prefixes a timestamp
        #expect(meterLines.count >= 10, "meter pushes: \(meterLines.count)")
        let values = meterLines.dropFirst(5).compactMap { line -> (Double, Double)? in
            let parts = line.split(separator: " ")
            guard parts.count == 5, let pk = Double(parts[3]), let rms = Double(parts[4]) else { return nil }
            return (pk, rms)
        }
        #expect(!values.isEmpty && values.allSatisfy { abs($0.0 - -6.0) < 0.1 && abs($0.1 - -9.0) < 0.1 }, "\(values.prefix(3))")
    }

    /// Bad messages get an error reply each; nothing is written outside the session directory; the session runs on.
    @Test func badMessagesGetErrorRepliesAndTheSessionRunsOn() throws {
        let rig = try Rig("badosc")
        defer { rig.close() }
        let client = try UDPSocket(port: 0)
        func ask(_ bytes: [UInt8]) -> [OSCValue]? {
            client.send(bytes, to: UDPSocket.loopback(port: rig.control.port))
            let end = Date().addingTimeInterval(2)
            while Date() < end {
                rig.pump(0.05)
                if let d = client.receive(limit: 65536),
                   let m = try? OSCMessage.decode(bytes: d.bytes).get() {
                    return m.arguments
                }
            }
            return nil
        }
        let cases: [([UInt8], String)] = [
            (OSCMessage("/tandem/play/seek", [.string("soon")]).encode(), "/tandem/play/seek takes SECONDS (0 to"),
            (OSCMessage("/tandem/play/seek").encode(), "takes SECONDS"),
            (OSCMessage("/tandem/play/gain", [.float(99)]).encode(), "gain 99 is out of range (-120 to 24 dB)"),
            (OSCMessage("/tandem/record/start", [.int(1)]).encode(), "takes no arguments"),
            (OSCMessage("/tandem/nope").encode(), "unknown command"),
            (OSCMessage("/tandem/preset/apply", [.string("../../../../etc/hostname")]).encode(), "outside the session directory"),
            (OSCMessage("/tandem/play/load", [.string("a/../../x.wav")]).encode(), "outside the session directory"),
            (OSCMessage("/tandem/subscribe", [.string("osc.udp://192.0.2.1:9000/")]).encode(), "loopback"),
            (Array(repeating: 0x41, count: 10_000), "message too large"),
            (Array("garbage!".utf8), "malformed"),
            (Array("#bundle\0".utf8) + [UInt8](repeating: 0, count: 8), "bundles are not supported"),
        ]
        for (bytes, fragment) in cases {
            let reply = ask(bytes)
            #expect(reply?.first?.string == "error", "\(fragment): \(String(describing: reply))")
            #expect(reply.map { $0.count > 2 ? $0[2] : nil }??.string?.contains(fragment) == true, "\(fragment): \(String(describing: reply))")
        }
        #expect(ask(OSCMessage("/tandem/ping").encode())?.first?.string == "ok", "the session runs on")
        let entries = try FileManager.default.contentsOfDirectory(atPath: rig.dir.path)
        #expect(entries.isEmpty, "nothing written: \(entries)")
    }
}
