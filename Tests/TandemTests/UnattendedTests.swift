import Takes
import Testing
import Foundation
import Control
import Engine
import Jack
import SoundFile
import TestSupport

/// Takes that run themselves (issue 22), as a user runs them: `tandem record` against a private server, fed by real
/// peers. Level-triggered takes, a schedule with hourly clock rotation on a fast virtual clock, OSC markers, and
/// retention on a small tmpfs.
@Suite(.serialized) struct UnattendedTests {
    static let rate = 48_000

    static func port() -> Int { 32_000 + Int(getpid() % 20_000) }

    /// Silence-with-noise, a burst shorter than the attack, and one real burst, played by sndfile-jackplay: exactly
    /// one take, `preroll` frames before the burst's first frame, equal to the source sample for sample, ending
    /// hold + post-roll after the burst's last frame.
    @Test(.enabled(if: TestEnvironment.hasProgram("sndfile-jackplay")))
    func aBurstGivesOneExactTakeWhileQuietNoiseAndAShortBurstGiveNone() throws {
        let server = try TestEnvironment.server("ulevel")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("ulevel")
        let out = dir.appendingPathComponent("takes")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        // 12 s: -70 dBFS noise throughout; 40 ms of -6 dBFS at 5 s (attack is 100 ms); 1 s of -6 dBFS at 7 s.
        let frames = 12 * Self.rate
        let floor = Signals.noise(frames: frames, channels: 1, seed: 22).map { $0 * Float(pow(10, -70.0 / 20)) / 0.5 }
        let short = (5 * Self.rate)..<(5 * Self.rate + 1_920)
        let burst = (7 * Self.rate)..<(8 * Self.rate)
        var samples = floor
        for k in short { samples[k] = k % 2 == 0 ? 0.5 : -0.5 }
        for k in burst { samples[k] = (k * 7919) % 3 == 0 ? -0.5 : 0.5 }
        let sourcePath = dir.appendingPathComponent("source.wav").path
        try TestEnvironment.writeWAV(samples, channels: 1, path: sourcePath)
        let source = try TestEnvironment.readAudio(sourcePath).samples     // as quantized to 24 bits
        #expect(abs(source[burst.lowerBound]) == 0.5 && abs(source[burst.lowerBound - 1]) < 0.001)
        #expect(source.prefix(short.lowerBound).allSatisfy { abs($0) < 0.001 }, "the floor is under -46 dBFS")

        let tandem = try TandemProcess(["record", "--no-view", "-c", "1", "-d", out.path, "--session", "lvl",
                                        "--preroll", "0.5", "--trigger-threshold", "-40", "--trigger-attack", "0.1",
                                        "--trigger-hold", "1", "--postroll", "0.25"],
                                       server: server, log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor("preset applied"), "\(tandem.output)")
        let player = try startJackplay(sourcePath, pattern: "tandem-rec:in_%d", server: server,
                                       log: dir.appendingPathComponent("jackplay.log").path)
        #expect(player.wait(timeout: 30) != nil)
        #expect(tandem.waitFor("take 1 trigger", timeout: 10), "\(tandem.output)")
        usleep(500_000)
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 10) == 0, "\(tandem.output)")
        let reports = TakeCheck.reports(in: out.path)
        #expect(reports.count == 1, "one take: \(reports)")
        let r = try TakeReport.read(from: try #require(reports.first))
        let pre = Self.rate / 2, hold = Self.rate, post = Self.rate / 4
        #expect(r.ended == .trigger && r.trigger?.ended == .quiet)
        #expect(r.trigger?.triggerFrame == pre && r.prerollFrames == pre)
        #expect(r.frames == pre + burst.count + hold + post, "\(r.frames) frames")
        #expect(r.trigger?.lastLoudFrame == pre + burst.count - 1)
        let take = try SoundFileReader(path: r.chunks[0].files[0]).readAll()
        let from = burst.lowerBound - pre
        let expected = (0..<(pre + burst.count + hold + post)).map { from + $0 < source.count ? source[from + $0] : 0 }
        let wrong = zip(take, expected).filter { $0 != $1 }.count
        #expect(take.count == expected.count && wrong == 0, "\(wrong) of \(take.count) samples differ from the source")
        print("level trigger: take of \(r.frames) frames, trigger frame \(r.trigger?.triggerFrame ?? -1), level \(r.trigger?.levelDB ?? 0) dBFS, \(wrong) samples differ")
    }

    /// Five markers sent over OSC during a take rotated every second land within one period of the JACK frame time
    /// read just before each was sent, in the report and as cue points of the chunk that holds them (read back by
    /// libsndfile and by an independent parser). `tandem ctl record mark` adds one too.
    @Test func oscMarkersLandOnTheirFramesAsCuePointsOfTheRightChunk() throws {
        let server = try TestEnvironment.server("umark")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("umark")
        let port = Self.port()
        let tandem = try TandemProcess(["record", "--no-view", "-c", "1", "-d", dir.path, "--session", "mk",
                                        "--rotate", "1", "--connect", "system:capture_1", "--control-port", "\(port)"],
                                       server: server, log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor(" recording: "), "\(tandem.output)")
        #expect(tandem.waitFor("control protocol listening"), "\(tandem.output)")
        let probe = try JackClient(name: "probe", server: server.name)
        let udp = try LoopbackUDP()
        var sent: [UInt32] = []
        for i in 1...5 {
            usleep(380_000)
            sent.append(probe.frameTime)
            udp.send(OSCMessage("/tandem/record/mark", [.string("m\(i)")]).encode(), to: port)
        }
        let ctl = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)", "record",
                                           "mark", "from ctl"], timeout: 10)
        #expect(ctl.code == 0 && ctl.output.contains("marker at"), "\(ctl.output)")
        usleep(300_000)
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 10) == 0, "\(tandem.output)")
        let r = try TakeReport.read(from: try #require(TakeCheck.reports(in: dir.path).first))
        let markers = r.markers ?? []
        #expect(markers.count == 6 && markers.last?.label == "from ctl" && markers.last?.source == "osc", "\(markers)")
        let period = server.period
        var errors: [Int] = []
        for (i, t) in sent.enumerated() {
            guard let m = markers.first(where: { $0.label == "m\(i + 1)" }) else {
                Issue.record("marker m\(i + 1) missing")
                continue
            }
            let expected = Int(Int32(bitPattern: t &- r.startFrameTime))
            errors.append(m.frame - expected)
        }
        #expect(errors.allSatisfy { abs($0) <= period }, "marker frame minus the frame time at sending: \(errors) (period \(period))")
        print("markers: arrival frame minus the sender's frame time: \(errors) frames (period \(period))")
        #expect(r.chunks.count >= 3)
        for (i, c) in r.chunks.enumerated() {
            let want = markers.filter { $0.frame >= c.startFrame && ($0.frame < c.startFrame + c.frames
                                                                     || (i == r.chunks.count - 1 && $0.frame == c.startFrame + c.frames)) }
                .map { CueMarker(frame: $0.frame - c.startFrame, label: $0.label) }
            let parsed = try CueChunks.read(from: c.files[0])
            #expect(parsed == want, "chunk \(i + 1): independent parser")
            let sf = try SoundFileReader(path: c.files[0])
            #expect((sf.cues ?? []) == want, "chunk \(i + 1): libsndfile")
            #expect(sf.frames == c.frames)
        }
    }

    /// A schedule window of two virtual hours (09:30 to 11:30) on a clock 600 times as fast (a virtual hour is
    /// 6 s), hourly chunks on the clock: one take of three chunks named 09:30, 10:00 and 11:00; the middle one is an
    /// hour of frames exactly (288 000 at 80 frames per virtual second), and the chunks concatenate to the looped
    /// source without a lost or repeated frame. SIGUSR2 adds a marker (the recorder runs by itself). A host stall
    /// that makes the server drop or repeat a period in the graph (an xrun the report counts; no client can prevent
    /// it) gives a jump in the source: then the take is made again, up to three times.
    @Test func aScheduleWithHourlyClockRotationGivesExactChunks() throws {
        for attempt in 1...3 {
            let xruns = try scheduledTake(last: attempt == 3)
            if xruns == 0 { break }
            print("schedule, run \(attempt): \(xruns) server xrun(s) and a jump in the source; once more")
        }
    }

    /// One scheduled take, checked. Returns the server's xruns when they explain a jump in the audio (and this is
    /// not the `last` run), else 0.
    func scheduledTake(last: Bool) throws -> Int {
        let server = try TestEnvironment.server("usched")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("usched")
        let out = dir.appendingPathComponent("takes")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let noise = try LoopedNoise(dir: dir, channels: 1)
        // Virtual 09:15 at the start: the window opens 1.5 s later, 10:00 and 11:00 follow at 4.5 s and 10.5 s.
        let tandem = try TandemProcess(["record", "--no-view", "-c", "1", "-d", out.path, "--session", "sch",
                                        "--schedule", "daily 09:30-11:30", "--rotate", "3600", "--rotate-on-clock"],
                                       server: server,
                                       extraEnvironment: ["TZ": "UTC", "TANDEM_TEST_CLOCK": "2026-11-23T09:15:00Z*600"],
                                       log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor("preset applied", timeout: 5), "\(tandem.output)")
        let source = try noise.play(into: "tandem-rec:in_1", server: server, client: "src",
                                    log: dir.appendingPathComponent("src.log").path)
        defer { source.process.stop(SIGINT) }
        #expect(tandem.waitFor(" recording: ", timeout: 5), "\(tandem.output)")
        usleep(2_000_000)
        tandem.process.signal(SIGUSR2)
        #expect(tandem.waitFor("take 1 stopped", timeout: 20), "\(tandem.output)")
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 10) == 0, "\(tandem.output)")
        let reports = TakeCheck.reports(in: out.path)
        #expect(reports.count == 1, "\(reports)")
        let path = try #require(reports.first)
        let r = try TakeReport.read(from: path)
        #expect(r.endDetail == "the schedule's window ended")
        let names = r.chunks.map { ($0.files[0] as NSString).lastPathComponent }
        // The window opens from the control loop, within a few real frames of 09:30 (at 600× a few ms of real time
        // are a virtual second, so the first name may say 09:29:59); the clock-rotated chunks start exactly on the hour.
        #expect(names.count == 3 && ["-092959", "-093000", "-093001"].contains { names[0].contains($0) }
                && names[1].contains("-100000") && names[2].contains("-110000"), "\(names)")
        let frames = r.chunks.map(\.frames)
        #expect(frames.count == 3 && frames[1] == 288_000, "\(frames)")
        // The window's edges are read on the clock from the control loop: within 10 ms (real) of half an hour.
        #expect(frames.count == 3 && abs(frames[0] - 144_000) <= 480 && abs(frames[2] - 144_000) <= 480, "\(frames)")
        let check = TakeCheck.verify(report: path, source: noise.index)
        #expect(r.markers?.count == 1 && r.markers?.first?.source == "signal", "\(r.markers ?? [])")
        if check.problems.isEmpty && check.audio.discontinuities > 0 && r.xruns > 0 && !last { return r.xruns }
        #expect(check.problems.isEmpty && check.audio.discontinuities == 0 && check.audio.foreignFrames == 0, "\(check)")
        print("schedule: chunks \(names) of \(frames) frames; \(check.audio)")
        return 0
    }

    /// 30 simulated days of hourly chunks (one take a day, 24 chunks of 4 KiB) on an 8 MiB tmpfs, with keep_days = 7
    /// and min_free = 7M: every chunk that ended more than 7 days ago goes, then the oldest go until 7 MiB are
    /// free; nothing else, never the running take, nothing of another session nor a file no report names; the log
    /// lists every deletion.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func retentionOnASmallTmpfsKeepsWhatItPromises() throws {
        let server = try TestEnvironment.server("uret")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("uret")
        let mount = dir.appendingPathComponent("small").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 8)
        defer { TestEnvironment.unmount(mount) }
        let now = Date()
        var chunks: [(report: String, files: [String], ended: Date)] = []
        func simulate(session: String, take: Int, day: Int) throws {
            let start = now.addingTimeInterval(-Double(day) * 86_400 - 12 * 3600)
            var list: [String] = []
            for h in 0..<24 {
                let file = (mount as NSString).appendingPathComponent("\(session)-\(String(format: "%03d", take))-\(h + 1).wav")
                let ended = start.addingTimeInterval(Double(h + 1) * 3600)
                // A real closed chunk (about 4 KiB) with the identity its report records, as the recorder leaves it.
                try TestEnvironment.writeChunkWAV(path: file, frames: 2_000, modified: ended)
                let identity = String(decoding: try JSONEncoder().encode([FileIdentity.of(path: file)]), as: UTF8.self)
                list.append("{\"files\": [\"\(file)\"], \"startFrame\": \(h * 3600), \"frames\": 3600, \"identity\": \(identity)}")
                if session == "ret" { chunks.append(("", [file], ended)) }
            }
            let iso = ISO8601DateFormatter().string(from: start)
            let json = """
                {"tandemVersion": "0.1.0", "session": "\(session)", "take": \(take), "sampleRate": 1, "channels": 1,
                 "format": "wav", "sampleFormat": "int16", "stems": false, "startedAt": "\(iso)", "startFrameTime": 0,
                 "streamStart": 0, "prerollFrames": 0, "ports": [], "chunks": [\(list.joined(separator: ","))],
                 "frames": 86400, "xruns": 0, "droppedFrames": 0, "drops": [], "ended": "stopped"}
                """
            let report = (mount as NSString).appendingPathComponent("\(session)-\(String(format: "%03d", take)).json")
            try json.write(toFile: report, atomically: true, encoding: .utf8)
            _ = try TakeReport.read(from: report)
        }
        for day in 1...30 { try simulate(session: "ret", take: 31 - day, day: day) }
        try simulate(session: "other", take: 1, day: 29)
        let stray = (mount as NSString).appendingPathComponent("not-in-a-report.wav")
        try Data(repeating: 0, count: 4096).write(to: URL(fileURLWithPath: stray))
        try FileManager.default.setAttributes([.modificationDate: now.addingTimeInterval(-40 * 86_400)], ofItemAtPath: stray)
        chunks.sort { $0.ended < $1.ended }

        let tandem = try TandemProcess(["record", "--no-view", "-c", "1", "-d", mount, "--session", "ret", "--sample", "int16",
                                        "--rotate", "1", "--connect", "system:capture_1", "--keep-days", "7",
                                        "--min-free", "7M"],
                                       server: server, log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor(" recording: "), "\(tandem.output)")
        #expect(tandem.waitFor("chunk 3", timeout: 10), "\(tandem.output)")
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 10) == 0, "\(tandem.output)")

        let fm = FileManager.default
        let gone = chunks.filter { !fm.fileExists(atPath: $0.files[0]) }
        let kept = chunks.filter { fm.fileExists(atPath: $0.files[0]) }
        // Deleted oldest first: what is gone is a prefix of the chunks by age, and every chunk older than 7 days is in it.
        #expect(gone.count + kept.count == 720 && chunks.prefix(gone.count).allSatisfy { !fm.fileExists(atPath: $0.files[0]) })
        let old = chunks.filter { now.timeIntervalSince($0.ended) > 7 * 86_400 }.count
        #expect(gone.count >= old, "\(gone.count) deleted, \(old) older than 7 days")
        // Free space: at least the target, or nothing deletable was left.
        let free = Retention.statvfsFree(mount) ?? 0
        #expect(free >= 7 * 1024 * 1024 - 400_000 || kept.isEmpty, "free \(free)")
        #expect(gone.count < 720, "not everything had to go")
        // Never another session's, never a file no report names, never the running take.
        #expect(fm.fileExists(atPath: stray))
        #expect((0..<24).allSatisfy { fm.fileExists(atPath: (mount as NSString).appendingPathComponent("other-001-\($0 + 1).wav")) })
        let own = TakeCheck.reports(in: mount).compactMap { try? TakeReport.read(from: $0) }.filter { $0.frames > 0 && $0.sampleRate == 48_000 }
        #expect(own.count == 1 && own[0].chunks.allSatisfy { fm.fileExists(atPath: $0.files[0]) }, "the running take is whole")
        // The log: one line per deleted chunk, naming its file.
        let log = (try? String(contentsOfFile: (mount as NSString).appendingPathComponent("ret.retention.log"), encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n").filter { $0.contains("\tdeleted\ttake ") }
        #expect(lines.count == gone.count, "\(lines.count) log lines for \(gone.count) deletions")
        #expect(gone.allSatisfy { g in lines.contains { $0.hasSuffix(g.files[0]) } })
        let reportsGone = log.split(separator: "\n").filter { $0.contains("\tdeleted\treport\t") }.count
        print("retention: \(gone.count) of 720 chunks deleted (\(old) older than 7 days), \(reportsGone) reports, free \(free) bytes")
    }

    /// `preset check` lists every bad trigger, schedule and retention value with file, line and key (exit 2), and
    /// accepts a good preset using all of them (no longer refused as "not acted on yet"); `record` says the same of
    /// bad options.
    @Test func badUnattendedInputIsReportedWithFileLineAndKey() throws {
        let dir = TestEnvironment.temporaryDirectory("ucheck")
        let bad = dir.appendingPathComponent("bad.toml").path
        try """
            [session]
            name = "x"
            directory = "\(dir.path)"

            [recorder]
            start = "level"
            schedule = ["Mon-Fri 09:00-10:00", "Mon 09:30-11:00", "Funday 10:00-11:00"]
            rotate = 3600
            rotate_on_clock = true

            [recorder.trigger]
            threshold = 3
            window = 9

            [recorder.retention]
            keep_days = 0.01
            running_take = "closed-chunks"
            """.write(toFile: bad, atomically: true, encoding: .utf8)
        let tandem = TestEnvironment.product("tandem")
        let b = try TestEnvironment.run([tandem, "preset", "check", bad], timeout: 10)
        #expect(b.code == 2, "\(b.output)")
        for want in ["bad.toml:12: recorder.trigger.threshold:", "bad.toml:13: recorder.trigger.window:",
                     "bad.toml:7: recorder.schedule: entry 3:", "bad.toml:7: recorder.schedule: entry 2: 'Mon 09:30-11:00' overlaps",
                     "bad.toml:16: recorder.retention.keep_days:", "take being written would lose chunks"] {
            #expect(b.output.contains(want), "missing '\(want)' in:\n\(b.output)")
        }
        let good = dir.appendingPathComponent("good.toml").path
        try """
            [session]
            name = "x"
            directory = "\(dir.path)"

            [recorder]
            start = "level"
            schedule = ["Mon-Fri 09:00-10:00"]
            rotate = 3600
            rotate_on_clock = true

            [recorder.trigger]
            threshold = -30

            [recorder.retention]
            keep_days = 7
            """.write(toFile: good, atomically: true, encoding: .utf8)
        let g = try TestEnvironment.run([tandem, "preset", "check", good], timeout: 10)
        #expect(g.code == 0 && g.output.contains("ok"), "\(g.output)")
        for (args, want) in [(["--trigger-threshold", "5"], "trigger threshold must be"),
                             (["--trigger-threshold", "-30", "--trigger-window", "9"], "trigger window must be"),
                             (["--schedule", "Funday 10:00-11:00"], "is not a day"),
                             (["--rotate", "7", "--rotate-on-clock"], "divides a day"),
                             (["--keep-days", "0.01"], "within the guard time")] {
            let r = try TestEnvironment.run([tandem, "record", "-d", dir.path] + args, timeout: 10)
            #expect(r.code == 2 && r.output.contains(want), "\(args): \(r.output)")
        }
    }
}
