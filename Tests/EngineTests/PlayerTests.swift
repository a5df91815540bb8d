import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// In-process player tests: the player plays into an in-process capture client on a private server.
@Suite(.serialized) struct PlayerTests {
    struct Rig {
        let server: JackServer
        let dir: URL
        let player: Player
        let capture: TestCapture

        init(_ label: String, channels: Int, captureSeconds: Double = 12, configure: (inout PlayerConfig) -> Void)
            throws {
            server = try TestEnvironment.server(label)
            dir = TestEnvironment.temporaryDirectory(label)
            capture = try TestCapture(name: "cap", server: server.name, channels: channels, seconds: captureSeconds)
            var c = PlayerConfig()
            c.ports = (1...channels).map { "out_\($0)" }
            c.startImmediately = false
            configure(&c)
            player = try Player(config: c, server: server.name)
            for i in 1...channels { try player.client.connect("tandem-play:out_\(i)", "cap:in_\(i)") }
        }

        /// Plays until the queue has finished (or `seconds` pass), then stops everything and returns the capture.
        func playOut(seconds: Double = 20, start: Bool = true) -> (samples: [Float], events: [PlayerEvent]) {
            player.waitForFill(seconds: 5)
            if start { player.play() }
            var events: [PlayerEvent] = []
            _ = TestEnvironment.waitUntil(timeout: seconds) {
                events += player.drainEvents()
                return events.contains(.queueFinished)
            }
            usleep(100_000)
            player.close()
            capture.close()
            server.stop()
            return (capture.samples(), events)
        }

        func file(_ name: String, _ samples: [Float], channels: Int, rate: Int = 48000) throws -> String {
            let path = dir.appendingPathComponent(name).path
            try TestEnvironment.writeWAV(samples, channels: channels, sampleRate: rate, path: path)
            return path
        }
    }

    @Test func twoQueuedFilesArriveAsTheirExactConcatenation() throws {
        var rig: Rig!
        rig = try Rig("gapless", channels: 2) { _ in }
        let a = Signals.noise(frames: 30_001, channels: 2, seed: 1)   // odd lengths: no period alignment
        let b = Signals.noise(frames: 20_011, channels: 2, seed: 2)
        let pa = try rig.file("a.wav", a, channels: 2), pb = try rig.file("b.wav", b, channels: 2)
        rig.player.load([pa, pb])
        let out = rig.playOut()
        let alignment = AudioCompare.align(source: a + b, recorded: out.samples, channels: 2)
        let m = try #require(alignment)
        #expect(m.matchedFrames == 50_012 && m.mismatchedFrames == 0 && m.extraFrames == 0, "\(m)")
        #expect(out.events.contains(.itemStarted(item: 1, path: pb)))
    }

    @Test func aLoopedFileRepeatsExactly() throws {
        let rig = try Rig("loop", channels: 1) { $0.loop = .item }
        let a = Signals.noise(frames: 12_345, channels: 1, seed: 3)
        rig.player.load([try rig.file("a.wav", a, channels: 1)])
        _ = rig.playOut(seconds: 1.2)
        let got = rig.capture.samples()
        let start = try #require(got.firstIndex { $0 != 0 })
        let repeats = (got.count - start) / a.count
        #expect(repeats >= 3)
        let expected = Array((0..<repeats).map { _ in a }.joined())
        #expect(Array(got[start..<(start + expected.count)]) == expected)
    }

    @Test func seekDeliversTheFileFromThatFrame() throws {
        let rig = try Rig("seek", channels: 2) { _ in }
        let a = Signals.noise(frames: 48_000, channels: 2, seed: 4)
        rig.player.load([try rig.file("a.wav", a, channels: 2)], frame: 12_345)
        let out = rig.playOut()
        let tail = Array(a[(12_345 * 2)...])
        let m = AudioCompare.alignment(source: tail, recorded: out.samples, channels: 2)
        #expect(m.matchedFrames == 48_000 - 12_345 && m.mismatchedFrames == 0 && m.extraFrames == 0, "\(m)")
    }

