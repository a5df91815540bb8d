@testable import Coordinator
import Foundation
import Presets
import Synchronization
@testable import Takes
import Testing
@testable import Engine

/// A clock a test moves by hand.
final class FakeClock: Sendable {
    private let time: Mutex<Date>
    init(_ start: Date) { time = Mutex(start) }
    var now: Date { time.withLock { $0 } }
    func advance(_ seconds: Double) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
    /// A session clock reading this one.
    var session: SessionClock { SessionClock(source: { [self] in now }) }
}

/// The session's decisions as values, on a fake clock and without a JACK server: server loss and retry, stop and
/// start times and the end of a playback, stalls, and when plugin state is saved. The session carries them out on
/// the engines; these tests pin the decisions themselves.
@Suite struct SessionPolicyTests {
    /// 2026-11-27 10:00:00 local time.
    static let t0: Date = {
        var c = DateComponents()
        (c.year, c.month, c.day, c.hour) = (2026, 11, 27, 10)
        return Calendar.current.date(from: c)!
    }()

    // MARK: Server loss and retry

    @Test func aLostServerIsLookedForAgainBackingOffTo400ms() {
        let clock = FakeClock(Self.t0)
        var watch = ServerWatch()
        let r1 = watch.lost(at: clock.now, policy: .resume)
        #expect(r1)
        #expect(watch.waiting && watch.lostAt == Self.t0)
        #expect(watch.probeDue(at: clock.now))
        // Each look that finds no server waits twice as long as the last, up to 400 ms.
        for wait in [0.1, 0.2, 0.4, 0.4, 0.4, 0.4] {
            watch.notThere(at: clock.now)
            #expect(!watch.probeDue(at: clock.now.addingTimeInterval(wait - 0.001)))
            clock.advance(wait)
            #expect(watch.probeDue(at: clock.now))
        }
        watch.back()
        #expect(!watch.waiting && !watch.probeDue(at: clock.now))
    }

    @Test func aServerLossEndsTheSessionWhenThePolicySaysStop() {
        var watch = ServerWatch()
        let waits = watch.lost(at: Self.t0, policy: .stop)
        #expect(!waits)
        #expect(!watch.waiting && watch.lostAt == Self.t0)
        #expect(!watch.probeDue(at: Self.t0.addingTimeInterval(60)))
    }

    @Test func aFailedRestoreWaitsHalfASecondAndALossStartsTheBackoffAfresh() {
        var watch = ServerWatch()
        _ = watch.lost(at: Self.t0, policy: .resume)
        for i in 0..<5 { watch.notThere(at: Self.t0.addingTimeInterval(Double(i))) }
        watch.back()
        watch.restoreFailed(at: Self.t0.addingTimeInterval(10))
        #expect(watch.waiting)
        #expect(!watch.probeDue(at: Self.t0.addingTimeInterval(10.49)))
        #expect(watch.probeDue(at: Self.t0.addingTimeInterval(10.5)))
        // A new loss: 0.1 s again, not the 0.4 s the last loss had reached.
        _ = watch.lost(at: Self.t0.addingTimeInterval(20), policy: .resume)
        watch.notThere(at: Self.t0.addingTimeInterval(20))
        #expect(!watch.probeDue(at: Self.t0.addingTimeInterval(20.09)))
        #expect(watch.probeDue(at: Self.t0.addingTimeInterval(20.1)))
    }

    // MARK: Stop and start times, the end of a playback

    @Test func aStopTimeIsDueOnceAtItsMomentTodayOrTomorrow() {
        let clock = FakeClock(Self.t0)
        var table = Timetable()
        table.stop(at: "10:30", after: clock.now)
        #expect(table.stopAt == Self.t0.addingTimeInterval(1800))
        clock.advance(1799)
        let r2 = table.due(at: clock.now, real: clock.now, playerCycles: nil)
        #expect(r2.isEmpty)
        clock.advance(1)
        let r3 = table.due(at: clock.now, real: clock.now, playerCycles: nil)
        #expect(r3 == [.stopTime])
        let r4 = table.due(at: clock.now, real: clock.now, playerCycles: nil)
        #expect(r4.isEmpty)
        // A time already past today is tomorrow's.
        table.stop(at: "09:00", after: clock.now)
        #expect(table.stopAt == Self.t0.addingTimeInterval(23 * 3600))
        // Not a time of day: nothing is set or changed.
        table.stop(at: "25:00", after: clock.now)
        table.stop(at: nil, after: clock.now)
        #expect(table.stopAt == Self.t0.addingTimeInterval(23 * 3600))
    }

