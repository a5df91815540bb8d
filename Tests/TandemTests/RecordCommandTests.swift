import Takes
import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// `tandem record` as a user runs it: a subprocess against a private server, fed by real peers.
@Suite(.serialized) struct RecordCommandTests {
    /// 10 s of 16-channel 24-bit noise played by sndfile-jackplay arrive sample for sample, in channel order.
    ///
    /// A server xrun can cost the source a period (sndfile-jackplay late: in one full run the recording had source
    /// period 193536 replaced by the next one, which then came again, with the take's report counting 2 server xruns
    /// and the recorder 0 missed frames). So every run is checked for what Tandem itself promises (every recorded
    /// frame is a source frame in channel order, nothing dropped), and a run that is not bit-exact must have counted
    /// server xruns; it is then run again, up to three times.
    @Test(.enabled(if: TestEnvironment.hasProgram("sndfile-jackplay")))
    func sixteenChannelsFromSndfileJackplayAreBitExact() throws {
        let server = try TestEnvironment.server("rec16")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rec16")
        let noise = Signals.noise(frames: 10 * 48000, channels: 16, seed: 16)
        let index = LoopedSourceCheck.Index(source: noise, channels: 16)
        let source = dir.appendingPathComponent("noise.wav").path
        try TestEnvironment.writeWAV(noise, channels: 16, path: source, sample: .int24)
        for attempt in 1...3 {
            let tandem = try TandemProcess(["record", "-c", "16", "-d", dir.path, "--session", "bitexact-\(attempt)",
                                            "-t", "13"],
                                           server: server, log: dir.appendingPathComponent("tandem-\(attempt).log").path)
            #expect(tandem.waitFor(" recording: "))
            let player = try startJackplay(source, pattern: "tandem-rec:in_%d", server: server,
                                           log: dir.appendingPathComponent("jackplay-\(attempt).log").path)
            #expect(player.wait(timeout: 20) != nil)
            #expect(tandem.process.wait(timeout: 20) == 0, "\(tandem.output)")
            let file = try #require(announcedFile(tandem.output))
            let recorded = try TestEnvironment.readAudio(file)
            #expect(recorded.channels == 16)
            let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
            #expect(report.ended == .durationReached && report.droppedFrames == 0 && report.frames == 13 * 48000)
            #expect(report.ports.count == 16 && (report.ports[0].connections == ["jackplay:out_1"] || report.ports[0].connections.isEmpty))
            let check = LoopedSourceCheck.check(recorded: recorded.samples, against: index, looped: false)
            #expect(check.foreignFrames == 0 && check.foreignBeforeSource == 0,
                    "a recorded frame that is not a source frame: \(check)")
            let a = AudioCompare.alignment(source: noise, recorded: recorded.samples, channels: 16)
            if a.matchedFrames == 480_000 && a.mismatchedFrames == 0 {
                print("16 channels from sndfile-jackplay: 480000 of 480000 frames bit-exact (run \(attempt))")
                break
            }
            #expect(report.xruns > 0 && attempt < 3, "\(a), server xruns \(report.xruns), \(check)")
            if report.xruns == 0 { break }
            print("16 channels from sndfile-jackplay, run \(attempt): \(a) with \(report.xruns) server xruns; once more")
        }
    }

    /// A 64-channel take (50 ms of it is 600 KiB: its whole pieces go to the disk past the page cache,
    /// `SoundFileWriter.writeUnbuffered`) from Tandem's own looped player: every frame a source frame in order,
    /// nothing dropped; then one killed with SIGKILL mid-take: its file opens in libsndfile and sox, counts only
    /// source frames, and lacks at most a piece and the header's 50 ms beside what the kill took.
    @Test func aWideTakeGoesPastThePageCacheIntactAndSurvivesKillNine() throws {
        let server = try TestEnvironment.server("rec64")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rec64")
        let noise = try LoopedNoise(dir: dir, channels: 64, seconds: 1)
        let source = try TandemProcess(["play", "--client", "src", "--loop", "item", noise.path], server: server,
                                       log: dir.appendingPathComponent("src.log").path)
        defer { source.process.signal(SIGTERM); _ = source.process.wait(timeout: 10) }
        #expect(source.waitFor("playing 1/1"), "\(source.output)")
        for kill in [false, true] {
            let t = try TandemProcess(["record", "-c", "64", "-d", dir.path, "--session", kill ? "killed" : "whole",
                                       "--connect", "src:out_.*"] + (kill ? [] : ["-t", "4"]),
                                      server: server, log: dir.appendingPathComponent("rec-\(kill).log").path)
            #expect(t.waitFor(" recording: "), "\(t.output)")
            var elapsed = 0.0
            if kill {
                let started = Date()
                usleep(2_300_000)
                t.process.signal(SIGKILL)
                elapsed = Date().timeIntervalSince(started)
            }
            _ = t.process.wait(timeout: 20)
            let file = try #require(announcedFile(t.output))
            let recorded = try TestEnvironment.readAudio(file)
            #expect(recorded.channels == 64)
            let check = LoopedSourceCheck.check(recorded: recorded.samples, against: noise.index)
            #expect(check.foreignFrames == 0 && check.discontinuities == 0, "kill \(kill): \(check)")
            let frames = recorded.samples.count / 64
            if kill {
                let sox = try TestEnvironment.run(["sox", "--i", "-s", file])
                #expect(sox.code == 0 && Int(sox.output.split(separator: "\n").last ?? "") == frames, "\(sox.output)")
                #expect(Double(frames) / 48000 > elapsed - 0.5, "\(frames) frames after \(elapsed) s")
            } else {
                let report = try TakeReport.read(from: try #require(announcedReport(t.output)))
                #expect(report.ended == .durationReached && report.droppedFrames == 0 && report.frames == 4 * 48000
                        && frames == 4 * 48000, "\(report.frames) frames, \(frames) in the file")
            }
        }
    }

    /// kill -9 during a WAV take, ten times at seeded random moments in one folder: each file opens in libsndfile
    /// and sox with at most 1 s missing, and each next start reports the interrupted take and completes its report.
    /// Four kills in `make test`, the ten in `make soak` (the same seeded moments, the first of them).
    @Test func killNineLeavesAReadableFileAndTheNextStartCompletesItsReport() throws {
        let kills = SoakSize.pick(test: 4, soak: 10)
        let server = try TestEnvironment.server("kill9")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("kill9")
        var rng: UInt64 = 0x0C0F_FEE5
        var previous: (sidecar: String, frames: Int)?
        for trial in 0...kills {
            let t = try TandemProcess(["record", "-c", "4", "-d", dir.path, "--connect", "system:capture_.*"],
                                      server: server, log: dir.appendingPathComponent("t\(trial).log").path)
            #expect(t.waitFor(" recording: "), "trial \(trial): \(t.output)")
            if let p = previous {
                #expect(t.output.contains("recovered interrupted take"), "trial \(trial): \(t.output)")
                let completed = try TakeReport.read(from: p.sidecar)
                #expect(completed.ended == .interrupted && completed.frames == p.frames
                        && completed.chunks[0].frames == p.frames && completed.endDetail?.contains("killed") == true)
            }
            if trial == kills {
                t.process.signal(SIGTERM)
                #expect(t.process.wait(timeout: 10) == 0)
                break
            }
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let delay = 0.3 + Double(rng >> 40) / Double(1 << 24) * 1.7
            let started = Date()
            usleep(UInt32(delay * 1_000_000))
            t.process.signal(SIGKILL)
            let elapsed = Date().timeIntervalSince(started)
            _ = t.process.wait(timeout: 5)
            let file = try #require(announcedFile(t.output))
            let reader = try SoundFileReader(path: file)
            #expect(reader.channels == 4)
            let sox = try TestEnvironment.run(["sox", "--i", "-s", file])
            #expect(sox.code == 0 && Int(sox.output.split(separator: "\n").last ?? "") == reader.frames,
                    "trial \(trial): sox reads it: \(sox.output)")
            let missing = elapsed - Double(reader.frames) / 48000
            #expect(missing <= 1.0, "trial \(trial): missing \(missing) s of \(elapsed) s")
            let sidecar = (file as NSString).deletingPathExtension + ".json"
            #expect(try TakeReport.read(from: sidecar).ended == .recording, "a killed take's report still says recording")
            previous = (sidecar, reader.frames)
        }
    }

    /// SIGINT and SIGTERM, ten times each at seeded random moments: exit 0, a valid header, and every frame
    /// captured up to the signal in the file. Three times each in `make test`, ten in `make soak` (the same seeded
    /// moments, the first of them).
    @Test func signalsAtRandomMomentsLoseNothing() throws {
        let trials = SoakSize.pick(test: 6, soak: 20)
        let server = try TestEnvironment.server("signals")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("signals")
        var rng: UInt64 = 0x5EED_1234
        for trial in 0..<trials {
            let sig = trial % 2 == 0 ? SIGINT : SIGTERM
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let delay = 0.2 + Double(rng >> 40) / Double(1 << 24) * 1.3
            let t = try TandemProcess(["record", "-c", "2", "-d", dir.path, "--session", "sig\(trial)",
                                       "--connect", "system:capture_.*"],
                                      server: server, log: dir.appendingPathComponent("t\(trial).log").path)
            #expect(t.waitFor(" recording: "))
            let started = Date()
            usleep(UInt32(delay * 1_000_000))
            t.process.signal(sig)
            let elapsed = Date().timeIntervalSince(started)
            #expect(t.process.wait(timeout: 10) == 0, "trial \(trial): \(t.output)")
            let file = try #require(announcedFile(t.output))
            let frames = try SoundFileReader(path: file).frames
            let sox = try TestEnvironment.run(["sox", "--i", "-s", file])
            #expect(Int(sox.output.split(separator: "\n").last ?? "") == frames, "header valid: \(sox.output)")
            #expect(Double(frames) >= (elapsed - 0.1) * 48000,   // start and stop are period-granular (21 ms)
                    "trial \(trial): \(frames) frames after \(elapsed) s")
            #expect(Double(frames) <= (elapsed + 0.5) * 48000)
            let report = try TakeReport.read(from: try #require(announcedReport(t.output)))
            #expect(report.ended == .stopped && report.frames == frames)
        }
    }

    /// An existing file with the next take's name is left untouched; the take gets the next free number.
    @Test func existingFilesAreNeverOverwritten() throws {
        let server = try TestEnvironment.server("noover")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("noover")
        let precious = dir.appendingPathComponent("s-001.wav").path
        try Data("not audio, but mine".utf8).write(to: URL(fileURLWithPath: precious))
        let tandem = try TandemProcess(["record", "-c", "1", "-d", dir.path, "--session", "s",
                                        "--template", "{session}-{take:03}", "-t", "1"],
                                       server: server, log: dir.appendingPathComponent("tandem.log").path)
        #expect(tandem.process.wait(timeout: 10) == 0)
        #expect(try String(contentsOfFile: precious, encoding: .utf8) == "not audio, but mine")
        #expect(announcedFile(tandem.output) == dir.appendingPathComponent("s-002.wav").path)
        #expect(try SoundFileReader(path: dir.appendingPathComponent("s-002.wav").path).frames == 48000)
    }

    /// Disk full on a small tmpfs: a valid file with every frame written before the error, a clear message, a
    /// report that says why, exit code 4.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func diskFullEndsTheTakeWithAValidFile() throws {
        let server = try TestEnvironment.server("full")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("full")
        let mount = dir.appendingPathComponent("small").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 3)
        defer { TestEnvironment.unmount(mount) }
        let tandem = try TandemProcess(["record", "-c", "8", "-d", mount, "--connect", "system:capture_.*", "-t", "30"],
                                       server: server, log: dir.appendingPathComponent("tandem.log").path)
        let code = tandem.process.wait(timeout: 20)
        #expect(code == 4, "exit code for a disk error: \(tandem.output)")
        #expect(tandem.output.contains("disk error"))
        let file = try #require(announcedFile(tandem.output))
        let reader = try SoundFileReader(path: file)
        #expect(reader.frames > 10_000)
        let sox = try TestEnvironment.run(["sox", "--i", "-s", file])
        #expect(sox.code == 0)
        let report = try TakeReport.read(from: try #require(announcedReport(tandem.output)))
        #expect(report.ended == .diskError && report.endDetail != nil)
        #expect(report.frames >= reader.frames)
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        #expect(size >= reader.frames * 8 * 4, "the header counts no frame that is not in the file")
    }

    /// Disk full with `on_disk_error = "continue"`: the take is finalized, the session stays up and armed, and it
    /// does not spin (its CPU stays low after the error).
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func diskFullWithContinuePolicyStaysUpWithoutSpinning() throws {
        let server = try TestEnvironment.server("fullcont")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("fullcont")
        let mount = dir.appendingPathComponent("small").path
        try TestEnvironment.mountSmallDisk(at: mount, megabytes: 2)
        defer { TestEnvironment.unmount(mount) }
        let preset = dir.appendingPathComponent("full.toml").path
        try """
            [session]
            directory = "\(mount)"
            on_disk_error = "continue"
            [recorder]
            channels = 8
            [[connect]]
            from = "system:capture_*"
            to = "tandem-rec:in_*"
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        let run = try TandemProcess(["run", "--no-view", "--control-port", "0", preset], server: server,
                                    log: dir.appendingPathComponent("run.log").path)
        #expect(run.waitFor("take 1 disk error", timeout: 15), "\(run.output)")
        usleep(500_000)
        #expect(run.process.isRunning, "policy continue keeps the session up")
        func ticks() -> Int {
            let stat = (try? String(contentsOfFile: "/proc/\(run.process.pid)/stat", encoding: .utf8)) ?? ""
            let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
            return fields.count > 13 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
        }
        let before = ticks()
        usleep(2_000_000)
        let used = Double(ticks() - before) / Double(sysconf(Int32(_SC_CLK_TCK))) / 2.0
        #expect(used < 0.05, "CPU after the disk error: \(used * 100) % (no busy loop)")
        run.process.signal(SIGTERM)
        #expect(run.process.wait(timeout: 10) == 0)
    }

    /// Rotation whose next chunk name is already taken: the chunk gets a variant name, the existing file is
    /// untouched, and the chunks still join to the whole take.
    @Test func rotationNeverOverwritesAnExistingChunkName() throws {
        let server = try TestEnvironment.server("rotclash")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rotclash")
        let taken = dir.appendingPathComponent("r-001-002.wav").path
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: taken))
        let t = try TandemProcess(["record", "-c", "1", "-d", dir.path, "--session", "r", "--template", "{session}-{take:03}",
                                   "--rotate", "0.5", "-t", "2", "--connect", "system:capture_1"],
                                  server: server, log: dir.appendingPathComponent("rec.log").path)
        #expect(t.process.wait(timeout: 15) == 0, "\(t.output)")
        #expect(try String(contentsOfFile: taken, encoding: .utf8) == "someone else's")
        let report = try TakeReport.read(from: try #require(announcedReport(t.output)))
        #expect(report.chunks.count == 4 && report.chunks[1].files[0].hasSuffix("r-001-002+1.wav"), "\(report.chunks.map(\.files))")
        #expect(report.chunks.map(\.frames).reduce(0, +) == report.frames && report.frames == 2 * 48000)
    }

    @Test func badOptionsExitTwoWithAMessage() throws {
        let server = try TestEnvironment.server("badopt")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("badopt")
        let cases: [([String], String)] = [
            (["record", "--format", "aiff"], "--format"),
            (["record", "-c", "0"], "--channels"),
            (["record", "-d", "/nonexistent/dir"], "/nonexistent/dir"),
            (["record", "--template", "{nope}"], "{nope}"),
            (["record", "--rotate-size", "lots"], "--rotate-size"),
            (["record", "--stop-at", "25:00"], "--stop-at"),
            (["record", "--connect", "nobody:out_.*", "-d", dir.path], "nobody:out_"),
        ]
        for (args, mention) in cases {
            let t = try TandemProcess(args, server: server, log: dir.appendingPathComponent("bad-\(mention.hashValue).log").path)
            #expect(t.process.wait(timeout: 10) == 2, "\(args): \(t.output)")
            #expect(t.output.contains(mention), "\(args) names the problem: \(t.output)")
        }
    }

    @Test func noServerExitsThree() throws {
        let dir = TestEnvironment.temporaryDirectory("noserver")
        let p = try ChildProcess([TestEnvironment.product("tandem"), "record", "-d", dir.path, "--server", "none-\(getpid())"],
                                 outputPath: dir.appendingPathComponent("log").path)
        #expect(p.wait(timeout: 10) == 3)
    }

    /// The demo's private server dies with it, even on SIGKILL.
    @Test func privateServerNeverOutlivesItsOwner() throws {
        let dir = TestEnvironment.temporaryDirectory("owner")
        let log = dir.appendingPathComponent("demo.log").path
        let p = try ChildProcess([TestEnvironment.product("tandem"), "demo", "--seconds", "60", "-d", dir.path],
                                 environment: ["JACK_DEFAULT_SERVER": "absent-\(getpid())"], outputPath: log)
        #expect(TestEnvironment.waitUntil(timeout: 10) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("playing ")
        })
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let name = try #require(text.split(separator: "'").dropFirst().first.map(String.init))
        #expect(JackServer.probe(name))
        p.signal(SIGKILL)
        _ = p.wait(timeout: 5)
        #expect(TestEnvironment.waitUntil(timeout: 5) { !JackServer.probe(name) }, "server \(name) stopped by watchdog")
    }

    /// The demo on a machine with no server: finishes by itself, the take matches the source, nothing left running.
    /// A run in which the server had xruns proves nothing about Tandem (JACK itself may lose a period then, and the
    /// demo says so); one such run is repeated.
    @Test func demoRunsOnAPrivateServerAndVerifiesItsTake() throws {
        let dir = TestEnvironment.temporaryDirectory("demo")
        let log = dir.appendingPathComponent("demo.log").path
        let absent = "absent-demo-\(getpid())"
        var code: Int32?
        var text = ""
        for attempt in 1...2 {
            // Each run in a folder of its own: the demo never overwrites the signal file the run before wrote.
            let runDir = dir.appendingPathComponent("run-\(attempt)")
            try FileManager.default.createDirectory(at: runDir, withIntermediateDirectories: true)
            let p = try ChildProcess([TestEnvironment.product("tandem"), "demo", "--seconds", "3", "-d", runDir.path],
                                     environment: ["JACK_DEFAULT_SERVER": absent], outputPath: log)
            code = p.wait(timeout: 30)
            text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if code == nil {
                // Hung once in many runs without a line of output: keep where it was stuck.
                text += "\n(no exit within 30 s)\n" + hangReport(p.pid)
                p.stop()
            }
            let xruns = text.firstMatch(of: /, (\d+) xruns/).flatMap { Int($0.1) } ?? 0
            if code == 0 || xruns == 0 || attempt == 2 { break }
            print("demo run \(attempt) had \(xruns) server xruns and did not verify; once more:\n\(text)")
        }
        #expect(code == 0, "\(text)")
        #expect(text.contains("started a private dummy server"), "\(text)")
        #expect(text.contains("verified: 144000 of 144000 source frames arrived bit for bit"), "\(text)")
        #expect(text.contains("stopped the private server"))
        let name = try #require(text.split(separator: "'").dropFirst().first.map(String.init))
        #expect(!JackServer.probe(name))
        let leftovers = try TestEnvironment.run(["pgrep", "-f", "jackd -n \(name) "])
        #expect(leftovers.code != 0, "no jackd left: \(leftovers.output)")
    }
}
