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
        sourceState.pointee.started.store(1)
        usleep(3_500_000)                      // armed for 3.5 s: more than the pre-roll has played
        let startCommand = recorder.streamPosition
        recorder.startTake(at: startCommand)
        usleep(1_000_000)
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
        sourceState.pointee.started.store(1)
        usleep(500_000)
        _ = recorder.readMeters()
        usleep(1_000_000)
        let m = recorder.readMeters()
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
