import Testing
import Foundation
@testable import Presets
import TestSupport

/// A preset run under a session manager: clients and the rules that name them carry `CLIENT_ID/`, and the file
/// written back has the plain names, the folder as ".", and queued files inside it relative.
@Suite struct PresetNSMTests {
    @Test func clientsAndTheirRulesAreRenamedAndBack() throws {
        let dir = TestEnvironment.temporaryDirectory("presetnsm")
        let elsewhere = TestEnvironment.temporaryDirectory("presetnsm-elsewhere").appendingPathComponent("b.wav").path
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("media"), withIntermediateDirectories: true)
        for f in [dir.appendingPathComponent("media/a.wav").path, elsewhere] {
            try TestEnvironment.writeWAV([0, 0], channels: 1, path: f)
        }
        let text = """
            [session]
            name = "s"
            metrics_port = 9952
            [recorder]
            channels = 2
            [player]
            client = "cues"
            queue = ["media/a.wav", "\(elsewhere)"]
            [[connect]]
            from = "system:capture_*"
            to = "tandem-rec:in_*"
            [[connect]]
            from = "cues:out_1"
            to = "system:playback_1"
            [[connect]]
            from = "/^cues:/"
            to = "system:playback_2"
            """
        let (loaded, problems) = PresetLoader.parse(text, file: "nsm.toml", baseDirectory: dir.path)
        #expect(problems.isEmpty, "\(problems)")
        let p = try #require(loaded)
        #expect(p.session.metricsPort == 9952)
        let under = p.underSessionManager(clientID: "Tandem.nABCD", directory: dir.path)
        #expect(under.recorder?.client == "Tandem.nABCD/tandem-rec" && under.player?.client == "Tandem.nABCD/cues")
        #expect(under.connections.map(\.to.description)[0] == "Tandem.nABCD/tandem-rec:in_*")
        #expect(under.connections.map(\.from.description)[1] == "Tandem.nABCD/cues:out_1")
        #expect(under.connections[2].from == .regex("^cues:"), "regex rules are left as written")
        let back = under.outsideSessionManager(clientID: "Tandem.nABCD")
        #expect(back.recorder?.client == "tandem-rec" && back.player?.client == "cues")
        #expect(back.connections == p.connections)
        #expect(back.session.directory == ".")
        #expect(back.player?.queue == ["media/a.wav", elsewhere])
        #expect(back.toml().contains("metrics_port = 9952"))
        // The written file reads back, from its folder, to the running setup.
        let (again, again2) = PresetLoader.parse(back.toml(), file: "again.toml", baseDirectory: dir.path)
        #expect(again2.isEmpty, "\(again2)")
        #expect(again?.player?.queue == p.player?.queue && again?.session.directory == dir.standardizedFileURL.path)
    }
}