    @Test func aCorruptFileBetweenTwoGoodOnesIsReportedAndSkipped() throws {
        let rig = try Rig("corrupt", channels: 1) { _ in }
        let a = Signals.noise(frames: 10_000, channels: 1, seed: 5)
        let c = Signals.noise(frames: 10_000, channels: 1, seed: 6)
        let bad = rig.dir.appendingPathComponent("bad.wav").path
        try Data("RIFF....WAVEfmt this is not audio".utf8).write(to: URL(fileURLWithPath: bad))
        rig.player.load([try rig.file("a.wav", a, channels: 1), bad, try rig.file("c.wav", c, channels: 1)])
        let out = rig.playOut()
        let failures = out.events.filter { if case .itemFailed(1, bad, _) = $0 { return true } else { return false } }
        #expect(failures.count == 1)
        let m = AudioCompare.alignment(source: a + c, recorded: out.samples, channels: 1)
        #expect(m.matchedFrames == 20_000 && m.mismatchedFrames == 0, "\(m)")
    }

    @Test func monoPlaysOnEveryPortAndAnExplicitMapSwaps() throws {
        let mono = try Rig("mono", channels: 2) { _ in }
        let a = Signals.noise(frames: 5_000, channels: 1, seed: 7)
        mono.player.load([try mono.file("m.wav", a, channels: 1)])
        let out = mono.playOut().samples
        let both = a.flatMap { [$0, $0] }
        let straight = AudioCompare.alignment(source: both, recorded: out, channels: 2)
        #expect(straight.matchedFrames == 5_000, "\(straight)")

        let swap = try Rig("swap", channels: 2) { $0.channelMap = [2, 1] }
        let st = Signals.noise(frames: 5_000, channels: 2, seed: 8)
        swap.player.load([try swap.file("s.wav", st, channels: 2)])
        let swapped = stride(from: 0, to: st.count, by: 2).flatMap { [st[$0 + 1], st[$0]] }
        let crossed = AudioCompare.alignment(source: swapped, recorded: swap.playOut().samples, channels: 2)
        #expect(crossed.matchedFrames == 5_000, "\(crossed)")
    }

    /// A 44.1 kHz 1 kHz sine on a 48 kHz server plays at 1 kHz, for the right length, with low distortion.
    @Test(arguments: [(ResampleQuality.low, -110.0), (.medium, -110.0), (.high, -128.0), (.veryHigh, -135.0)])
    func resampledSinePlaysAtItsPitch(quality: ResampleQuality, limit: Double) throws {
        let rig = try Rig("resample", channels: 1) { $0.resampleQuality = quality }
        let sine = Signals.sine(frames: 2 * 44100, channels: 1, frequency: 1000, sampleRate: 44100, peak: 0.5)
        rig.player.load([try rig.file("s441.wav", sine, channels: 1, rate: 44100)])
        let got = rig.playOut().samples
        let first = try #require(got.firstIndex { $0 != 0 })
        let last = try #require(got.lastIndex { abs($0) > 1e-4 })
        let length = Double(last - first + 1) / 48000
        #expect(abs(length - 2.0) < 0.002, "length \(length) s")
        // Frequency and THD+N from a least-squares sine fit over the steady middle second.
        let mid = Array(got[(first + 24000)..<(first + 72000)])
        let fit = SineFit.fit(mid, sampleRate: 48000, around: 1000)
        #expect(abs(fit.frequency - 1000) < 0.05, "frequency \(fit.frequency) Hz")
        #expect(fit.thdPlusNoiseDB < limit, "THD+N \(fit.thdPlusNoiseDB) dB")
        let line = String(format: "%@: length %.5f s, frequency %.4f Hz, THD+N %.1f dB\n", quality.rawValue, length,
                          fit.frequency, fit.thdPlusNoiseDB)
        if let h = FileHandle(forWritingAtPath: "/tmp/tandem-resample-measurement.txt") {
            h.seekToEndOfFile()
            h.write(Data(line.utf8))
        } else {
            try? line.write(toFile: "/tmp/tandem-resample-measurement.txt", atomically: true, encoding: .utf8)
        }
    }

