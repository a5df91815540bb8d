import Takes
import Testing
import Foundation
import Engine
import Jack
import SoundFile
import TestSupport

/// In-process recorder tests against a private server; serialized (one server per process at a time).
@Suite(.serialized) struct RecorderTests {
    func config(_ dir: URL, client: String, channels: Int) -> RecorderConfig {
        var c = RecorderConfig()
        c.clientName = client
        c.ports = (1...channels).map { "in_\($0)" }
        c.directory = dir.path
        c.session = client
        c.template = "{session}-{take:03}"
        return c
    }

    func finishedReports(_ recorder: Recorder) -> [(TakeReport, String)] {
        recorder.drainEvents().compactMap {
            if case .takeFinished(let r, let path) = $0 { return (r, path) }
            return nil
        }
    }

    /// Rotation every second over a 10 s take: the chunks, concatenated, equal a continuous recording of the same
    /// signal made in the same run, and each equals the source.
    @Test func rotatedChunksConcatenateToTheContinuousRecording() throws {
        let server = try TestEnvironment.server("rotate")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("rotate")
        let channels = 2
        let noise = Signals.noise(frames: 10 * 48000, channels: channels, seed: 99)
        let (source, sourceState) = try LoopState.source(name: "src", server: server.name, channels: channels,
                                                         samples: noise)
        var rotating = config(dir, client: "rot", channels: channels)
        rotating.rotateSeconds = 1
        let chunked = try Recorder(config: rotating, server: server.name)
        let continuous = try Recorder(config: config(dir, client: "cont", channels: channels), server: server.name)
        for c in 1...channels {
            try source.connect("src:out_\(c)", "rot:in_\(c)")
            try source.connect("src:out_\(c)", "cont:in_\(c)")
        }
        chunked.startTake()
        continuous.startTake()
        usleep(200_000)
        sourceState.pointee.started.store(1)
        #expect(TestEnvironment.waitUntil(timeout: 20) { sourceState.pointee.ring.fill == 0 })
        usleep(300_000)
        chunked.close()
        continuous.close()
        source.close()
        LoopState.free(sourceState)

        let chunkReport = try #require(finishedReports(chunked).first)
        let reference = try #require(finishedReports(continuous).first)
        #expect(chunkReport.0.chunks.count >= 10)
        #expect(chunkReport.0.chunks.dropLast().allSatisfy { $0.frames == 48000 }, "every full chunk is 1 s exactly")
        #expect(chunkReport.0.chunks.map(\.frames).reduce(0, +) == chunkReport.0.frames)

        var joined: [Float] = []
        for chunk in chunkReport.0.chunks { joined += try TestEnvironment.readAudio(chunk.files[0]).samples }
        let stitched = try Stitcher.stitch(reportPath: chunkReport.1)
        let stitchedAudio = try TestEnvironment.readAudio(stitched[0]).samples
        #expect(stitchedAudio == joined)
        let referenceAudio = try TestEnvironment.readAudio(reference.0.chunks[0].files[0]).samples

        let a = AudioCompare.align(source: noise, recorded: joined, channels: channels)
        let b = AudioCompare.align(source: noise, recorded: referenceAudio, channels: channels)
        #expect(a?.matchedFrames == noise.count / channels && a?.mismatchedFrames == 0, "\(String(describing: a))")
        #expect(b?.matchedFrames == noise.count / channels && b?.mismatchedFrames == 0, "\(String(describing: b))")
        // Same signal at the same alignment in both recordings of the run, sample for sample.
        if let a, let b {
            let aSlice = joined[(a.recordedOffset * channels)...].prefix(noise.count)
            let bSlice = referenceAudio[(b.recordedOffset * channels)...].prefix(noise.count)
            #expect(Array(aSlice) == Array(bSlice))
        }
    }

