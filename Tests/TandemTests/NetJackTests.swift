import Takes
import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// How many frames of `recorded`, from frame `start` on, continue the looping `source` in order (nil when the frame
/// at `start` is not in the source at all).
func loopRun(_ source: [Float], channels: Int, recorded: [Float], from start: Int) -> Int? {
    let sourceFrames = source.count / channels, recordedFrames = recorded.count / channels
    func equal(_ r: Int, _ s: Int) -> Bool {
        (0..<channels).allSatisfy { recorded[r * channels + $0].bitPattern == source[s * channels + $0].bitPattern }
    }
    guard start < recordedFrames, let p = (0..<sourceFrames).first(where: { equal(start, $0) }) else { return nil }
    var n = 0
    while start + n < recordedFrames && equal(start + n, (p + n) % sourceFrames) { n += 1 }
    return n
}

/// A Tandem process on one host of a NetJACK2 rig.
struct RigTandem {
    let process: ChildProcess
    let logPath: String

    init(_ rig: NetJackRig, _ host: NetJackRig.Host, _ arguments: [String], log: String) throws {
        logPath = log
        process = try rig.spawn(host, [TestEnvironment.product("tandem")] + arguments, log: log)
    }

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func waitFor(_ text: String, timeout: Double = 10) -> Bool {
        TestEnvironment.waitUntil(timeout: timeout) { output.contains(text) }
    }
}

/// Tandem on a two-host NetJACK2 rig (scripts/netjack-rig.sh, docs/SCALING.md): network namespaces joined by a veth
/// pair, a dummy master with netmanager, a `jackd -d net` slave, raw float encoding, period 1024, network latency 2.
@Suite(.serialized, .enabled(if: NetJackRig.available,
                             "needs root, network namespaces, iproute2 and jackd2's netmanager (NetJackRig.unavailableReason)"))
struct NetJackTests {
    /// Every rig must leave nothing behind: no process in its namespaces (so no namespace, veth or /dev/shm).
    func stopAndCheck(_ rig: NetJackRig) {
        let namespaces = rig.namespaces
        let pids = rig.recordedPids
        let stopped = rig.stop()
        #expect(stopped.clean, "\(stopped.output)")
        #expect(NetJackRig.processes(in: namespaces).isEmpty, "processes left in \(namespaces)")
        #expect(!pids.contains(where: NetJackRig.isRunning), "rig processes left: \(pids)")
    }

