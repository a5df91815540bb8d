import Coordinator
import Takes
import Testing
import Foundation
import Engine
import Jack
import Presets
import SoundFile
import TestSupport

/// The session coordinator against a private server, in process.
@Suite(.serialized) struct SessionTests {
    func preset(_ text: String, server: JackServer, dir: URL) throws -> Preset {
        let full = "[session]\nname = \"s\"\nserver = \"\(server.name)\"\ndirectory = \"\(dir.path)\"\n" + text
        let (p, problems) = PresetLoader.parse(full, file: "test.toml", baseDirectory: dir.path)
        try #require(problems.isEmpty, "\(problems)")
        return p!
    }

    func pollFor(_ session: Session, seconds: Double, until: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            _ = session.poll()
            if until() { return true }
            usleep(20_000)
        }
        return until()
    }

    /// Counts of graph callbacks an outside observer sees.
    func graphCounts(_ c: JackClient) -> [Int] {
        let n = c.notifications
        return [n.count(.portRegistered), n.count(.portUnregistered), n.count(.portConnected),
                n.count(.portDisconnected), n.count(.clientRegistered), n.count(.clientUnregistered)]
    }

    @Test func applyingTheSamePresetTwiceChangesNothingAndALiveChangeKeepsTheTake() throws {
        let server = try TestEnvironment.server("apply2")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("apply2")
        let file = dir.appendingPathComponent("n.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 2), channels: 2, path: file)
        let text = """
            [recorder]
            client = "s-rec"
            channels = 2
            [player]
            client = "s-play"
            channels = 2
            queue = ["\(file)"]
            loop = "item"
            [[connect]]
            from = "s-play:out_*"
            to = "s-rec:in_*"
            """
        let session = Session()
        defer { session.close() }
        let first = try session.apply(try preset(text, server: server, dir: dir))
        #expect(first.clientsOpened == 2 && first.portsRegistered == 4 && first.connected == 2, "\(first)")
        let observer = try TestCapture(name: "observer", server: server.name, channels: 1, seconds: 0.1)
        #expect(pollFor(session, seconds: 3) { session.recorder?.takeStatus != nil })
        usleep(300_000)
        let before = graphCounts(observer.client)

        let second = try session.apply(try preset(text, server: server, dir: dir))
        #expect(second.graphChanges == 0 && second.reconfigured.isEmpty, "\(second)")
        _ = pollFor(session, seconds: 0.5) { false }
        #expect(graphCounts(observer.client) == before, "the observer saw no graph change")

        // A changed preset: gain and file format. Nothing in the graph moves and the running take goes on.
        let take = try #require(session.recorder?.takeStatus)
        let changed = text.replacingOccurrences(of: "loop = \"item\"", with: "loop = \"item\"\ngain = -6")
            .replacingOccurrences(of: "channels = 2\n[player]", with: "channels = 2\nsample = \"int16\"\n[player]")
        let third = try session.apply(try preset(changed, server: server, dir: dir))
        #expect(third.graphChanges == 0 && third.reconfigured == ["recorder", "player"], "\(third)")
        _ = pollFor(session, seconds: 0.5) { false }
        let after = try #require(session.recorder?.takeStatus)
        #expect(after.take == take.take && after.frames > take.frames && after.files == take.files)
        #expect(graphCounts(observer.client) == before)
        // Positive control: the observer does see a real change.
        let other = try JackClient(name: "other", server: server.name)
        _ = try other.registerPort("x", direction: .output)
        #expect(TestEnvironment.waitUntil(timeout: 2) { graphCounts(observer.client) != before })
        other.close()
        observer.close()
    }

    @Test func aRuleConnectsAClientThatArrivesLater() throws {
        let server = try TestEnvironment.server("late")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("late")
        let session = Session()
        defer { session.close() }
        try session.apply(try preset("""
            [recorder]
            client = "s-rec"
            channels = 2
            start = "armed"
            [[connect]]
            from = "late:out_*"
            to = "s-rec:in_*"
            """, server: server, dir: dir))
        _ = pollFor(session, seconds: 2) { false }
        let (late, state) = try LoopState.source(name: "late", server: server.name, channels: 2, samples: [0, 0])
        defer { late.close(); LoopState.free(state) }
        let registered = Date()
        let connected = pollFor(session, seconds: 2) {
            late.connections(of: "late:out_1") == ["s-rec:in_1"] && late.connections(of: "late:out_2") == ["s-rec:in_2"]
        }
        #expect(connected, "connected within 2 s of the ports appearing")
        #expect(Date().timeIntervalSince(registered) < 2)
    }

    @Test(arguments: [DisconnectPolicy.respect, .repair])
    func aManualDisconnectIsRespectedOrRepaired(policy: DisconnectPolicy) throws {
        let server = try TestEnvironment.server("manual")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("manual")
        let (src, state) = try LoopState.source(name: "src", server: server.name, channels: 1, samples: [0])
        defer { src.close(); LoopState.free(state) }
        let session = Session()
        defer { session.close() }
        try session.apply(try preset("""
            [recorder]
            client = "s-rec"
            channels = 1
            start = "armed"
            [[connect]]
            from = "src:out_1"
            to = "s-rec:in_1"
            """.replacingOccurrences(of: "[recorder]", with: "on_manual_disconnect = \"\(policy.rawValue)\"\n[recorder]"),
            server: server, dir: dir))
        #expect(src.connections(of: "src:out_1") == ["s-rec:in_1"])
        _ = pollFor(session, seconds: 0.3) { false }
        try src.disconnect("src:out_1", "s-rec:in_1")
        _ = pollFor(session, seconds: 1) { false }
        let events = session.drainEvents()
        if policy == .respect {
            #expect(src.connections(of: "src:out_1").isEmpty)
            #expect(events.contains { if case .manualDisconnect(_, _, false) = $0 { return true } else { return false } })
        } else {
            #expect(src.connections(of: "src:out_1") == ["s-rec:in_1"])
            #expect(events.contains { if case .manualDisconnect(_, _, true) = $0 { return true } else { return false } })
        }
    }

    @Test func aTakePerTransportRoll() throws {
        let server = try TestEnvironment.server("transport")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("transport")
        let session = Session()
        defer { session.close() }
        try session.apply(try preset("[recorder]\nclient = \"s-rec\"\nchannels = 1\nstart = \"transport\"\n",
                                     server: server, dir: dir))
        let master = try TestCapture(name: "master", server: server.name, channels: 1, seconds: 0.1)
        defer { master.close() }
        var finished: [TakeReport] = []
        for roll in 1...2 {
            master.client.startTransport()
            #expect(pollFor(session, seconds: 3) { session.recorder?.takeStatus?.take == roll }, "take \(roll) on roll")
            _ = pollFor(session, seconds: 0.5) { false }
            master.client.stopTransport()
            #expect(pollFor(session, seconds: 3) {
                for e in session.drainEvents() {
                    if case .recorder(.takeFinished(let r, _)) = e { finished.append(r) }
                }
                return finished.count == roll
            })
        }
        #expect(finished.map(\.take) == [1, 2] && finished.allSatisfy { $0.frames > 10_000 })
    }

    /// Record-while-playing: recorder and player start on the same cycle; the take and the played file line up to
    /// the frame, and the sidecar holds both frame times.
    @Test func recordWhilePlayingLinesUpToTheFrame() throws {
        let server = try TestEnvironment.server("overdub")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("overdub")
        let file = dir.appendingPathComponent("backing.wav").path
        let backing = Signals.noise(frames: 24_000, channels: 2, seed: 77)
        try TestEnvironment.writeWAV(backing, channels: 2, path: file)
        let session = Session()
        try session.apply(try preset("""
            [recorder]
            client = "s-rec"
            channels = 2
            duration = 1
            [player]
            client = "s-play"
            channels = 2
            queue = ["\(file)"]
            start = "with-recorder"
            [[connect]]
            from = "s-play:out_*"
            to = "s-rec:in_*"
            """, server: server, dir: dir))
        var report: TakeReport?
        #expect(pollFor(session, seconds: 5) {
            for e in session.drainEvents() { if case .recorder(.takeFinished(let r, _)) = e { report = r } }
            return report != nil
        })
        session.close()
        let r = try #require(report)
        let playback = try #require(r.playback)
        #expect(playback.startFrameTime == r.startFrameTime)
        let take = try TestEnvironment.readAudio(r.chunks[0].files[0]).samples
        #expect(Array(take.prefix(backing.count)) == backing, "frame 0 of the take is frame 0 of the file")
    }

    /// `with-recorder` beside an armed recorder: nothing is recorded or played until a take is started; then both
    /// start on the same frame. (The player used to start a take at once, overriding `armed`.)
    @Test func withRecorderWaitsForAnArmedRecordersTake() throws {
        let server = try TestEnvironment.server("overdub-armed")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("overdub-armed")
        let file = dir.appendingPathComponent("backing.wav").path
        let backing = Signals.noise(frames: 24_000, channels: 2, seed: 78)
        try TestEnvironment.writeWAV(backing, channels: 2, path: file)
        let session = Session()
        try session.apply(try preset("""
            [recorder]
            client = "s-rec"
            channels = 2
            duration = 1
            start = "armed"
            [player]
            client = "s-play"
            channels = 2
            queue = ["\(file)"]
            start = "with-recorder"
            [[connect]]
            from = "s-play:out_*"
            to = "s-rec:in_*"
            """, server: server, dir: dir))
        var started = false
        _ = pollFor(session, seconds: 1.5) {
            for e in session.drainEvents() { if case .recorder(.takeStarted) = e { started = true } }
            return started
        }
        #expect(!started, "an armed recorder starts no take by itself")
        #expect(session.player?.position.playing == false, "the player waits for the take")
        #expect(session.startTake())
        var report: TakeReport?
        #expect(pollFor(session, seconds: 5) {
            for e in session.drainEvents() { if case .recorder(.takeFinished(let r, _)) = e { report = r } }
            return report != nil
        })
        session.close()
        let r = try #require(report)
        #expect(r.playback?.startFrameTime == r.startFrameTime)
        let take = try TestEnvironment.readAudio(r.chunks[0].files[0]).samples
        #expect(Array(take.prefix(backing.count)) == backing, "frame 0 of the take is frame 0 of the file")
    }
}

