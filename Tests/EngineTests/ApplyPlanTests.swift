@testable import Coordinator
import Foundation
import Presets
@testable import Takes
import Testing
import TestSupport
@testable import Engine

/// Applying a preset as a pure plan: what opens, what changes in place, what closes and in which order, from what
/// runs and what is wanted, without a JACK server (Session+Apply carries the plan out).
@Suite struct ApplyPlanTests {
    static let amp = "http://lv2plug.in/plugins/eg-amp"
    static let wav: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("apply-plan-\(getpid()).wav").path
        try? TestEnvironment.writeWAV([0, 0.5, 0], channels: 1, path: path)
        return path
    }()

    func preset(_ text: String, server: String = "plan") throws -> Preset {
        let (p, problems) = PresetLoader.parse("[session]\nserver = \"\(server)\"\ndirectory = \"/tmp\"\n" + text,
                                               file: "plan.toml", baseDirectory: "/tmp")
        try #require(problems.isEmpty, "\(problems)")
        return try #require(p)
    }

    /// The plan from `current` to `wanted`, with the engines' configurations as the session builds them.
    func plan(_ current: ApplyPlan.Current, _ wanted: Preset) -> ApplyPlan {
        ApplyPlan(current, wanted: wanted,
                  recorder: wanted.recorder.map { RecorderConfig(section: $0, session: wanted.session) },
                  player: wanted.player.map { PlayerConfig(section: $0, session: wanted.session) })
    }

    /// What runs once `preset` has been applied in full.
    func running(_ p: Preset) -> ApplyPlan.Current {
        var c = ApplyPlan.Current(server: .some(p.session.server))
        c.recorder = p.recorder.map { RecorderConfig(section: $0, session: p.session) }
        c.player = p.player.map { PlayerConfig(section: $0, session: p.session) }
        for r in p.racks {
            if Session.isolates(r, in: p) {
                c.isolated[r.name] = (r, Session.mapsRunningIn(r, p.maps))
            } else {
                c.racks[r.name] = RackConfig(section: r, session: p.session)
            }
        }
        c.patchClient = p.recorder == nil && p.player == nil && !p.racks.isEmpty
            && p.racks.allSatisfy { Session.isolates($0, in: p) }
        return c
    }

    var full: String {
        """
        [recorder]
        client = "rec"
        channels = 2
        [player]
        client = "play"
        channels = 1
        queue = ["\(Self.wav)"]
        [[rack]]
        name = "fx"
        isolate = false
        [[rack.plugins]]\nuri = "\(Self.amp)"\nname = "amp"
        [[rack]]
        name = "box"
        [[rack.plugins]]\nuri = "\(Self.amp)"\nname = "amp"
        """
    }

    @Test func aFirstApplyOpensEverythingAndASecondChangesNothing() throws {
        let p = try preset(full)
        let first = plan(ApplyPlan.Current(), p)
        #expect(!first.closeAll)
        guard case .open = first.recorder, case .open = first.player else { Issue.record("\(first)"); return }
        // The rack beside a recorder runs in its own process; the other in this one. No patch client: engines watch.
        #expect(first.racks.count == 2)
        guard case .start(let box) = first.racks[1], case .open(let fx) = first.racks[0] else {
            Issue.record("\(first.racks)")
            return
        }
        #expect(fx.name == "fx" && box.name == "box")
        #expect(plan(running(p), p).isEmpty)
    }

    @Test func aNewServerClosesAllAndOpensAllOnIt() throws {
        let p = try preset(full)
        let moved = try preset(full, server: "elsewhere")
        let step = plan(running(p), moved)
        #expect(step.closeAll)
        guard case .open = step.recorder, case .open = step.player else { Issue.record("\(step)"); return }
        #expect(step.racks.count == 2)
    }

    @Test func settingsChangeInPlaceAndClientsOrPortsReopen() throws {
        let p = try preset(full)
        // Recorder: plugins and a format change in place; more channels are new ports.
        let plugins = try preset(full + "\n[[recorder.plugins]]\nuri = \"\(Self.amp)\"\n")
        guard case .update = plan(running(p), plugins).recorder else { Issue.record("plugins"); return }
        let ports = try preset(full.replacingOccurrences(of: "channels = 2", with: "channels = 4"))
        guard case .reopen(let c) = plan(running(p), ports).recorder else { Issue.record("ports"); return }
        #expect(c.ports.count == 4)
        // Player: gain in place; a new client name reopens.
        let gain = try preset(full.replacingOccurrences(of: "client = \"play\"", with: "client = \"play\"\ngain = -6"))
        guard case .update(let g) = plan(running(p), gain).player else { Issue.record("gain"); return }
        #expect(g.gainDB == -6)
        let renamed = try preset(full.replacingOccurrences(of: "client = \"play\"", with: "client = \"play2\""))
        guard case .reopen = plan(running(p), renamed).player else { Issue.record("rename"); return }
        // Gone from the preset: closed, and nothing else moves.
        let noPlayer = try preset(full.replacingOccurrences(of: "[player]\nclient = \"play\"\nchannels = 1\nqueue = [\"\(Self.wav)\"]\n", with: ""))
        let closing = plan(running(p), noPlayer)
        #expect(closing.player == .close && closing.recorder == .keep && closing.racks.isEmpty)
    }

    @Test func racksChangeInPlaceInTheirProcessOrStartAnew() throws {
        let p = try preset(full)
        // A changed gain: the in-process rack changes in place, the isolated one takes it as a document.
        let gain = try preset(full.replacingOccurrences(of: "name = \"fx\"", with: "name = \"fx\"\ngain = -3")
            .replacingOccurrences(of: "name = \"box\"", with: "name = \"box\"\ngain = -3"))
        let g = plan(running(p), gain).racks
        // Processes first (their updates go out before anything opens), then the racks of this process in order.
        #expect(g.map(\.label) == ["update process box", "update fx"])
        guard case .updateProcess(let box, _) = g[0], case .update(let fx) = g[1] else { Issue.record("\(g)"); return }
        #expect(fx.gainDB == -3 && box.gainDB == -3)
        // Ports change: the process starts anew.
        let ports = try preset(full.replacingOccurrences(of: "name = \"box\"", with: "name = \"box\"\ninputs = 4"))
        #expect(plan(running(p), ports).racks.map(\.label) == ["stop box", "start box"])
        // The in-process rack moved into a process of its own.
        let isolated = try preset(full.replacingOccurrences(of: "isolate = false", with: "isolate = true"))
        #expect(plan(running(p), isolated).racks.map(\.label) == ["close fx", "start fx"])
        // Both gone.
        let none = try preset(full.components(separatedBy: "[[rack]]")[0])
        #expect(plan(running(p), none).racks.map(\.label) == ["close fx", "stop box"])
    }

    @Test func isolatedRacksAloneGetThePatchClientBeforeTheyStart() throws {
        let text = """
            [[rack]]
            name = "a"
            isolate = true
            [[rack.plugins]]\nuri = "\(Self.amp)"\nname = "amp"
            [[rack]]
            name = "b"
            isolate = true
            [[rack.plugins]]\nuri = "\(Self.amp)"\nname = "amp"
            """
        let p = try preset(text)
        #expect(plan(ApplyPlan.Current(), p).racks.map(\.label) == ["patch client", "start a", "start b"])
        #expect(plan(running(p), p).isEmpty)
        // With a recorder wanted too, its client watches the graph: no patch client.
        let rec = try preset("[recorder]\nchannels = 1\n" + text)
        #expect(plan(ApplyPlan.Current(), rec).racks.map(\.label) == ["start a", "start b"])
    }

    @Test func aRackWhoseMapsChangedRestartsItsProcess() throws {
        let text = """
            [recorder]
            channels = 1
            [[rack]]
            name = "box"
            [[rack.plugins]]\nuri = "\(Self.amp)"\nname = "amp"
            """
        let p = try preset(text)
        let mapped = try preset(text + """

            [[map]]
            cc = 7
            engine = "box"
            plugin = "amp"
            control = "gain"
            """)
        #expect(plan(running(p), mapped).racks.map(\.label) == ["stop box", "start box"])
    }
}

extension ApplyPlan.RackStep {
    /// A short name of the step, for comparisons.
    var label: String {
        switch self {
        case .close(let n): return "close \(n)"
        case .stop(let n): return "stop \(n)"
        case .updateProcess(let s, _): return "update process \(s.name)"
        case .openPatchClient: return "patch client"
        case .start(let s): return "start \(s.name)"
        case .open(let c): return "open \(c.name)"
        case .update(let c): return "update \(c.name)"
        case .reopen(let c): return "reopen \(c.name)"
        }
    }
}