    /// 16 channels of noise played on the master (sndfile-jackplay into slave:to_slave_*) arrive at Tandem on the
    /// slave (recording system:capture_*) sample for sample, in channel order.
    @Test(.enabled(if: TestEnvironment.hasProgram("sndfile-jackplay")))
    func sixteenChannelsFromTheMasterAreRecordedBitExactOnTheSlave() throws {
        let rig = try NetJackRig("m2s16")
        defer { stopAndCheck(rig) }
        let dir = rig.directory
        let noise = Signals.noise(frames: 10 * 48000, channels: 16, seed: 2416)
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(noise, channels: 16, path: source, sample: .int24)
        // NetJACK2's async mode, on a busy box, can drop or repeat a cycle on the way with nothing said by either
        // server (seen in a full test run: 2048 frames jumped over, a cycle repeated, both logs silent): every run
        // must hold only source frames in channel order; one of up to three must have no break at all.
        for attempt in 1...3 {
            let tandem = try RigTandem(rig, .slave, ["record", "-c", "16", "--connect", "system:capture_.*", "-d", dir.path,
                                                     "--session", "slave16-\(attempt)", "-t", "12"],
                                       log: dir.appendingPathComponent("tandem-\(attempt).log").path)
            #expect(tandem.waitFor(" recording: "), "\(tandem.output)")
            let player = try rig.spawn(.master, ["sndfile-jackplay", "--autoconnect=slave:to_slave_%d", source],
                                       log: dir.appendingPathComponent("jackplay-\(attempt).log").path)
            #expect(player.wait(timeout: 20) == 0)
            #expect(tandem.process.wait(timeout: 20) == 0, "\(tandem.output)")
            let file = try #require(announcedFile(tandem.output))
            let recorded = try TestEnvironment.readAudio(file)
            #expect(recorded.channels == 16)
            // sndfile-jackplay plays from its activation and connects its ports after it: on a loaded box its first
            // periods can go out before the links exist (its loss, before anything reaches the network). From the
            // first frame that arrives, every frame must be the source's, in order and in channel order, to the end.
            let check = LoopedSourceCheck.check(recorded: recorded.samples, against: .init(source: noise, channels: 16),
                                                looped: false)
            let head = check.firstSourceFrame ?? 480_000
            #expect(check.foreignFrames == 0 && check.foreignBeforeSource <= 1024
                    && check.partialBeforeSource <= 48000, "\(check)\n\(rig.logs)")
            let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
            #expect(report.droppedFrames == 0 && report.frames == 12 * 48000)
            #expect(report.ports.map { $0.connections.first ?? "" } == (1...16).map { "system:capture_\($0)" })
            let declared = rig.declaredLatency(.slave, port: "system:capture_1", mode: "capture")
            #expect(report.ports[0].captureLatency.map { Int($0.max) } == declared, "the report carries JACK's figure")
            print("NetJACK2 master -> slave, 16 ch, run \(attempt): \(check); slave system:capture latency declared \(declared ?? -1) frames")
            if check.discontinuities == 0 && head <= 8192 && check.sourceFrames >= 480_000 - head { break }
            #expect(attempt < 3, "a break in each of three runs: \(check)\n\(rig.logs)")
        }
    }

    /// A 16-channel file played by Tandem on the slave (into system:playback_*) is recorded by Tandem on the master
    /// (from slave:from_slave_*) sample for sample: the master records a slave's source.
    @Test func aFilePlayedOnTheSlaveIsRecordedBitExactOnTheMaster() throws {
        let rig = try NetJackRig("s2m16")
        defer { stopAndCheck(rig) }
        let dir = rig.directory
        let noise = Signals.noise(frames: 5 * 48000, channels: 16, seed: 1624)
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(noise, channels: 16, path: source, sample: .int24)
        // NetJACK2's async mode can lose part of a cycle on the way with nothing said by either server (seen once in
        // a full test run on the busy 2-core VM: 754 frames of one cycle, both jackd logs silent): such a run is done
        // again, up to three times; one must be bit-exact.
        for attempt in 1...3 {
            let recorder = try RigTandem(rig, .master, ["record", "-c", "16", "--connect", "slave:from_slave_.*",
                                                        "-d", dir.path, "--session", "master16-\(attempt)", "-t", "8"],
                                         log: dir.appendingPathComponent("record-\(attempt).log").path)
            #expect(recorder.waitFor(" recording: "), "\(recorder.output)")
            let player = try RigTandem(rig, .slave, ["play", source, "--connect", "system:playback_.*"],
                                       log: dir.appendingPathComponent("play-\(attempt).log").path)
            #expect(player.process.wait(timeout: 15) == 0, "\(player.output)")
            #expect(player.output.contains("finished: 240000 frames played, 0 underrun frames"), "\(player.output)")
            #expect(recorder.process.wait(timeout: 15) == 0, "\(recorder.output)")
            let recorded = try TestEnvironment.readAudio(try #require(announcedFile(recorder.output)))
            let a = AudioCompare.alignment(source: noise, recorded: recorded.samples, channels: 16)
            let report = try TakeReport.read(from: try #require(announcedReport(recorder.output)))
            #expect(report.droppedFrames == 0 && report.ports[15].connections == ["slave:from_slave_16"])
            print("NetJACK2 slave -> master, 16 ch, run \(attempt): \(a)")
            if a.matchedFrames == 240_000 && a.mismatchedFrames == 0 { break }
            #expect(attempt < 3, "not bit-exact in three runs: \(a)\n\(rig.logs)")
        }
    }

    /// A rack on the slave returns the processed signal to the master: 2 channels of noise played on the master into
    /// the slave, through a rack there running swh's inverter (exact: -x) from system:capture_* to system:playback_*,
    /// recorded on the master from the slave: the noise inverted, sample for sample, as the same rack gives locally.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/lv2/inv-swh.lv2")))
    func aRackOnTheSlaveReturnsItsOutputToTheMaster() throws {
        let rig = try NetJackRig("rack")
        defer { stopAndCheck(rig) }
        let dir = rig.directory
        let noise = Signals.noise(frames: 4 * 48000, channels: 2, seed: 1917)
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(noise, channels: 2, path: source, sample: .float32)
        let rack = try RigTandem(rig, .slave, ["rack", "--name", "inv", "--inputs", "2",
                                               "--plugin", "http://plugin.org.uk/swh-plugins/inv",
                                               "--connect-in", "system:capture_1", "--connect-in", "system:capture_2",
                                               "--connect-out", "system:playback_1", "--connect-out", "system:playback_2"],
                                 log: dir.appendingPathComponent("rack.log").path)
        defer { rack.process.signal(SIGTERM); _ = rack.process.wait(timeout: 10) }
        #expect(rack.waitFor("connected inv:out_2 -> system:playback_2"), "\(rack.output)")
        // A run whose take counted server xruns (a late cycle garbles what NetJACK2 carries) is run again.
        for attempt in 1...3 {
            let recorder = try RigTandem(rig, .master, ["record", "-c", "2", "--connect", "slave:from_slave_1",
                                                        "--connect", "slave:from_slave_2", "-d", dir.path,
                                                        "--session", "rackback-\(attempt)", "-t", "7"],
                                         log: dir.appendingPathComponent("record-\(attempt).log").path)
            #expect(recorder.waitFor(" recording: "), "\(recorder.output)")
            let player = try RigTandem(rig, .master, ["play", source, "--connect", "slave:to_slave_1",
                                                      "--connect", "slave:to_slave_2"],
                                       log: dir.appendingPathComponent("play-\(attempt).log").path)
            #expect(player.process.wait(timeout: 15) == 0, "\(player.output)")
            #expect(recorder.process.wait(timeout: 15) == 0, "\(recorder.output)")
            let recorded = try TestEnvironment.readAudio(try #require(announcedFile(recorder.output)))
            let a = AudioCompare.alignment(source: noise.map { -$0 }, recorded: recorded.samples, channels: 2)
            let report = try TakeReport.read(from: try #require(announcedReport(recorder.output)))
            if a.matchedFrames == 4 * 48000 && a.mismatchedFrames == 0 {
                print("NetJACK2 master -> rack on the slave -> master, 2 ch: \(a) (run \(attempt))")
                break
            }
            #expect(report.xruns > 0 && attempt < 3, "\(a), xruns \(report.xruns)\n\(rig.logs)")
            if report.xruns == 0 { break }
            print("NetJACK2 rack run \(attempt): \(a) with \(report.xruns) server xruns; once more")
        }
    }

    /// Record-while-play on the master through a loop on the slave (system:capture_1 -> system:playback_1): the
    /// direct copy lines up with the file to the frame, the copy that went over the network and back arrives exactly
    /// `latency` × period later, and the take's report carries the capture latency JACK declares for it.
    @Test func aRoundTripOverTheNetworkIsMeasuredAndLinedUp() throws {
        let rig = try NetJackRig("roundtrip", channels: 2)
        defer { stopAndCheck(rig) }
        let dir = rig.directory
        #expect(try rig.run(.slave, ["jack_connect", "system:capture_1", "system:playback_1"]).code == 0)
        let noise = Signals.noise(frames: 2 * 48000, channels: 1, seed: 77)
        let source = dir.appendingPathComponent("probe.wav").path
        try TestEnvironment.writeWAV(noise, channels: 1, path: source, sample: .int24)
        let preset = dir.appendingPathComponent("rt.toml").path
        try """
            [session]
            name = "rt"
            directory = "\(dir.path)"
            [recorder]
            client = "rt-rec"
            channels = 2
            duration = 3
            [player]
            client = "rt-play"
            channels = 1
            queue = ["\(source)"]
            start = "with-recorder"
            [[connect]]
            from = "rt-play:out_1"
            to = "rt-rec:in_1"
            [[connect]]
            from = "rt-play:out_1"
            to = "slave:to_slave_1"
            [[connect]]
            from = "slave:from_slave_1"
            to = "rt-rec:in_2"
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let run = try RigTandem(rig, .master, ["run", "--no-view", preset], log: dir.appendingPathComponent("run.log").path)
        #expect(run.process.wait(timeout: 20) == 0, "\(run.output)")
        let take = try TestEnvironment.readAudio(try #require(announcedFile(run.output)))
        let direct = stride(from: 0, to: take.samples.count, by: 2).map { take.samples[$0] }
        let returned = stride(from: 1, to: take.samples.count, by: 2).map { take.samples[$0] }
        let d = AudioCompare.alignment(source: noise, recorded: direct, channels: 1)
        let r = AudioCompare.alignment(source: noise, recorded: returned, channels: 1)
        #expect(d.recordedOffset == 0 && d.mismatchedFrames == 0, "record-while-play lines up: \(d)")
        #expect(r.mismatchedFrames == 0 && r.matchedFrames == 96_000, "\(r)")
        let measured = r.recordedOffset - d.recordedOffset
        #expect(measured == rig.latency * rig.period, "round trip \(measured) frames")
        let report = try TakeReport.read(from: try #require(announcedReport(run.output)))
        let toSlave = try #require(rig.declaredLatency(.master, port: "slave:to_slave_1", mode: "playback"))
        let fromSlave = try #require(rig.declaredLatency(.master, port: "slave:from_slave_1", mode: "capture"))
        #expect(report.ports[1].captureLatency.map { Int($0.max) } == fromSlave, "the report carries JACK's figure")
        #expect(report.playback?.startFrameTime == report.startFrameTime)
        // What jackd 1.9.21's netmanager declares: latency × period / 2 on to_slave (playback), that plus one period
        // on from_slave (capture, async slave): the declared round trip is one period more than the measured one.
        #expect(toSlave + fromSlave == measured + rig.period, "declared \(toSlave) + \(fromSlave), measured \(measured)")
        let line = "NetJACK2 round trip at period \(rig.period), latency \(rig.latency): measured \(measured) frames; "
            + "declared to_slave playback \(toSlave) + from_slave capture \(fromSlave) = \(toSlave + fromSlave); "
            + "report in_2 capture latency \(report.ports[1].captureLatency.map { "\($0.max)" } ?? "-")"
        print(line)
        try? (line + "\n").write(toFile: "/tmp/tandem-netjack-measurement.txt", atomically: true, encoding: .utf8)
    }

    /// The cable is pulled for 2 s during a take on the slave, then put back. What jackd 1.9.21 does: the slave's
    /// server keeps running (no server loss for its clients) and waits for the master, then re-joins; its system
    /// ports are re-created, so the slave's Tandem re-connects them; the master keeps the old client and names the
    /// re-joined slave `slave-01`, which a pattern rule on the master's Tandem picks up. The slave's Tandem sees its
    /// cycles stop while the server is up: it finalizes the take (`serverStalled`, every frame before the fault in
    /// it) and starts take 2 when cycles run again, whose audio is exact again and whose report says why it began.
    ///
    /// A run in which the slave's Tandem never sees its capture ports' connections gone and back (its take 2 then has
    /// a silent channel) is printed and run once more on a fresh rig; a second such run fails. Seen in 3 of 9 runs
    /// on a loaded 2-core machine; the slave's jackd log shows no second join in them.
    @Test func theLinkDownForTwoSecondsEndsTheTakeWithEveryFrameAndANewOneStarts() throws {
        for attempt in 1...2 {
            if try linkDownRun(lastAttempt: attempt == 2) { return }
            print("NetJACK2 link down, run \(attempt): the slave's capture connections were not made again; once more")
        }
    }

    /// One link-down run; false (nothing judged) when the re-join was not seen and another run may follow.
    private func linkDownRun(lastAttempt: Bool) throws -> Bool {
        let rig = try NetJackRig("link", channels: 2)
        defer { stopAndCheck(rig) }
        let noise = Signals.noise(frames: 4 * 48000, channels: 2, seed: 424)
        let (master, slave) = try playAndRecordAcross(rig, noise: noise)
        let takeStarted = Date()
        usleep(3_000_000)
        let downAt = Date().timeIntervalSince(takeStarted)
        try rig.link(up: false)
        usleep(2_000_000)
        try rig.link(up: true)
        // The slave re-joins; both Tandems re-apply their rules to the re-created ports.
        let rejoined = TestEnvironment.waitUntil(timeout: 15) {
            slave.output.components(separatedBy: "connected system:capture_1 -> s-rec:in_1").count > 2
                && master.output.components(separatedBy: "connected m-play:out_2 -> ").count > 2
        }
        if !rejoined && !lastAttempt {
            print("\(slave.output)\n\(rig.logs)")
            slave.process.signal(SIGTERM)
            master.process.signal(SIGTERM)
            _ = slave.process.wait(timeout: 10)
            _ = master.process.wait(timeout: 10)
            return false
        }
        #expect(rejoined, "\(slave.output)\n\(master.output)\n\(rig.logs)")
        usleep(3_000_000)
        #expect(slave.process.isRunning && master.process.isRunning)
        slave.process.signal(SIGTERM)
        master.process.signal(SIGTERM)
        #expect(slave.process.wait(timeout: 10) == 0, "\(slave.output)")
        #expect(master.process.wait(timeout: 10) == 0, "\(master.output)")
        // The server stayed up but ran no cycles: take 1 ends at the fault, take 2 starts when cycles run again.
        #expect(slave.output.contains("take 1 server stalled"), "\(slave.output)")
        let lines = slave.output.split(separator: "\n").map(String.init)
        let files = lines.compactMap { $0.components(separatedBy: " recording: ").dropFirst().first }
        let reports = lines.compactMap { $0.components(separatedBy: "; report ").dropFirst().first }
        try #require(files.count == 2 && reports.count == 2, "two takes: \(slave.output)")

        // Take 1: the loop in order from its first sound up to the fault, where it ends.
        let take = try TestEnvironment.readAudio(files[0])
        // (In the first period after the rule connected the inputs one by one, only in_1 had its source yet.)
        let firstSound = try #require((0..<take.samples.count / 2).first {
            take.samples[$0 * 2] != 0 && take.samples[$0 * 2 + 1] != 0
        })
        let beforeRun = loopRun(noise, channels: 2, recorded: take.samples, from: firstSound)
        let before = try #require(beforeRun, "the take's first sound at frame \(firstSound) is the source's")
        let faultFrame = firstSound + before
        #expect(Double(faultFrame) >= (downAt - 0.5) * 48000,
                "every frame before the fault: \(before) frames in order up to take frame \(faultFrame), link down \(downAt) s after the take began")
        let silentTail = (faultFrame..<take.samples.count / 2).allSatisfy { take.samples[$0 * 2] == 0 && take.samples[$0 * 2 + 1] == 0 }
        #expect(silentTail && take.samples.count / 2 - faultFrame < 48000,
                "take 1 ends at the fault: \(take.samples.count / 2 - faultFrame) frames after it")
        let first = try TakeReport.read(from: reports[0])
        #expect(first.ended == .serverStalled && first.droppedFrames == 0, "\(first.ended)")

        // Take 2: from the cycles' return, the loop in order again to its end, and its report says what happened.
        let second = try TestEnvironment.readAudio(files[1])
        let resumeFrom = try #require((0..<second.samples.count / 2).first {
            second.samples[$0 * 2] != 0 && second.samples[$0 * 2 + 1] != 0
        }, "audio arrives again after the link is back")
        let afterRun = loopRun(noise, channels: 2, recorded: second.samples, from: resumeFrom)
        let after = try #require(afterRun, "the sound at frame \(resumeFrom) of take 2 is the source's")
        #expect(resumeFrom + after == second.samples.count / 2 && after > 2 * 48000,
                "exact from take 2's frame \(resumeFrom) for \(after) frames, to the end")
        let report = try TakeReport.read(from: reports[1])
        #expect(report.ended == .stopped && report.droppedFrames == 0)
        let note = (report.notes ?? []).first { $0.contains("ran cycles again after") } ?? ""
        #expect(!note.isEmpty, "take 2 says why it began: \(report.notes ?? [])")
        print("link down \(downAt) s into the take: take 1 has \(before) frames in order and ends \(faultFrame) "
              + "frames in (serverStalled); take 2 exact from its frame \(resumeFrom) to the end (\(after) frames); "
              + "\(note); xruns \(first.xruns) + \(report.xruns)")
        return true
    }

    /// A master playing a noise loop into the slave (a pattern rule follows `slave-NN`), a slave recording it, both
    /// with `on_server_loss = "resume"`.
    func playAndRecordAcross(_ rig: NetJackRig, noise: [Float]) throws -> (master: RigTandem, slave: RigTandem) {
        let dir = rig.directory
        let source = dir.appendingPathComponent("loop.wav").path
        try TestEnvironment.writeWAV(noise, channels: 2, path: source, sample: .int24)
        let masterPreset = dir.appendingPathComponent("master.toml").path
        try """
            [session]
            name = "m"
            directory = "\(dir.path)"
            on_server_loss = "resume"
            [player]
            client = "m-play"
            channels = 2
            queue = ["\(source)"]
            loop = "item"
            [[connect]]
            from = "m-play:out_*"
            to = "/slave(-[0-9]+)?:to_slave_[0-9]+/"
            """.write(toFile: masterPreset, atomically: true, encoding: .utf8)
        let slavePreset = dir.appendingPathComponent("slave.toml").path
        try """
            [session]
            name = "s"
            directory = "\(dir.path)"
            on_server_loss = "resume"
            [recorder]
            client = "s-rec"
            channels = 2
            [[connect]]
            from = "system:capture_*"
            to = "s-rec:in_*"
            """.write(toFile: slavePreset, atomically: true, encoding: .utf8)
        let master = try RigTandem(rig, .master, ["run", "--no-view", masterPreset],
                                   log: dir.appendingPathComponent("master.log").path)
        #expect(master.waitFor("playing item 1"), "\(master.output)")
        let slave = try RigTandem(rig, .slave, ["run", "--no-view", slavePreset],
                                  log: dir.appendingPathComponent("slave.log").path)
        #expect(slave.waitFor("take 1 recording"), "\(slave.output)")
        return (master, slave)
    }

    /// Takes 1 and 2 of a slave's run around a fault: take 1 is the loop in order to its end (every frame before
    /// the fault, ended as `end`), take 2 the loop in order again from its first sound to its end. Returns a line
    /// for the closing note.
    func checkTwoTakes(_ slave: RigTandem, noise: [Float], end: TakeEnd) throws -> String {
        let lines = slave.output.split(separator: "\n").map(String.init)
        let files = lines.compactMap { $0.components(separatedBy: " recording: ").dropFirst().first }
        let reports = lines.compactMap { $0.components(separatedBy: "; report ").dropFirst().first }
        try #require(files.count >= 2 && reports.count >= 2, "two takes: \(slave.output)")
        var figures: [String] = []
        for (index, file) in files.prefix(2).enumerated() {
            let take = try TestEnvironment.readAudio(file).samples
            let frames = take.count / 2
            let firstSound = try #require((0..<frames).first { take[$0 * 2] != 0 && take[$0 * 2 + 1] != 0 },
                                          "take \(index + 1) has sound")
            // Take 1 is in order from its first sound; take 2 from some frame on (a master's player resumes where it
            // was when its server came back, so take 2 may hold a step in the loop), to the end.
            var from = firstSound, run = 0, steps = 0
            while true {
                run = loopRun(noise, channels: 2, recorded: take, from: from) ?? 0
                let next = (from + max(run, 1)..<frames).first { take[$0 * 2] != 0 && take[$0 * 2 + 1] != 0 }
                guard index == 1, let n = next, steps < 20 else { break }
                from = n
                steps += 1
            }
            let trailing = (from + run..<frames).filter { take[$0 * 2] != 0 || take[$0 * 2 + 1] != 0 }.count
            #expect(trailing == 0 && run > 48000, "take \(index + 1): \(run) frames in order from \(from), then \(trailing) sounding frames not in order")
            figures.append("take \(index + 1): \(run) frames in order from frame \(from) of \(frames)"
                           + (steps > 0 ? " (after \(steps) step(s) in the source)" : ""))
        }
        let first = try TakeReport.read(from: reports[0])
        #expect(first.ended == end && first.droppedFrames == 0, "\(first.ended)")
        return figures.joined(separator: "; ")
    }

    /// A master playing into a slave that records; `host`'s jackd restarts (1 s down) 2 s into the take; take 1 ends
    /// as `ending` with every frame before the fault, take 2 starts when the slave has re-joined.
    func restartDuringATake(_ host: NetJackRig.Host, label: String, seed: UInt64, ending: TakeEnd) throws {
        let rig = try NetJackRig(label, channels: 2)
        defer { stopAndCheck(rig) }
        let noise = Signals.noise(frames: 4 * 48000, channels: 2, seed: seed)
        let (master, slave) = try playAndRecordAcross(rig, noise: noise)
        usleep(2_000_000)
        try rig.restart(host, after: 1)
        if host == .master { #expect(master.waitFor("JACK server back", timeout: 10), "\(master.output)") }
        #expect(slave.waitFor("take 2 recording", timeout: 15), "\(slave.output)\n\(rig.logs)")
        usleep(3_000_000)
        slave.process.signal(SIGTERM)
        master.process.signal(SIGTERM)
        #expect(slave.process.wait(timeout: 10) == 0, "\(slave.output)")
        #expect(master.process.wait(timeout: 10) == 0, "\(master.output)")
        let figures = try checkTwoTakes(slave, noise: noise, end: ending)
        print("\(host.rawValue) restarted (1 s down): \(figures)")
    }

    /// The master's jackd restarts (1 s down) during a take on the slave: the slave's server waits for it without
    /// shutting its clients down, so the slave's Tandem sees its cycles stop: take 1 ends `serverStalled` with every
    /// frame before the fault, take 2 starts when the slave has re-joined. The master's Tandem sees an ordinary
    /// server loss and restores its player and its rule to the re-joined slave.
    @Test func theMasterRestartingEndsTheSlavesTakeAndANewOneStarts() throws {
        try restartDuringATake(.master, label: "mrestart", seed: 4242, ending: .serverStalled)
    }

    /// The slave's jackd restarts (1 s down) during a take on the slave: an ordinary server loss there (take 1
    /// `serverLost` with every frame before it, take 2 when the server is back and has re-joined the master).
    @Test func theSlaveRestartingEndsItsTakeAndANewOneStarts() throws {
        try restartDuringATake(.slave, label: "srestart", seed: 2424, ending: .serverLost)
    }

    /// The rig leaves nothing behind when its owner dies without stopping it (a crashed test): the watcher stops it.
    @Test func theRigStopsByItselfWhenItsOwnerIsKilled() throws {
        let dir = TestEnvironment.temporaryDirectory("rig-owner")
        let owner = try ChildProcess(["sleep", "60"])
        let rigPath = dir.appendingPathComponent("rig").path
        let start = try TestEnvironment.run([NetJackRig.script, "start", rigPath, "--channels", "2", "--period", "1024",
                                             "--owner", "\(owner.pid)", "--life", "60"], timeout: 60)
        #expect(start.code == 0, "\(start.output)")
        let env = (try? String(contentsOfFile: rigPath + "/rig.env", encoding: .utf8)) ?? ""
        let namespaces = env.matches(of: /_NS='(net:\[\d+\])'/).map { String($0.1) }
        #expect(namespaces.count == 2)
        #expect(NetJackRig.processes(in: namespaces).count >= 4, "holders and servers run")
        owner.stop(SIGKILL)
        // The watcher writes its last line after it removed rig.env: wait for that line too.
        let gone = TestEnvironment.waitUntil(timeout: 10) {
            NetJackRig.processes(in: namespaces).isEmpty && !FileManager.default.fileExists(atPath: rigPath + "/rig.env")
                && ((try? String(contentsOfFile: rigPath + "/watcher.log", encoding: .utf8)) ?? "").contains("no process, namespace")
        }
        #expect(gone, "left: \(NetJackRig.processes(in: namespaces))")
        #expect(!FileManager.default.fileExists(atPath: rigPath + "/rig.env"))
        let watcher = (try? String(contentsOfFile: rigPath + "/watcher.log", encoding: .utf8)) ?? ""
        #expect(watcher.contains("is gone: stopping the rig") && watcher.contains("no process, namespace"), "\(watcher)")
        let links = try TestEnvironment.run(["ip", "-o", "link", "show"])
        #expect(!links.output.contains("rig0"), "no veth in this namespace: \(links.output)")
    }

    /// A rig whose servers crashed (SIGKILL of both jackd) still stops cleanly and leaves nothing.
    @Test func aRigWhoseServersCrashedStillStopsClean() throws {
        let rig = try NetJackRig("crash", channels: 2)
        for pid in rig.recordedPids.suffix(2) { kill(pid, SIGKILL) }
        stopAndCheck(rig)
    }
}