    /// A 2 s pre-roll: the take holds the 2 s of signal before the start command. The source is a ramp whose
    /// value is its own frame number, so every recorded frame says which source frame it is.
    @Test func prerollHoldsTheSignalBeforeTheStartCommand() throws {
        let server = try TestEnvironment.server("preroll")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("preroll")
        let ramp = (0..<(8 * 48000)).map { Float($0 + 1) / 8_388_608 }
        let (source, sourceState) = try LoopState.source(name: "src", server: server.name, channels: 1, samples: ramp)
        var c = config(dir, client: "pre", channels: 1)
        c.prerollSeconds = 2
        let recorder = try Recorder(config: c, server: server.name)
        try source.connect("src:out_1", "pre:in_1")
        let armed = recorder.streamPosition
        sourceState.pointee.started.store(1)
        // Armed for 2.5 s of the recorder's own frames: more than the pre-roll holds.
        #expect(TestEnvironment.waitUntil(timeout: 10) { recorder.streamPosition >= armed + 120_000 })
        let startCommand = recorder.streamPosition
        recorder.startTake(at: startCommand)
        // The take past its pre-roll by more than the 40,000 frames checked below, as the writer counts them.
        #expect(TestEnvironment.waitUntil(timeout: 10) { (recorder.takeStatus?.frames ?? 0) >= 96000 + 48000 })
        recorder.close()
        source.close()
        LoopState.free(sourceState)

        let (report, _) = try #require(finishedReports(recorder).first)
        #expect(report.prerollFrames == 96000)
        #expect(report.streamStart == startCommand - 96000)
        let audio = try TestEnvironment.readAudio(report.chunks[0].files[0]).samples
        #expect(audio.count >= 96000 + 40000)
        // Continuous ramp from the first frame: nothing lost or repeated in the pre-roll or after it.
        let first = Int((audio[0] * 8_388_608).rounded())
        #expect(first > 1000, "the pre-roll holds signal, not silence")
        let breaks = (1..<audio.count).filter { Int((audio[$0] * 8_388_608).rounded()) != first + $0 }.count
        #expect(breaks == 0)
    }

    /// Meters: a sine at -6 dBFS peak reads -6.0 dB peak and -9.0 dB RMS.
    @Test func metersReadPeakAndRms() throws {
        let server = try TestEnvironment.server("meter")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("meter")
        let peak = pow(10, -6.0 / 20)
        let sine = Signals.sine(frames: 4 * 48000, channels: 2, frequency: 1000, sampleRate: 48000, peak: peak)
        let silentSecond = sine.enumerated().map { $0.offset % 2 == 1 ? Float(0) : $0.element }
        let (source, sourceState) = try LoopState.source(name: "src", server: server.name, channels: 2,
                                                         samples: silentSecond)
        let recorder = try Recorder(config: config(dir, client: "met", channels: 2), server: server.name)
        try source.connect("src:out_1", "met:in_1")
        try source.connect("src:out_2", "met:in_2")
        let armed = recorder.streamPosition
        sourceState.pointee.started.store(1)
        // Past the first cycles of signal, the meters are reset, then read after half a second of the sine.
        #expect(TestEnvironment.waitUntil(timeout: 10) { recorder.streamPosition >= armed + 4800 })
        _ = recorder.readMeters()
        let from = recorder.streamPosition
        #expect(TestEnvironment.waitUntil(timeout: 10) { recorder.streamPosition >= from + 24000 })
        let m = recorder.readMeters() ?? []
        recorder.close()
        source.close()
        LoopState.free(sourceState)
        #expect(abs(MeterReading.decibels(m[0].peak) - -6.0) < 0.1, "peak \(MeterReading.decibels(m[0].peak))")
        #expect(abs(MeterReading.decibels(m[0].rms) - -9.0) < 0.1, "rms \(MeterReading.decibels(m[0].rms))")
        #expect(m[1].peak == 0)
    }

