@testable import Coordinator
import Foundation
import Presets
import Testing

/// Scenes recalled by their `at` times (issue 48), through the session's own loop turn (`poll`) on a fake clock,
/// without a JACK server: each at its second, the later-listed of two due at once in force after, a jump of the clock
/// recalling each scene due in it once, a clock set back recalling nothing at once.
@Suite struct SceneTriggerTests {
    static func recalls(_ s: Session) -> [String] {
        s.drainEvents().compactMap {
            if case .sceneRecalled(let name, _, _, _, _, let source) = $0 { return "\(name) \(source)" }
            return nil
        }
    }

    static func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    static func scene(_ name: String, _ at: [String]?) -> Scene {
        var s = Scene(name: name)
        s.at = at
        return s
    }

    @Test func scenesRecallAtTheirTimesThroughThePoll() {
        let clock = FakeClock(Self.utc("2026-11-23T18:29:58Z"))   // a Monday
        let session = Session(environment: SessionEnvironment(clock: clock.session))
        session.sceneTriggers.zone = TimeZone(identifier: "UTC")!
        session.setScenes([Self.scene("a", ["Mon-Fri 18:30"]), Self.scene("b", ["daily 18:30"]),
                           Self.scene("c", ["daily 18:31", "Sat 09:00"]), Self.scene("plain", nil)])
        _ = session.poll()
        #expect(Self.recalls(session) == [])
        clock.advance(1.98)                                  // 18:29:59.98
        _ = session.poll()
        #expect(Self.recalls(session) == [])
        clock.advance(0.02)                                  // 18:30:00: both, in the preset's order
        _ = session.poll()
        #expect(Self.recalls(session) == ["a schedule", "b schedule"])
        #expect(session.sceneState.current == "b")
        clock.advance(0.5)
        _ = session.poll()
        #expect(Self.recalls(session) == [])
        clock.advance(3 * 86_400)                            // Thursday 18:30:00.5: each scene due in the jump once,
        _ = session.poll()                                   // ordered by its last time (c's was Wednesday 18:31)
        #expect(Self.recalls(session) == ["c schedule", "a schedule", "b schedule"])
        #expect(session.sceneState.current == "b")
        clock.advance(-3600)                                 // set back an hour: nothing now
        _ = session.poll()
        #expect(Self.recalls(session) == [])
        clock.advance(3600)                                  // 18:30:00.5 again: passed again, so again
        _ = session.poll()
        #expect(Self.recalls(session) == ["a schedule", "b schedule"])
        clock.advance(60)
        _ = session.poll()
        #expect(Self.recalls(session) == ["c schedule"])
        // A scene given times at run time (a preset applied) is looked up from then on.
        session.setScenes([Self.scene("late", ["daily 18:32"])])
        clock.advance(59)
        _ = session.poll()
        #expect(Self.recalls(session) == [])
        clock.advance(1)
        _ = session.poll()
        #expect(Self.recalls(session) == ["late schedule"])
    }
}