    /// 64 channels at a 256-frame period for 6 s (30 s in `make soak`), a 3 s file looped twice: no underrun after
    /// the start. The test waits on the player's own played-frames counter, not the clock.
    @Test func sixtyFourChannelsPlayWithoutUnderruns() throws {
        let seconds = SoakSize.pick(test: 6, soak: 30)
        let server = try TestEnvironment.server("p64", period: 256)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("p64")
        let path = dir.appendingPathComponent("n64.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 3 * 48000, channels: 64, seed: 9), channels: 64, path: path)
        var c = PlayerConfig()
        c.ports = (1...64).map { "out_\($0)" }
        c.queue = [path]
        c.loop = .item
        let player = try Player(config: c, server: server.name)
        let sink = try TestCapture(name: "sink", server: server.name, channels: 64, seconds: 1)
        for i in 1...64 { try player.client.connect("tandem-play:out_\(i)", "sink:in_\(i)") }
        let startUnderruns = player.underrunFrames
        let target = player.playedFrames + seconds * 48000
        let reached = TestEnvironment.waitUntil(timeout: Double(seconds) + 10) { player.playedFrames >= target }
        let played = player.playedFrames
        let underruns = player.underrunFrames - startUnderruns
        player.close()
        sink.close()
        #expect(reached, "played \(played) of \(target) frames in \(seconds + 10) s")
        #expect(underruns == 0, "underrun frames \(underruns)")
    }
}

@Suite(.serialized) struct BadAudioFileTests {
    /// Every kind of bad file in one queue between good ones: each gets a clear error naming it, and the good
    /// files play completely.
    @Test func eachBadFileIsNamedAndTheQueueGoesOn() throws {
        let rig = try PlayerTests.Rig("badfiles", channels: 1) { _ in }
        let dir = rig.dir
        let good = Signals.noise(frames: 6000, channels: 1, seed: 42)
        let goodPath = try rig.file("good.wav", good, channels: 1)
        func write(_ name: String, _ bytes: [UInt8]) throws -> String {
            let p = dir.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: p))
            return p
        }
        let wavBytes = Array(try Data(contentsOf: URL(fileURLWithPath: goodPath)))
        let empty = try write("empty.wav", [])
        let shortHeader = try write("short-header.wav", Array(wavBytes.prefix(20)))
        let header = wavBytes.count - 3 * good.count            // 24-bit mono: 3 bytes a frame
        let truncated = try write("truncated-data.wav", Array(wavBytes.prefix(header + 3 * 3000)))
        let random = try write("random.wav", (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) })
        let unsupported = try write("picture.flac", Array("<svg xmlns='http://www.w3.org/2000/svg'/>".utf8))
        let missing = dir.appendingPathComponent("missing.wav").path
        let folder = dir.path
        let queue = [goodPath, empty, shortHeader, truncated, random, unsupported, missing, folder, goodPath]
        rig.player.load(queue)
        let out = rig.playOut(seconds: 20)
        var failures: [String: String] = [:]
        for e in out.events { if case .itemFailed(_, let path, let message) = e { failures[path] = message } }
        for bad in [empty, shortHeader, truncated, random, unsupported, missing, folder] {
            #expect(failures[bad]?.contains(bad) == true, "\(bad): \(String(describing: failures[bad]))")
        }
        #expect(failures[truncated]?.contains("truncated") == true, "\(String(describing: failures[truncated]))")
        #expect(failures[missing]?.contains("no such file") == true)
        #expect(failures[folder]?.contains("directory") == true)
        // Both good copies play in full, with the readable part of the truncated file between them.
        let partial = Array(good.prefix(3000))
        let m = AudioCompare.align(source: good + partial + good, recorded: out.samples, channels: 1)
        #expect(m?.matchedFrames == 15000 && m?.mismatchedFrames == 0, "\(String(describing: m))")
    }
}