    @Test func aCuedPlayerIsStartedAheadOnTheFrameOfItsMomentAndOnlyWithAPlayer() throws {
        let clock = FakeClock(Self.t0)
        var table = Timetable()
        let set = table.startPlayer(at: "10:00:05", after: clock.now)
        let notSet = table.startPlayer(at: "half past ten", after: clock.now)
        #expect(set && !notSet)
        #expect(!table.isEmpty)
        clock.advance(4.85)
        let r5 = table.due(at: clock.now, real: clock.now, playerCycles: 10)
        #expect(r5.isEmpty)
        clock.advance(0.07)
        // No player yet: the start waits for one.
        let r6 = table.due(at: clock.now, real: clock.now, playerCycles: nil)
        #expect(r6.isEmpty)
        let due = table.due(at: clock.now, real: clock.now, playerCycles: 10)
        guard case .startPlayer(let ahead) = try #require(due.first) else { Issue.record("\(due)"); return }
        #expect(abs(ahead - 0.08) < 1e-6)
        #expect(table.isEmpty)
        // Cancelled by a play command: never due.
        _ = table.startPlayer(at: "11:00", after: clock.now)
        table.cancelPlayerStart()
        clock.advance(7200)
        let r7 = table.due(at: clock.now, real: clock.now, playerCycles: 10)
        #expect(r7.isEmpty)
    }

    @Test func aPlayedOutQueueEndsAfterItsRingOutCyclesOrItsDeadline() {
        var table = Timetable()
        // 4,800 frames of latency and tail at period 256: 19 cycles, then the two of the graph run.
        table.queuePlayedOut(cycles: 1000, period: 256, rate: 48_000, ringOut: 4_800, at: Self.t0)
        #expect(table.playbackEnd?.cycle == 1021 && table.playbackEnd?.ringOut == 4_800)
        let r8 = table.due(at: Self.t0, real: Self.t0.addingTimeInterval(0.5), playerCycles: 1020)
        #expect(r8.isEmpty)
        let r9 = table.due(at: Self.t0, real: Self.t0.addingTimeInterval(0.5), playerCycles: 1021)
        #expect(r9 == [.playbackEnded])
        // Cycles that stop (the server stalls) end it by the deadline: a second plus the ring-out.
        let r10 = table.due(at: Self.t0, real: Self.t0.addingTimeInterval(1.09), playerCycles: 1000)
        #expect(r10.isEmpty)
        let r11 = table.due(at: Self.t0, real: Self.t0.addingTimeInterval(1.1), playerCycles: 1000)
        #expect(r11 == [.playbackEnded])
        // Hostile numbers from a broken client: no trap.
        table.queuePlayedOut(cycles: 0, period: 0, rate: -1, ringOut: -5, at: Self.t0)
        #expect(table.playbackEnd?.cycle == 2)
    }

    @Test func aVirtualWallClockMovesTimesOfDayButNotDurations() {
        let real = FakeClock(Self.t0)
        let clock = SessionClock(origin: Self.t0.addingTimeInterval(-3600), scale: 600, source: { real.now })
        real.advance(1)
        #expect(clock.real() == Self.t0.addingTimeInterval(1))
        #expect(clock.now() == Self.t0.addingTimeInterval(-3600 + 600))
        #expect(SessionClock.from(environment: ["TANDEM_TEST_CLOCK": "2026-11-23T09:20:00Z*600"]).scale == 600)
        for bad in ["2026-11-23T09:20:00Z*nan", "2026-11-23T09:20:00Z*-4", "2026-11-23T09:20:00Z*1e9"] {
            #expect(SessionClock.from(environment: ["TANDEM_TEST_CLOCK": bad]).scale == 1)
        }
        #expect(SessionClock.from(environment: ["TANDEM_TEST_CLOCK": "yesterday"]).origin == nil)
    }

    // MARK: Stalls