    @Test func missingDirectoryIsAClearErrorBeforeAnythingStarts() {
        var c = RecorderConfig()
        c.directory = "/nonexistent/tandem-\(getpid())"
        #expect {
            _ = try Recorder(config: c, server: "unused-\(getpid())")
        } throws: { e in
            let e = e as! EngineError
            return e.code == .badDirectory && e.message.contains("/nonexistent/tandem-")
        }
    }

    @Test func templateProblemsAreListed() {
        var c = RecorderConfig()
        c.template = "{session}-{bogus}/x"
        c.ports = ["a", "a"]
        c.format = AudioFormat(container: .flac, sample: .float32)
        let p = c.problems().joined(separator: "\n")
        #expect(p.contains("{bogus}") && p.contains("'/'") && p.contains("unique") && p.contains("FLAC"))
    }
}

@Suite(.serialized) struct RecorderFileTests {
    func ramp(_ seconds: Int, channels: Int = 1) -> [Float] {
        (0..<(seconds * 48000)).flatMap { f in (0..<channels).map { c in Float(f + 1 + c * 1_000_000) / 8_388_608 } }
    }

    func record(_ label: String, seconds: Double, channels: Int = 1, configure: (inout RecorderConfig) -> Void)
        throws -> (report: TakeReport, sidecar: String, source: [Float]) {
        try recordMeasured(label, seconds: seconds, channels: channels, configure: configure).0
    }

    /// As `record`, also returning the recorder's worst process cycle in nanoseconds.
    func recordMeasured(_ label: String, seconds: Double, channels: Int = 1, configure: (inout RecorderConfig) -> Void)
        throws -> ((report: TakeReport, sidecar: String, source: [Float]), Int) {
        let server = try TestEnvironment.server(label)
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory(label)
        let signal = ramp(Int(seconds) + 1, channels: channels)
        let (source, sourceState) = try LoopState.source(name: "src", server: server.name, channels: channels,
                                                         samples: signal)
        var c = RecorderConfig()
        c.clientName = "rec"
        c.ports = (1...channels).map { "in_\($0)" }
        c.directory = dir.path
        c.session = label
        configure(&c)
        let recorder = try Recorder(config: c, server: server.name)
        for i in 1...channels { try source.connect("src:out_\(i)", "rec:in_\(i)") }
        recorder.startTake()
        usleep(100_000)
        sourceState.pointee.started.store(1)
        usleep(UInt32(seconds * 1_000_000))
        let worstCycle = recorder.cycleCost.max
        recorder.close()
        source.close()
        LoopState.free(sourceState)
        let finished = recorder.drainEvents().compactMap { e -> (TakeReport, String)? in
            if case .takeFinished(let r, let p) = e { return (r, p) }
            return nil
        }
        let (report, sidecar) = try #require(finished.first)
        return ((report, sidecar, signal), worstCycle)
    }