@Suite(.serialized) struct PeriodChangeTests {
    /// The server's period changes while a take runs (the process keeps going): the take goes on and stays exact.
    /// A run in which the server had xruns or Tandem counted skipped cycles (a loaded machine, jackd without RT)
    /// proves nothing about the period change and is run again, up to three times.
    @Test func aPeriodChangeDuringATakeKeepsItExact() throws {
        for attempt in 1...3 {
            let (breaks, detail, counted) = try periodChangeRun()
            if breaks == 0 { return }
            #expect(counted && attempt < 3, "continuous across both period changes: \(detail)")
            if !counted { return }
            print("period change run \(attempt): \(detail); the server had xruns or skipped cycles: once more")
        }
    }

    /// One take across 256 → 128 → 512: the number of frames out of sequence, a description, and whether the take
    /// counted xruns or skipped cycles.
    func periodChangeRun() throws -> (breaks: Int, detail: String, counted: Bool) {
        let server = try TestEnvironment.server("period")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("period")
        let ramp = (0..<(6 * 48000)).map { Float($0 + 1) / 8_388_608 }
        let (source, state) = try LoopState.source(name: "src", server: server.name, channels: 1, samples: ramp)
        var c = RecorderConfig()
        c.clientName = "rec"
        c.ports = ["in_1"]
        c.directory = dir.path
        let recorder = try Recorder(config: c, server: server.name)
        try source.connect("src:out_1", "rec:in_1")
        recorder.startTake()
        // Each period runs for 0.8 s of the recorder's own frames (more than 2 s of take in all, as checked below).
        func run(_ seconds: Double) -> Bool {
            let from = recorder.streamPosition
            return TestEnvironment.waitUntil(timeout: seconds + 5) { recorder.streamPosition >= from + Int(seconds * 48000) }
        }
        state.pointee.started.store(1)
        #expect(run(0.8))
        #expect(source.requestBufferSize(128), "the dummy driver accepts a new period")
        #expect(TestEnvironment.waitUntil(timeout: 3) { recorder.client.bufferSize == 128 })
        #expect(run(0.8))
        #expect(source.requestBufferSize(512))
        #expect(TestEnvironment.waitUntil(timeout: 3) { recorder.client.bufferSize == 512 })
        #expect(run(0.8))
        recorder.close()
        source.close()
        LoopState.free(state)
        var report: TakeReport?
        for e in recorder.drainEvents() { if case .takeFinished(let r, _) = e { report = r } }
        let r = try #require(report)
        #expect(r.droppedFrames == 0)
        let audio = try TestEnvironment.readAudio(r.chunks[0].files[0]).samples
        let first = try #require(audio.firstIndex { $0 != 0 })
        #expect(audio.count - first > 2 * 48000)
        let base = Int((audio[first] * 8_388_608).rounded()) - first
        let breaks = (first..<audio.count).filter { Int((audio[$0] * 8_388_608).rounded()) != base + $0 && audio[$0] != 0 }
        let shown = breaks.prefix(3).map { "frame \($0): \(Int((audio[$0] * 8_388_608).rounded()) - base) not \($0)" }
        let missed = r.missedFrames ?? 0
        return (breaks.count, "\(breaks.count) breaks (first sound at \(first)): \(shown); missed \(missed), xruns \(r.xruns)",
                missed > 0 || r.xruns > 0)
    }
}

