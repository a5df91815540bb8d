import Engine
import Foundation
import Presets

/// What the scene triggers remember between loop turns. Control thread.
struct SceneTriggerState {
    /// The wall-clock time the last turn looked up to (nil: none yet; times before the first turn never fire).
    var checkedTo: Date?
    /// Each timed scene's name, its times, and the next moment it is due (nil: never).
    var timed: [(name: String, times: SceneTimes, due: Date?)] = []
    /// Labels of cues that named no scene, told once each until the scenes change.
    var unknownCueLabels: Set<String> = []
    /// The scene book the two above were made for.
    var book = SceneBook()
    /// The zone whose wall clock the times are read in (the system's; a test's own).
    var zone = TimeZone.current
}

// Scenes recalled without a hand (issue 48): at the local times of a scene's `at` (source "schedule"), and when the
// player plays past a cue point labelled `scene NAME` in the file it plays, with `[player] scene_markers = true`
// (source "marker"). Both recall through `recallScene`, like any surface: the take's control log, the event stream and
// a take's markers have them as they have a recall over OSC.
extension Session {
    /// The prefix of a cue label that names a scene: a cue `scene verse` recalls scene `verse` (the label a recall
    /// writes into a running take, so a take played back replays its recalls).
    static let sceneCuePrefix = "scene "

    /// How many of a scene's times a clock's jump is searched through for its last one (a jump further orders the
    /// scene by its time that far in).
    static let maxTimesPerTurn = 1024

    /// Once per loop turn, at wall-clock time `now`: recalls the scenes whose time has come since the last turn and
    /// those the player's cues name. Scenes due in the same turn recall in the order of their last time due, those due
    /// at the same second in the preset's order, so the later-listed one is in force after; a marker's recall comes
    /// after the turn's timed
    /// ones. A wall clock set back looks afresh from the time it shows (a time it passes again recalls again); one
    /// that jumped forward recalls each scene due in the gap once, not once per time it skipped.
    func tickSceneTriggers(now: Date) {
        let book = sceneState.book
        if book != sceneTriggers.book {
            sceneTriggers.book = book
            sceneTriggers.unknownCueLabels = []
            let after = sceneTriggers.checkedTo ?? now
            sceneTriggers.timed = book.scenes.compactMap { s in
                guard let at = s.at, case .success(let times) = SceneTimes.parse(at) else { return nil }
                return (s.name, times, times.next(after: after, in: sceneTriggers.zone))
            }
        }
        if let last = sceneTriggers.checkedTo, now >= last {
            var due: [(at: Date, order: Int, name: String)] = []
            for (i, t) in sceneTriggers.timed.enumerated() {
                guard var at = t.due, at <= now else { continue }
                // Its last time in the gap orders it: the scene due last is the one in force after a jump.
                for _ in 0..<Self.maxTimesPerTurn {
                    guard let n = t.times.next(after: at, in: sceneTriggers.zone), n <= now else { break }
                    at = n
                }
                due.append((at, i, t.name))
                sceneTriggers.timed[i].due = t.times.next(after: now, in: sceneTriggers.zone)
            }
            for d in due.sorted(by: { ($0.at, $0.order) < ($1.at, $1.order) }) {
                _ = recallScene(d.name, context: CommandContext(source: "schedule"))
            }
        } else if sceneTriggers.checkedTo != nil {
            // The wall clock went back: what is due is counted from here.
            for (i, t) in sceneTriggers.timed.enumerated() {
                sceneTriggers.timed[i].due = t.times.next(after: now, in: sceneTriggers.zone)
            }
        }
        sceneTriggers.checkedTo = now
        tickSceneMarkers()
    }

    /// Recalls the scenes the cues the player played since the last turn name (when `[player] scene_markers` is
    /// on; otherwise the cues are passed over). A cue `scene NAME` naming no scene is told once, as a refusal.
    private func tickSceneMarkers() {
        guard let p = player else { return }
        let on = preset?.player?.sceneMarkers == true
        let cues = p.drainCues(wakingAhead: on)
        guard on else { return }
        for cue in cues where cue.label.hasPrefix(Self.sceneCuePrefix) {
            let name = String(cue.label.dropFirst(Self.sceneCuePrefix.count))
            let context = CommandContext(source: "marker", frameTime: cue.frameTime)
            if sceneState.book.scene(named: name) != nil {
                _ = recallScene(name, context: context)
            } else if sceneTriggers.unknownCueLabels.insert(cue.label).inserted {
                events.append(.refused("cue '\(cue.label)' at frame \(cue.frame) of \(cue.path): no scene '\(name)' (scenes: "
                                       + (sceneState.book.isEmpty ? "none" : sceneState.book.names.map { "'\($0)'" }
                                           .joined(separator: ", ")) + ")"))
            }
        }
    }
}
