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
        let tandem = try RigTandem(rig, .slave, ["record", "-c", "16", "--connect", "system:capture_.*", "-d", dir.path,
                                                 "--session", "slave16", "-t", "12"],
                                   log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.waitFor(" recording: "), "\(tandem.output)")
        let player = try rig.spawn(.master, ["sndfile-jackplay", "--autoconnect=slave:to_slave_%d", source],
                                   log: dir.appendingPathComponent("jackplay.log").path)
        #expect(player.wait(timeout: 20) == 0)
        #expect(tandem.process.wait(timeout: 20) == 0, "\(tandem.output)")
        let file = try #require(announcedFile(tandem.output))
        let recorded = try TestEnvironment.readAudio(file)
        #expect(recorded.channels == 16)
        let a = AudioCompare.alignment(source: noise, recorded: recorded.samples, channels: 16)
        #expect(a.matchedFrames == 480_000 && a.mismatchedFrames == 0, "\(a)\n\(rig.logs)")
        let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
        #expect(report.droppedFrames == 0 && report.frames == 12 * 48000)
        #expect(report.ports.map { $0.connections.first ?? "" } == (1...16).map { "system:capture_\($0)" })
        let declared = rig.declaredLatency(.slave, port: "system:capture_1", mode: "capture")
        #expect(report.ports[0].captureLatency.map { Int($0.max) } == declared, "the report carries JACK's figure")
        print("NetJACK2 master -> slave, 16 ch: \(a); slave system:capture latency declared \(declared ?? -1) frames")
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
        let recorder = try RigTandem(rig, .master, ["record", "-c", "16", "--connect", "slave:from_slave_.*",
                                                    "-d", dir.path, "--session", "master16", "-t", "8"],
                                     log: dir.appendingPathComponent("record.log").path)
        #expect(recorder.waitFor(" recording: "), "\(recorder.output)")
        let player = try RigTandem(rig, .slave, ["play", source, "--connect", "system:playback_.*"],
                                   log: dir.appendingPathComponent("play.log").path)
        #expect(player.process.wait(timeout: 15) == 0, "\(player.output)")
        #expect(player.output.contains("finished: 240000 frames played, 0 underrun frames"), "\(player.output)")
        #expect(recorder.process.wait(timeout: 15) == 0, "\(recorder.output)")
        let recorded = try TestEnvironment.readAudio(try #require(announcedFile(recorder.output)))
        let a = AudioCompare.alignment(source: noise, recorded: recorded.samples, channels: 16)
        #expect(a.matchedFrames == 240_000 && a.mismatchedFrames == 0, "\(a)\n\(rig.logs)")
        let report = try TakeReport.read(from: try #require(announcedReport(recorder.output)))
        #expect(report.droppedFrames == 0 && report.ports[15].connections == ["slave:from_slave_16"])
        print("NetJACK2 slave -> master, 16 ch: \(a)")
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
        let recorder = try RigTandem(rig, .master, ["record", "-c", "2", "--connect", "slave:from_slave_1",
                                                    "--connect", "slave:from_slave_2",
                                                    "-d", dir.path, "--session", "rackback", "-t", "7"],
                                     log: dir.appendingPathComponent("record.log").path)
        #expect(recorder.waitFor(" recording: "), "\(recorder.output)")
        let player = try RigTandem(rig, .master, ["play", source, "--connect", "slave:to_slave_1", "--connect", "slave:to_slave_2"],
                                   log: dir.appendingPathComponent("play.log").path)
        #expect(player.process.wait(timeout: 15) == 0, "\(player.output)")
        #expect(recorder.process.wait(timeout: 15) == 0, "\(recorder.output)")
        let recorded = try TestEnvironment.readAudio(try #require(announcedFile(recorder.output)))
        let a = AudioCompare.alignment(source: noise.map { -$0 }, recorded: recorded.samples, channels: 2)
        #expect(a.matchedFrames == 4 * 48000 && a.mismatchedFrames == 0, "\(a)\n\(rig.logs)")
        print("NetJACK2 master -> rack on the slave -> master, 2 ch: \(a)")
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
    /// re-joined slave `slave-01`, which a pattern rule on the master's Tandem picks up. Every frame before the fault
    /// is in the take, the report notes where the server's time jumped, and the audio after the fault is exact again.
    @Test func theLinkDownForTwoSecondsKeepsEveryFrameBeforeItAndRecordingGoesOn() throws {
        let rig = try NetJackRig("link", channels: 2)
        defer { stopAndCheck(rig) }
        let dir = rig.directory
        let noise = Signals.noise(frames: 4 * 48000, channels: 2, seed: 424)
        let source = dir.appendingPathComponent("loop.wav").path
        try TestEnvironment.writeWAV(noise, channels: 2, path: source, sample: .int24)
        let masterPreset = dir.appendingPathComponent("master.toml").path
        try """
            [session]
            name = "m"
            directory = "\(dir.path)"
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
        #expect(rejoined, "\(slave.output)\n\(master.output)\n\(rig.logs)")
        usleep(3_000_000)
        #expect(slave.process.isRunning && master.process.isRunning)
        slave.process.signal(SIGTERM)
        master.process.signal(SIGTERM)
        #expect(slave.process.wait(timeout: 10) == 0, "\(slave.output)")
        #expect(master.process.wait(timeout: 10) == 0, "\(master.output)")
        #expect(!slave.output.contains("take 2 recording"), "the slave's server was never lost: one take")

        // The take: the loop in order from its first sound up to the fault, then the loop in order again after it.
        let take = try TestEnvironment.readAudio(try #require(announcedFile(slave.output)))
        // (In the first period after the rule connected the inputs one by one, only in_1 had its source yet.)
        let firstSound = try #require((0..<take.samples.count / 2).first {
            take.samples[$0 * 2] != 0 && take.samples[$0 * 2 + 1] != 0
        })
        let beforeRun = loopRun(noise, channels: 2, recorded: take.samples, from: firstSound)
        let before = try #require(beforeRun, "the take's first sound at frame \(firstSound) is the source's")
        let faultFrame = firstSound + before
        #expect(faultFrame < take.samples.count / 2, "the fault shows in the take")
        #expect(Double(faultFrame) >= (downAt - 0.5) * 48000,
                "every frame before the fault: \(before) frames in order up to take frame \(faultFrame), link down \(downAt) s after the take began")
        let resumeFrom = try #require((faultFrame + 48000..<take.samples.count / 2).first {
            take.samples[$0 * 2] != 0 && take.samples[$0 * 2 + 1] != 0
        },
                                      "audio arrives again after the link is back")
        let afterRun = loopRun(noise, channels: 2, recorded: take.samples, from: resumeFrom)
        let after = try #require(afterRun, "the sound at frame \(resumeFrom) after the fault is the source's")
        #expect(resumeFrom + after == take.samples.count / 2 && after > 2 * 48000,
                "exact from take frame \(resumeFrom) for \(after) frames, to the end")
        let report = try TakeReport.read(from: try #require(announcedReport(slave.output)))
        #expect(report.ended == .stopped && report.droppedFrames == 0)
        let notes = report.drops.map { "\($0.cause?.rawValue ?? "overrun") \($0.frames) at \($0.atFrame)" }
        print("link down \(downAt) s into the take: \(before) frames in order before the fault at take frame "
              + "\(faultFrame); exact again from \(resumeFrom) to the end (\(after) frames); report: \(notes), "
              + "xruns \(report.xruns), take \(take.samples.count / 2) frames")
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
        let gone = TestEnvironment.waitUntil(timeout: 10) {
            NetJackRig.processes(in: namespaces).isEmpty && !FileManager.default.fileExists(atPath: rigPath + "/rig.env")
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