@Suite(.serialized) struct ServerLossResourceTests {
    static func count(_ dir: String) -> Int { (try? FileManager.default.contentsOfDirectory(atPath: dir).count) ?? -1 }
    /// This process's threads by the name the kernel shows (`/proc/self/task/*/comm`).
    static func threadNames() -> [String: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.reduce(into: [:]) { names, task in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "?"
            names[comm.trimmingCharacters(in: .whitespacesAndNewlines), default: 0] += 1
        }
    }

    /// jackd killed during a take and restarted: no crash, the session comes back, and no thread or file
    /// descriptor is leaked (counted in /proc/self before and after).
    @Test func noLeakedThreadsOrFilesAcrossAServerLoss() throws {
        let name = JackServer.uniqueName("t-leak")
        var server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("leak")
        let audio = dir.appendingPathComponent("a.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 24000, channels: 2), channels: 2, path: audio)
        let (p, problems) = PresetLoader.parse("""
            [session]
            server = "\(name)"
            directory = "\(dir.path)"
            [recorder]
            client = "leak-rec"
            channels = 2
            [player]
            client = "leak-play"
            channels = 2
            queue = ["\(audio)"]
            loop = "item"
            [[connect]]
            from = "leak-play:out_*"
            to = "leak-rec:in_*"
            """, file: "leak.toml", baseDirectory: dir.path)
        try #require(problems.isEmpty, "\(problems)")
        let session = Session()
        defer { session.close() }
        try session.apply(p!)
        func pump(_ seconds: Double, until: () -> Bool = { false }) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                _ = session.poll()
                if until() { return true }
                usleep(20_000)
            }
            return until()
        }
        _ = pump(1)
        let fdsBefore = Self.count("/proc/self/fd"), threadsBefore = Self.count("/proc/self/task")
        // The disk threads carry their names, so ps -L and top -H tell them apart; one of each.
        let namesBefore = Self.threadNames()
        #expect(namesBefore["disk-writer"] == 1 && namesBefore["disk-reader"] == 1, "\(namesBefore)")
        for round in 1...2 {
            server.kill9()
            var lost = false
            #expect(pump(5) {
                lost = lost || session.drainEvents().contains { if case .serverLost = $0 { return true } else { return false } }
                return lost
            }, "round \(round): loss noticed")
            server = try TestEnvironment.server(named: name)
            #expect(pump(5) { session.recorder != nil && session.player != nil && session.recorder!.isRecording },
                    "round \(round): restored with a take running")
            _ = pump(0.5)
        }
        let fdsAfter = Self.count("/proc/self/fd"), threadsAfter = Self.count("/proc/self/task")
        #expect(fdsAfter == fdsBefore, "file descriptors \(fdsBefore) -> \(fdsAfter)")
        #expect(threadsAfter == threadsBefore, "threads \(threadsBefore) -> \(threadsAfter)")
        let namesAfter = Self.threadNames()
        #expect(namesAfter["disk-writer"] == 1 && namesAfter["disk-reader"] == 1, "\(namesAfter)")
    }
}