    /// A writer stalled for 2 s with a 0.5 s ring: the RT side drops and counts, the sidecar says where, the file
    /// keeps its timeline with silence in the gap, and the take goes on afterwards.
    @Test func slowDiskDropsAreCountedPlacedAndFilledWithSilence() throws {
        let ((report, sidecar, _), worstCycle) = try recordMeasured("stall", seconds: 5) {
            $0.ringSeconds = 0.5
            $0.faults = RecorderFaults(stallAfterSeconds: 1, stallSeconds: 2)
        }
        // The RT side never waited for the stalled writer: its worst cycle stayed far below the period (21 ms).
        // A callback that waited for the writer would take the stall's 2 s; the bound is half the period (10.7 ms), far
        // above what a callback that never waits takes, even when a test server without RT priority preempts it
        // (1.0–3.3 ms seen on this 2-core box), and far below any wait.
        #expect(worstCycle < 10_000_000, "worst process cycle \(worstCycle) ns during the stall")
        #expect(report.droppedFrames > 48000, "about 1.5 s dropped: \(report.droppedFrames)")
        #expect(!report.drops.isEmpty)
        // Overruns only: a cycle the server skipped under load is a gap of another cause (`missedCycles`), counted apart.
        #expect(report.drops.filter { $0.cause == .overrun }.map(\.frames).reduce(0, +) == report.droppedFrames)
        let onDisk = try TakeReport.read(from: sidecar)
        #expect(onDisk.droppedFrames == report.droppedFrames && onDisk.drops.count == report.drops.count)
        let audio = try TestEnvironment.readAudio(report.chunks[0].files[0]).samples
        #expect(audio.count == report.frames)
        var inGap = [Bool](repeating: false, count: audio.count)
        for d in report.drops { for i in d.atFrame..<min(audio.count, d.atFrame + d.frames) { inGap[i] = true } }
        let firstSignal = try #require(audio.firstIndex { $0 != 0 })
        let base = Int((audio[firstSignal] * 8_388_608).rounded()) - firstSignal
        var wrong = 0
        for i in firstSignal..<audio.count {
            let v = Int((audio[i] * 8_388_608).rounded())
            if inGap[i] { if v != 0 { wrong += 1 } } else if v != base + i && v != 0 { wrong += 1 }
        }
        #expect(wrong == 0, "signal outside the gaps sits at its original time; the gaps are silent")
        #expect(audio[(report.drops.last!.atFrame + report.drops.last!.frames)...].contains { $0 != 0 },
                "the take goes on after the stall")
    }

    /// A client before the recorder in the graph runs late, so the server runs cycles without it and the recorder.
    /// The audio of those cycles never reaches Tandem. The take goes on without a gap; the report counts the
    /// frames as missed (not as overruns) and notes every jump of the server's time. The source's samples are
    /// their own frame times, so every jump in the data is found and held against the report: the same number of
    /// jumps, the same sizes, each noted at most one period before it shows in the data (JACK's frame time is the
    /// engine's current cycle, which a late callback can read one cycle early; the next cycle then corrects it).
    @Test func cyclesTheServerSkipsAreCountedAndPlaced() throws {
        let server = try TestEnvironment.server("missed")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("missed")
        let (late, lateState) = try LoopState.lateClock(name: "late", server: server.name, stallEvery: 25,
                                                        stallMicros: 60_000)
        var c = RecorderConfig()
        c.clientName = "rec"
        c.ports = ["in_1"]
        c.directory = dir.path
        c.session = "missed"
        let recorder = try Recorder(config: c, server: server.name)
        let period = recorder.client.bufferSize
        try late.connect("late:out_1", "rec:in_1")
        usleep(200_000)
        recorder.startTake()
        lateState.pointee.started.store(1)
        usleep(4_000_000)
        lateState.pointee.started.store(0)     // no stall around the end of the take
        usleep(300_000)
        let missedLive = recorder.missedFrames
        recorder.close()
        late.close()
        LoopState.free(lateState)
        let finished = recorder.drainEvents().compactMap { e -> (TakeReport, String)? in
            if case .takeFinished(let r, let p) = e { return (r, p) }
            return nil
        }
        let (report, sidecar) = try #require(finished.first)

        let missed = report.drops.filter { $0.cause == .missedCycles }
        #expect(!missed.isEmpty)
        #expect(missed.allSatisfy { $0.silence == false && $0.frames > 0 })
        #expect(report.missedFrames == missed.map(\.frames).reduce(0, +))
        #expect(missedLive >= report.missedFrames ?? 0, "the live count has them too")
        #expect(report.droppedFrames == 0 && !report.drops.contains { $0.cause == .overrun })
        #expect(try TakeReport.read(from: sidecar).missedFrames == report.missedFrames)

        let audio = try TestEnvironment.readAudio(report.chunks[0].files[0]).samples
        #expect(audio.count == report.frames)
        // The late client labels its samples with the same clock, so its labels have the same one-cycle slip: a
        // step back right after a jump is netted with it, as the recorder nets its notes.
        var jumps: [(at: Int, frames: Int)] = []
        for i in 1..<audio.count {
            let step = LoopState.labelStep(audio[i - 1], audio[i])
            if step == 0 { continue }
            if step < 0, let last = jumps.last, i - last.at <= period {
                jumps[jumps.count - 1].frames += step
                if jumps[jumps.count - 1].frames == 0 { jumps.removeLast() }
            } else {
                jumps.append((i, step))
            }
        }
        // A late cycle of the client writes the labels of the cycle after it, and the next cycle writes them again:
        // the recorder counts that pair as a lost period and a repeated one (`repeated-cycle`); the data's labels,
        // netted, show neither. Net the report's notes the same way.
        var net: [TakeReport.Drop] = []
        for d in report.drops where d.cause == .missedCycles || d.cause == .repeatedCycle {
            if d.cause == .repeatedCycle, let last = net.last, d.atFrame - last.atFrame <= period {
                net[net.count - 1].frames -= d.frames
                if net[net.count - 1].frames == 0 { net.removeLast() }
            } else if d.cause == .missedCycles {
                net.append(d)
            }
        }
        let repeated = report.repeatedFrames ?? 0
        #expect(jumps.count >= 3, "the late client made the server skip cycles: \(jumps)")
        #expect(jumps.map(\.frames).reduce(0, +) == (report.missedFrames ?? 0) - repeated,
                "every skipped frame counted: \(jumps) vs \(missed), repeated \(repeated)")
        #expect(jumps.count == net.count, "one note per jump: \(jumps) vs \(net)")
        for (j, d) in zip(jumps, net) {
            #expect(j.frames == d.frames && j.at >= d.atFrame && j.at <= d.atFrame + period,
                    "data jumps \(j.frames) at \(j.at), noted \(d.frames) at \(d.atFrame)")
        }
    }

    @Test func stemsWriteOneMonoFilePerChannel() throws {
        let (report, _, source) = try record("stems", seconds: 2, channels: 3) { $0.stems = true }
        let files = report.chunks[0].files
        #expect(files.count == 3 && files[1].hasSuffix("-in_2.wav"))
        for (c, f) in files.enumerated() {
            let audio = try TestEnvironment.readAudio(f)
            #expect(audio.channels == 1 && audio.samples.count == report.frames)
            let channelSource = stride(from: c, to: source.count, by: 3).map { source[$0] }
            let a = AudioCompare.align(source: Array(channelSource.prefix(48000)), recorded: audio.samples, channels: 1)
            #expect(a?.mismatchedFrames == 0 && a?.matchedFrames == 48000, "stem \(c + 1)")
        }
    }

    @Test func sizeRotationKeepsEveryChunkUnderTheLimit() throws {
        let limit = 100_000
        let (report, _, _) = try record("size", seconds: 3, channels: 2) {
            $0.rotateBytes = limit
            $0.format = AudioFormat(container: .wav, sample: .int16)
        }
        #expect(report.chunks.count >= 3)
        for chunk in report.chunks {
            let size = try FileManager.default.attributesOfItem(atPath: chunk.files[0])[.size] as! Int
            #expect(size <= limit, "\(chunk.files[0]) is \(size) bytes")
        }
        #expect(report.chunks.map(\.frames).reduce(0, +) == report.frames)
    }

    @Test func flacTakeIsLosslessAndWavCarriesItsTimeReference() throws {
        let (flac, _, source) = try record("flac", seconds: 2, channels: 2) {
            $0.format = AudioFormat(container: .flac, sample: .int24)
        }
        let audio = try TestEnvironment.readAudio(flac.chunks[0].files[0]).samples
        let a = AudioCompare.align(source: Array(source.prefix(2 * 48000)), recorded: audio, channels: 2)
        #expect(a?.matchedFrames == 48000 && a?.mismatchedFrames == 0)

        let (wav, _, _) = try record("bext", seconds: 1) { _ in }
        let reference = try SoundFileReader(path: wav.chunks[0].files[0]).broadcastTimeReference
        let reported = ISO8601DateFormatter().date(from: wav.startedAt.replacingOccurrences(of: #"\.\d+"#, with: "",
                                                                                          options: .regularExpression))
        let secondsOfDay = Double(try #require(reference)) / 48000
        let midnight = Calendar.current.startOfDay(for: try #require(reported))
        #expect(abs(secondsOfDay - reported!.timeIntervalSince(midnight)) < 1.5)
    }
}
