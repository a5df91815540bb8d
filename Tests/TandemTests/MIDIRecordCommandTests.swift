import Takes
import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// `tandem record --midi-port`: the take's MIDI file beside the audio, and the kill -9 promise for it.
@Suite(.serialized) struct MIDIRecordCommandTests {
    /// Killed with SIGKILL at seeded moments while a MIDI stream flows: each time the MIDI file reads in mido
    /// without repair, holds a prefix of what was sent (every event at its frame, nothing but what was sent), short
    /// of the kill by at most the unflushed part (~50 ms; 300 ms allowed); the next start completes the take and the file still reads.
    /// Three kills in `make test`, five in `make soak` (the same seeded moments, the first of them).
    @Test func killNineLeavesAReadableMIDIFileAndTheNextStartCompletesIt() throws {
        let kills = SoakSize.pick(test: 3, soak: 5)
        let server = try TestEnvironment.server("midikill9")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("midikill9")
        let source = try MIDISender(name: "msrc", server: server.name)
        var rng: UInt64 = 0x5EED_0909
        var previous: (sidecar: String, midi: String, count: Int)?
        for trial in 0...kills {
            let t = try TandemProcess(["record", "-c", "1", "-d", dir.path, "--midi-port", "midi_in",
                                       "--connect", "system:capture_1"],
                                      server: server, log: dir.appendingPathComponent("t\(trial).log").path)
            #expect(t.waitFor(" recording: "), "trial \(trial): \(t.output)")
            if let p = previous {
                #expect(try TakeReport.read(from: p.sidecar).ended == .interrupted)
                #expect(try Mido.frames(p.midi, rate: 48000).events.count == p.count, "trial \(trial)")
            }
            if trial == kills {
                t.process.signal(SIGTERM)
                #expect(t.process.wait(timeout: 10) == 0)
                break
            }
            try source.client.connect("msrc:midi_out", "tandem-rec:midi_in")
            // 1000 events a second from a moment just ahead.
            let first = source.frameTime + 4800
            var sent: [(frame: Int, bytes: [UInt8])] = []
            for i in 0..<3000 {
                let bytes: [UInt8] = [0xB0 | UInt8(i % 16), UInt8(i % 120), UInt8(i / 120 % 128)]
                sent.append((first + i * 48, bytes))
                source.send(frame: first + i * 48, bytes: bytes)
            }
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let fraction: Double = Double(rng >> 40) / 16_777_216.0
            let delay: Double = 0.5 + fraction * 2.0
            usleep(UInt32(delay * 1_000_000))
            let killedAt = source.frameTime
            t.process.signal(SIGKILL)
            _ = t.process.wait(timeout: 5)
            _ = TestEnvironment.waitUntil(timeout: 5) { source.pending == 0 }     // the rest goes nowhere
            let audio = try #require(t.output.split(separator: "\n").compactMap { line -> String? in
                guard let r = line.range(of: " recording: ") else { return nil }
                return String(line[r.upperBound...]).trimmingCharacters(in: .whitespaces)
            }.first)
            let sidecar = (audio as NSString).deletingPathExtension + ".json"
            let midi = (audio as NSString).deletingPathExtension + ".mid"
            let report = try TakeReport.read(from: sidecar)
            let got = try Mido.frames(midi, rate: 48000).events      // throws if mido cannot read it
            let start = Int(report.startFrameTime)
            let expectedSent = sent.filter { $0.frame < killedAt }.count
            // Lost at most: what arrived since the last flush (the writer flushes every ~50 ms; 300 ms allowed).
            #expect(got.count <= expectedSent + 20 && got.count >= expectedSent - 300,
                    "trial \(trial): \(got.count) events in the file, \(expectedSent) sent before the kill")
            let moved = zip(got, sent).filter { g, s in (start + g.frame) & 0xFFFF_FFFF != s.frame & 0xFFFF_FFFF
                || g.hex != Mido.hex(s.bytes) }.count
            #expect(moved == 0, "trial \(trial): \(moved) events moved or differ")
            previous = (sidecar, midi, got.count)
        }
    }
}