    @Test func cyclesThatStopForMoreThan750msAreAStallAndTheirReturnIsTimed() {
        let clock = FakeClock(Self.t0)
        var watch = StallWatch()
        let r12 = watch.look(cycles: 10, frame: 2560, period: 256, at: clock.now)
        #expect(r12.isEmpty)
        clock.advance(0.75)
        let r13 = watch.look(cycles: 10, frame: 2560, period: 256, at: clock.now)
        #expect(r13.isEmpty)
        clock.advance(0.01)
        let r14 = watch.look(cycles: 10, frame: 2560, period: 256, at: clock.now)
        #expect(r14.count == 1)
        if case .stopped(let since, let seconds) = r14.first { #expect(since == Self.t0 && abs(seconds - 0.76) < 1e-6) }
        #expect(watch.aroundAStall(clock.now))
        // Said once, however long it lasts.
        clock.advance(10)
        let r15 = watch.look(cycles: 10, frame: 2560, period: 256, at: clock.now)
        #expect(r15.isEmpty)
        let changes = watch.look(cycles: 11, frame: 2816, period: 256, at: clock.now)
        #expect(changes.count == 1)
        if case .back(let since, let seconds) = changes.first {
            #expect(since == Self.t0 && abs(seconds - 10.76) < 1e-6)
        } else {
            Issue.record("\(changes)")
        }
        // Around a stall for two seconds after it (a NetJACK2 slave's connections come back).
        clock.advance(1.9)
        #expect(watch.aroundAStall(clock.now))
        clock.advance(0.2)
        #expect(!watch.aroundAStall(clock.now))
    }

    @Test func aRecorderWhoseCyclesStopWhileTheServersRunIsHeldUpNotStalled() {
        let clock = FakeClock(Self.t0)
        var watch = StallWatch()
        _ = watch.look(cycles: 5, frame: 1000, period: 256, at: clock.now)
        clock.advance(0.8)
        let r16 = watch.look(cycles: 5, frame: 1000 + 3 * 256, period: 256, at: clock.now)
        #expect(r16.count == 1)
        if case .heldUp(let seconds) = r16.first { #expect(abs(seconds - 0.8) < 1e-6) } else { Issue.record("\(r16)") }
        #expect(!watch.aroundAStall(clock.now))
        clock.advance(0.2)
        let r17 = watch.look(cycles: 9, frame: 1000 + 4 * 256, period: 256, at: clock.now)
        #expect(r17.count == 1)
        if case .runsAgain(let seconds) = r17.first { #expect(abs(seconds - 1.0) < 1e-6) } else { Issue.record("\(r17)") }
        // A frame time that wrapped around is no hold-up: a stall.
        clock.advance(0.8)
        let r18 = watch.look(cycles: 9, frame: 1000 &- 256, period: 0, at: clock.now)
        #expect(r18.count == 1)
        #expect(watch.aroundAStall(clock.now))
    }

    // MARK: Plugin saving

    @Test func pluginStateIsSavedAfterTwoCyclesAndAtMostOnceASecond() {
        let clock = FakeClock(Self.t0)
        var keeping = PluginKeeping()
        final class C {}
        let id = ObjectIdentifier(C.self)
        func look(_ engine: ChainEngine, edits: Int, cycles: Int) -> PluginKeeping.Chain {
            PluginKeeping.Chain(engine: engine, chain: id, dirty: true, edits: edits, cycles: cycles)
        }
        let r19 = keeping.look([look(.recorder, edits: 1, cycles: 10)], at: clock.now)
        #expect(r19.isEmpty)
        clock.advance(0.02)
        let r20 = keeping.look([look(.recorder, edits: 1, cycles: 12)], at: clock.now)
        #expect(r20 == [.recorder])
        // Another change settles 40 ms later: it waits for the second to pass.
        let r21 = keeping.look([look(.player, edits: 1, cycles: 3)], at: clock.now)
        #expect(r21.isEmpty)
        clock.advance(0.04)
        let r22 = keeping.look([look(.player, edits: 1, cycles: 5)], at: clock.now)
        #expect(r22.isEmpty)
        clock.advance(0.96)
        let r23 = keeping.look([look(.player, edits: 1, cycles: 6)], at: clock.now)
        #expect(r23 == [.player])
        // A chain that is no longer dirty loses its mark.
        _ = keeping.look([PluginKeeping.Chain(engine: .player, chain: id, dirty: false, edits: 1, cycles: 7)], at: clock.now)
        #expect(keeping.marks.isEmpty)
    }
}

/// An isolated rack's process as its supervisor judges it, on a fake clock: hangs, freezes and the restart schedule.
@Suite struct RackWatchTests {
    static let t0 = Date(timeIntervalSinceReferenceDate: 800_000_000)

    /// The seconds of a verdict of `kind` ("hung", "starting", "frozen"), or nil.
    static func seconds(_ v: RackWatch.Verdict?, _ kind: String) -> Double? {
        switch v {
        case .hung(let s)? where kind == "hung": return s
        case .hungStarting(let s)? where kind == "starting": return s
        case .frozen(let s)? where kind == "frozen": return s
        default: return nil
        }
    }

    @Test func aCountThatStopsIsAHangAfterItsTimeAndBeforeReadyAfterTheStartTime() {
        var watch = RackWatch(hangSeconds: 6, startSeconds: 10, now: Self.t0)
        // Not ready: 10 s from the start.
        let early = watch.look(stopped: false, ready: false, at: Self.t0.addingTimeInterval(9.9))
        let starting = watch.look(stopped: false, ready: false, at: Self.t0.addingTimeInterval(10.1))
        #expect(early == nil)
        #expect(Self.seconds(starting, "starting").map { abs($0 - 10.1) < 1e-6 } == true)
        // Ready, and the count moved at 20 s: 6 s from then.
        watch.moved(at: Self.t0.addingTimeInterval(20))
        let ok = watch.look(stopped: false, ready: true, at: Self.t0.addingTimeInterval(25.9))
        let hung = watch.look(stopped: false, ready: true, at: Self.t0.addingTimeInterval(26.1))
        #expect(ok == nil)
        #expect(Self.seconds(hung, "hung").map { abs($0 - 6.1) < 1e-6 } == true)
    }

    @Test func aStoppedProcessIsFrozenAfterATenthOfASecond() {
        var watch = RackWatch(hangSeconds: 6, startSeconds: 10, now: Self.t0)
        let first = watch.look(stopped: true, ready: true, at: Self.t0)
        let half = watch.look(stopped: true, ready: true, at: Self.t0.addingTimeInterval(0.05))
        let frozen = watch.look(stopped: true, ready: true, at: Self.t0.addingTimeInterval(0.1))
        #expect(first == nil && half == nil)
        #expect(Self.seconds(frozen, "frozen").map { abs($0 - 0.1) < 1e-6 } == true)
        // Running again before the tenth: the time starts afresh at the next stop.
        var again = RackWatch(hangSeconds: 6, startSeconds: 10, now: Self.t0)
        _ = again.look(stopped: true, ready: true, at: Self.t0)
        _ = again.look(stopped: false, ready: true, at: Self.t0.addingTimeInterval(0.05))
        let afresh = again.look(stopped: true, ready: true, at: Self.t0.addingTimeInterval(0.12))
        #expect(afresh == nil)
    }

    @Test func aProcessThatKeepsGoingDownWaitsFiveSecondsAndARefusalThirty() {
        var watch = RackWatch(hangSeconds: 6, startSeconds: 10, now: Self.t0)
        var waits: [Double] = []
        for i in 0..<7 {
            let down = Self.t0.addingTimeInterval(Double(i))
            watch.wentDown(refused: false, at: down)
            let at = watch.restartAt ?? .distantFuture
            waits.append(at.timeIntervalSince(down))
            let due = watch.restartDue(at: at)
            let twice = watch.restartDue(at: at)
            #expect(due && !twice, "a restart is taken once")
        }
        #expect(waits == [0, 0, 0, 0, 0, 5, 5])
        // A minute later the count starts afresh.
        watch.wentDown(refused: false, at: Self.t0.addingTimeInterval(100))
        #expect(watch.restartAt == Self.t0.addingTimeInterval(100))
        _ = watch.restartDue(at: Self.t0.addingTimeInterval(100))
        watch.wentDown(refused: true, at: Self.t0.addingTimeInterval(200))
        let tooSoon = watch.restartDue(at: Self.t0.addingTimeInterval(229.9))
        let due = watch.restartDue(at: Self.t0.addingTimeInterval(230))
        #expect(!tooSoon && due)
        watch.startFailed(at: Self.t0.addingTimeInterval(300))
        #expect(watch.restartAt == Self.t0.addingTimeInterval(302))
        watch.stop()
        #expect(!watch.restartPending)
    }
}

/// MIDI onto the control maps as a value (`MapState.route`), without a server: which maps a message fires, with
/// what value, which count as a press, and what a learn takes.
@Suite struct MapRoutingTests {
    static func map(_ text: String) throws -> ControlMap {
        switch ControlMap.parse(text, defaultEngine: "fx") {
        case .success(let m): return m
        case .failure(let e): throw e
        }
    }

    @Test func aMessageFiresTheMapsOfItsKindChannelAndRack() throws {
        let maps = [try Self.map("cc 1 7 -> amp:gain -40..0 linear"), try Self.map("cc 7 -> amp:gain"),
                    try Self.map("note 60 -> amp bypass"), try Self.map("bend -> amp:gain"),
                    try Self.map("program -> amp presets")]
        var state = MapState()
        // CC 7 on channel 1: the first two maps. On channel 2: the second only.
        let r1 = state.route([0xB0, 7, 127], rack: "fx", again: false, maps: maps)
        let r2 = state.route([0xB1, 7, 0], rack: "fx", again: false, maps: maps)
        #expect(r1.hits.map(\.index) == [0, 1] && r1.hits[0].x == 1)
        #expect(r2.hits.map(\.index) == [1] && r2.hits[0].x == 0)
        // A note-on is a press with its velocity; pitch bend 14 bits; a program change gives its number.
        let note = state.route([0x90, 60, 64], rack: "fx", again: false, maps: maps)
        let bend = state.route([0xE0, 0x7F, 0x7F], rack: "fx", again: false, maps: maps)
        let program = state.route([0xC0, 5], rack: "fx", again: false, maps: maps)
        #expect(note.hits.map(\.index) == [2] && note.hits[0].press && !note.hits[0].isCC)
        #expect(bend.hits.map(\.index) == [3] && bend.hits[0].x == 1)
        #expect(program.hits.map(\.index) == [4] && program.hits[0].program == 5)
        // Short or unknown messages fire nothing.
        let short = state.route([0xB0], rack: "fx", again: false, maps: maps)
        let clock = state.route([0xF8, 0], rack: "fx", again: false, maps: maps)
        #expect(short.hits.isEmpty && clock.hits.isEmpty)
    }

    @Test func aCCIsAPressOnlyWhenItRisesTo64() throws {
        let maps = [try Self.map("cc 64 -> amp toggle")]
        var state = MapState()
        var presses: [Bool] = []
        for value: UInt8 in [0, 127, 127, 100, 10, 64, 63, 127] {
            presses += state.route([0xB0, 64, value], rack: "fx", again: false, maps: maps).hits.map(\.press)
        }
        #expect(presses == [false, true, false, false, false, true, false, true])
    }

    @Test func mapsOfAnyRackHearAMessageOnceAndALearnTakesTheNextCC() throws {
        var bound = try Self.map("cc 7 -> amp:gain")
        bound.rack = "b"
        let maps = [try Self.map("cc 7 -> amp:gain"), bound]
        var state = MapState()
        // The same message heard again from rack b: only b's own map fires.
        let first = state.route([0xB0, 7, 1], rack: "a", again: false, maps: maps)
        let again = state.route([0xB0, 7, 1], rack: "b", again: true, maps: maps)
        #expect(first.hits.map(\.index) == [0] && again.hits.map(\.index) == [1])
        // A learn waits for a CC (a note does not complete it), binds its number, channel and rack, and fires at once.
        state.learning = try Self.map("cc 1 -> amp:gain")
        let noteOn = state.route([0x90, 60, 100], rack: "a", again: false, maps: [])
        #expect(noteOn.learned == nil && state.learning != nil)
        let cc = state.route([0xB3, 21, 90], rack: "a", again: false, maps: [])
        #expect(cc.learned?.channel == 4 && cc.learned?.rack == "a" && state.learning == nil)
        #expect(cc.learned.map { "\($0.source)" } == "\(ControlMap.Source.cc(21))")
        #expect(cc.hits.map(\.index) == [0])
    }
}

/// What an isolated rack's process's end was, by its exit code (issue 43, item F): exit 3, its JACK server gone, is
/// no crash (it was "crashed: exited with code 3" in events, take reports and the crash count).
@Suite struct RackExitTests {
    @Test func exitCodesAreTold() {
        #expect(RackSupervisor.incident(exitCode: 3, ready: true, refusal: { "" }) == .serverLost)
        #expect(RackSupervisor.incident(exitCode: 3, ready: false, refusal: { "" }) == .serverLost)
        #expect(RackSupervisor.incident(exitCode: 2, ready: false, refusal: { "taken" }) == .refused("taken"))
        #expect(RackSupervisor.incident(exitCode: 2, ready: true, refusal: { "" }) == .crashed("exited with code 2"))
        #expect(RackSupervisor.incident(exitCode: 1, ready: true, refusal: { "" }) == .crashed("exited with code 1"))
        #expect(RackSupervisor.incident(exitCode: 139, ready: true, refusal: { "" })
                == .crashed("killed by signal 11 (SIGSEGV)"))
    }
}
