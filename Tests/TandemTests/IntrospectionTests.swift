import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// A control surface that knows only the control port: it lists the engines, every control of every plugin, sets
/// one, saves the running setup as a preset, and applies that file again with no change to the graph.
@Suite(.serialized) struct IntrospectionTests {
    @Test func aScriptThatKnowsOnlyThePortListsAndSetsEveryControlAndSavesTheSetup() throws {
        let server = try TestEnvironment.server("introspect")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("introspect")
        let port = 32000 + Int(getpid() % 20000)
        let preset = dir.appendingPathComponent("fx.toml").path
        try """
            [session]
            name = "fx"
            directory = "\(dir.path)"
            control_port = \(port)
            [recorder]
            channels = 2
            start = "armed"
            [[recorder.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/amp"
            name = "level"
            controls = { gain = -6 }
            [[recorder.plugins]]
            uri = "http://plugin.org.uk/swh-plugins/highpass_iir"
            [[recorder.plugins]]
            uri = "http://gareus.org/oss/lv2/balance"
            name = "bal"
            [[connect]]
            from = "system:capture_*"
            to = "tandem-rec:in_*"
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let tandem = try TandemProcess(["run", "--no-view", preset], server: server, log: dir.appendingPathComponent("run.log").path)
        defer { tandem.process.stop(SIGINT) }
        #expect(tandem.waitFor("control protocol listening") && tandem.waitFor("connected system:capture_2"), "\(tandem.output)")
        func ctl(_ words: String...) throws -> (code: Int32, output: String) {
            try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)"] + words, timeout: 20)
        }
        func json(_ r: (code: Int32, output: String)) throws -> Any {
            let text = r.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(r.code == 0 && text.hasPrefix("ok: "), "\(r.output)")
            return try JSONSerialization.jsonObject(with: Data(text.dropFirst(4).utf8))
        }

        let engines = try #require(try json(try ctl("engines")) as? [[String: Any]])
        #expect(engines.count == 1 && engines[0]["engine"] as? String == "recorder")
        let ports = try #require(engines[0]["ports"] as? [[String: Any]])
        #expect(ports.map { $0["name"] as? String } == ["tandem-rec:in_1", "tandem-rec:in_2"])
        #expect(ports[0]["connections"] as? [String] == ["system:capture_1"])

        let plugins = try #require(try json(try ctl("plugin", "list")) as? [[String: Any]])
        #expect(plugins.map { $0["name"] as? String } == ["level", "highpass_iir", "bal"])
        var listed = 0
        for plugin in plugins {
            let controls = try #require(plugin["controls"] as? [[String: Any]])
            #expect(!controls.isEmpty)
            for c in controls {
                #expect(c["symbol"] is String && c["name"] is String && c["value"] != nil, "\(c)")
                listed += 1
            }
        }
        let gain = try #require((plugins[0]["controls"] as? [[String: Any]])?.first { $0["symbol"] as? String == "gain" })
        #expect((gain["value"] as? Double).map { abs($0 + 6) < 1e-6 } == true && gain["minimum"] != nil && gain["maximum"] != nil)

        // Units and scale points, as the plugin's data gives them (x42 balance: trim in dB, a mode with three names).
        let balance = try #require(plugins.last?["controls"] as? [[String: Any]])
        let trim = try #require(balance.first { $0["symbol"] as? String == "trim" })
        #expect(trim["unit"] as? String == "db" && trim["unitSymbol"] as? String == "dB", "\(trim)")
        let mode = try #require(balance.first { $0["symbol"] as? String == "unitygain" })
        let points = try #require(mode["scalePoints"] as? [[String: Any]])
        #expect(points.map { $0["label"] as? String } == ["Balance", "Unity Gain - Equal Amplitude", "Seesaw - Equal Power"], "\(mode)")
        #expect(points.map { $0["value"] as? Double } == [0, 1, 2])
        #expect((gain["scalePoints"] as? [Any])?.isEmpty == true && gain["unit"] == nil, "\(gain)")

        #expect(try ctl("plugin", "set", "recorder", "level", "gain", "-12").code == 0)
        let after = try #require(try json(try ctl("plugin", "list", "recorder")) as? [[String: Any]])
        let gainNow = (after[0]["controls"] as? [[String: Any]])?.first { $0["symbol"] as? String == "gain" }?["value"] as? Double
        #expect(gainNow.map { abs($0 + 12) < 1e-6 } == true)

        let saved = try ctl("preset", "save", "snapshot")
        #expect(saved.code == 0 && saved.output.contains("snapshot.toml"), "\(saved.output)")
        let text = try String(contentsOfFile: dir.appendingPathComponent("snapshot.toml").path, encoding: .utf8)
        #expect(text.contains("gain = -12.0") && text.contains("[[recorder.plugins]]"), "\(text)")
        #expect(try ctl("preset", "save", "snapshot").code == 2, "never over an existing file")

        let applied = try ctl("preset", "apply", "snapshot.toml")
        #expect(applied.code == 0 && applied.output.contains("clients +0/-0, ports +0, connections +0/-0"), "\(applied.output)")
        #expect(try ctl("plugin", "preset", "recorder", "level", "urn:nope").code == 2)
        print("introspection: \(listed) controls of \(plugins.count) plugins listed")
    }
}
