import Control
import Foundation
import Loudness
import Takes
import Testing
import TestSupport

/// EBU R128 loudness of a recorder, from a real server: live in the status, the metrics and the event stream's meter
/// frames, and in the take's report, where it equals a measurement of the take's own file.
@Suite(.serialized) struct LoudnessRecordTests {
    /// Stereo 1 kHz: 3 s at -23 dBFS, 3 s at -33 dBFS (a range of about 10 LU), looped by the session's player into
    /// its recorder.
    static func source(_ path: String) throws {
        var samples: [Float] = []
        for n in 0..<(6 * 48000) {
            let level = n < 3 * 48000 ? -23.0 : -33.0
            let v = Float(pow(10, level / 20) * sin(2 * Double.pi * 1000 * Double(n) / 48000))
            samples += [v, v]
        }
        try TestEnvironment.writeWAV(samples, channels: 2, path: path)
    }

    static func get(_ port: Int, _ path: String) throws -> String {
        try TestEnvironment.run(["curl", "-s", "--max-time", "5", "http://127.0.0.1:\(port)\(path)"]).output
    }

    @Test func aTakeReportHoldsTheLoudnessOfItsFileAndTheStatusShowsItLive() throws {
        let server = try TestEnvironment.server("loud-rec")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("loud-rec")
        let sine = dir.appendingPathComponent("sine.wav").path
        try Self.source(sine)
        let port = Int.random(in: 20000...40000)
        let control = LoopbackUDP.freePort()
        let preset = dir.appendingPathComponent("loud.toml").path
        try """
            [session]
            name = "loud"
            directory = "\(dir.path)"
            loudness = true
            exit_after = "take"
            [recorder]
            client = "loud-rec"
            channels = 2
            duration = 8
            start = "armed"
            [player]
            client = "loud-play"
            queue = ["\(sine)"]
            loop = "item"
            [[rack]]
            name = "fx"
            client = "loud-fx"
            isolate = false
            inputs = 2
            [[rack.plugins]]
            uri = "http://lv2plug.in/plugins/eg-amp"
            [[rack]]
            name = "iso"
            client = "loud-iso"
            isolate = true
            inputs = 2
            [[rack.plugins]]
            uri = "http://lv2plug.in/plugins/eg-amp"
            [[connect]]
            from = "loud-play:out_*"
            to = "loud-iso:in_*"
            [[connect]]
            from = "loud-play:out_*"
            to = "loud-rec:in_*"
            [[connect]]
            from = "loud-play:out_*"
            to = "loud-fx:in_*"
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let tandem = try TandemProcess(["run", preset, "--no-view", "--control-port", "\(control)", "--metrics-port", "\(port)"],
                                       server: server, log: dir.appendingPathComponent("run.log").path)
        defer { if tandem.process.isRunning { _ = tandem.process.stop(SIGKILL) } }
        #expect(tandem.waitFor("HTTP API listening"), "\(tandem.output)")

        // Armed: the live meters run before any take: the recorder's inputs, the player's and the racks' outputs (the
        // isolated rack's process tells its readings through its heartbeat, once a second). The momentary values
        // settle within a second.
        var live: [String: [String: Any]] = [:]
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && live.count < 4 {
            let text = try Self.get(port, "/api/status")
            if let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
               let list = json["loudness"] as? [[String: Any]] {
                for p in list where p["momentary"] != nil { live[p["engine"] as? String ?? ""] = p }
            }
            if live.count < 4 { usleep(100_000) }
        }
        #expect(Set(live.keys) == ["recorder", "player", "fx", "iso"], "\(live)")
        for (engine, p) in live {
            let m = p["momentary"] as? Double ?? 0
            #expect(m > -34.5 && m < -21.5, "\(engine): momentary \(m)")
        }
        let reading = try #require(live["recorder"], "no live loudness of the recorder in the status")
        let status = try JSONSerialization.jsonObject(with: Data(try Self.get(port, "/api/status").utf8)) as? [String: Any]
        #expect((status?["preset"] as? [String: Any])?["name"] as? String == "loud", "the status names the running preset")
        #expect(reading["engine"] as? String == "recorder")
        #expect(reading["channels"] as? [String] == ["in_1", "in_2"])
        let momentary = try #require(reading["momentary"] as? Double)
        #expect(momentary > -34.5 && momentary < -21.5, "momentary \(momentary)")
        // An OSC subscriber gets /tandem/loudness with its meters: per programme its ports, then M, S, I, LRA, TP.
        let socket = try UDPSocket(port: 0)
        _ = socket.send(OSCMessage("/tandem/subscribe", [.string("osc.udp://127.0.0.1:\(socket.port)/"), .float(0.1)])
            .encode(), to: UDPSocket.loopback(port: control))
        var osc: OSCMessage?
        _ = TestEnvironment.waitUntil(timeout: 5) {
            while let d = socket.receive(limit: 65536) {
                if case .success(let m) = OSCMessage.decode(bytes: d.bytes), m.path == "/tandem/loudness" { osc = m }
            }
            return osc != nil
        }
        let pushed = try #require(osc, "no /tandem/loudness pushed to a subscriber")
        #expect(pushed.arguments.count == 4 * 6 && pushed.arguments.first?.string == "in_1+in_2", "\(pushed.arguments)")
        let metrics = try Self.get(port, "/metrics")
        #expect(metrics.contains(#"tandem_loudness_lufs{engine="recorder",channels="in_1+in_2",stat="momentary"}"#)
                || metrics.contains(#"tandem_loudness_lufs{channels="in_1+in_2",engine="recorder",stat="momentary"}"#),
                "\(metrics.prefix(3000))")
        #expect(metrics.contains("tandem_true_peak_dbtp"))

        // A take of 8 s: its report's loudness is the file's.
        let ctl = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port",
                                           "\(control)", "record", "start"])
        #expect(ctl.code == 0, "\(ctl.output)")
        #expect(tandem.process.wait(timeout: 30) == 0, "\(tandem.output)")
        let reportPath = try #require(TakeCheck.reports(in: dir.path).first)
        let report = try TakeReport.read(from: reportPath)
        let loudness = try #require(report.loudness?.first, "no loudness in \(reportPath)")
        #expect(loudness.channels == ["in_1", "in_2"])
        #expect(loudness.momentary == nil, "a report holds the whole, not the current values")
        // Live equals offline: `tandem loudness` of the take's file reads what the report holds.
        let file = try #require(report.chunks.first?.files.first)
        let measured = try TestEnvironment.run([TestEnvironment.product("tandem"), "loudness", "--json", file])
        #expect(measured.code == 0, "\(measured.output)")
        let list = try JSONSerialization.jsonObject(with: Data(measured.output.utf8)) as? [[String: Any]]
        let offline = try #require(list?.first, "\(measured.output)")
        print("measured: take report I \(loudness.integrated ?? .nan) LRA \(loudness.range ?? .nan) TP \(loudness.truePeak ?? .nan); "
              + "tandem loudness of its file I \(offline["integrated"] ?? "-") LRA \(offline["range"] ?? "-") TP \(offline["truePeak"] ?? "-")")
        for (key, ours) in [("integrated", loudness.integrated), ("range", loudness.range), ("truePeak", loudness.truePeak),
                            ("momentaryMax", loudness.momentaryMax), ("shortTermMax", loudness.shortTermMax)] {
            let theirs = try #require(offline[key] as? Double, "\(key)")
            #expect(abs((ours ?? .nan) - theirs) <= 0.01, "\(key): report \(ours ?? .nan), file \(theirs)")
        }
        // The source's own figures: two levels 10 dB apart, each half the time.
        #expect((loudness.integrated ?? 0) > -27 && (loudness.integrated ?? 0) < -24, "\(loudness)")
        #expect(abs((loudness.truePeak ?? 0) + 23) < 0.3, "\(loudness)")
    }
}
