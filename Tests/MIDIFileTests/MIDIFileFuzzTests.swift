import Foundation
@testable import MIDIFile
import Testing
import TestSupport

/// Random mutations of valid files: every one is either read or refused with a `MIDIFileError`; none traps (a trap
/// ends the test process, which fails the run). `recover` is fed the same bytes. CI-sized by default;
/// `TANDEM_MIDI_FUZZ_COUNT` and `TANDEM_MIDI_FUZZ_SEED` make it bigger or different.
@Suite struct MIDIFileFuzzTests {
    struct Rng {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
    }

    /// A valid file with a bit of everything: tempo changes, running status, SysEx with continuation, meta events.
    static func seedFile(_ rng: inout Rng) -> [UInt8] {
        var tracks: [[UInt8]] = []
        for t in 0..<(1 + rng.below(3)) {
            var body: [UInt8] = []
            if t == 0 { body += [0x00] + SMF.tempo(400_000 + rng.below(400_000)) }
            for _ in 0..<rng.below(40) {
                body += SMF.vlq(rng.below(3) == 0 ? rng.below(1 << 20) : rng.below(200))
                switch rng.below(6) {
                case 0: body += SMF.tempo(1 + rng.below(1_000_000))
                case 1: body += [0xF0, 0x03, 0x43, 0x10, 0xF7]
                case 2: body += [0xF0, 0x02, 0x43, 0x10] + [0x00, 0xF7, 0x01, 0xF7]
                case 3: body += [0xFF, 0x01, 0x03, 0x61, 0x62, 0x63]
                default: body += [0x90 | UInt8(rng.below(16)), UInt8(rng.below(128)), UInt8(rng.below(128)),
                                  0x00, UInt8(rng.below(128)), 0]   // and one with running status
                }
            }
            tracks.append(body)
        }
        var bytes = SMF.header(format: tracks.count > 1 ? 1 : 0, tracks: tracks.count, division: 1 + rng.below(960))
        for body in tracks { bytes += SMF.track(body) }
        return bytes
    }

    static func mutate(_ input: [UInt8], _ rng: inout Rng) -> [UInt8] {
        var b = input
        for _ in 0..<(1 + rng.below(2)) {
            guard !b.isEmpty else { break }
            switch rng.below(7) {
            case 0: b[rng.below(b.count)] = UInt8(rng.below(256))                        // any byte
            case 1: b[rng.below(b.count)] ^= UInt8(1 << rng.below(8))                    // one bit
            case 2: b = Array(b.prefix(rng.below(b.count)))                              // truncation
            case 3: b.insert(UInt8(rng.below(256)), at: rng.below(b.count))              // insertion
            case 4: b.remove(at: rng.below(b.count))                                     // deletion
            case 5:                                                                       // a chunk length
                let at = rng.below(2) == 0 ? 4 : 18
                if at + 4 <= b.count { for i in 0..<4 { b[at + i] = UInt8(rng.below(256)) } }
            default:                                                                      // a long VLQ run
                let at = rng.below(b.count)
                for i in 0..<min(6, b.count - at) { b[at + i] = 0xFF }
            }
        }
        return b
    }

    @Test func mutatedFilesNeverTrap() throws {
        let env = ProcessInfo.processInfo.environment
        let count = env["TANDEM_MIDI_FUZZ_COUNT"].flatMap(Int.init) ?? 20000
        let seed = env["TANDEM_MIDI_FUZZ_SEED"].flatMap(UInt64.init) ?? 20_261_122
        var rng = Rng(state: seed)
        let dir = TestEnvironment.temporaryDirectory("midifuzz")
        var read = 0, refused = 0, recovered = 0
        for i in 0..<count {
            let bytes = Self.mutate(Self.seedFile(&rng), &rng)
            do {
                let file = try MIDIFile.parse(bytes, path: "case-\(i).mid")
                _ = try file.timedEvents(sampleRate: [44100, 48000, 96000][i % 3])
                read += 1
            } catch {
                #expect(error.path == "case-\(i).mid" && !error.reason.isEmpty)
                refused += 1
            }
            if i % 10 == 0 {   // recover works on files; one in ten keeps the test short
                let path = dir.appendingPathComponent("r\(i).mid").path
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                if (try? MIDIFileWriter.recover(path: path)) != nil {
                    recovered += 1
                    // What recover leaves is a file the reader takes, whenever it started from a valid header.
                    if let fixed = try? MIDIFile.read(path: path) { _ = try? fixed.timedEvents(sampleRate: 48000) }
                }
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        print("MIDI fuzz: \(count) cases (seed \(seed)): \(read) read, \(refused) refused, \(recovered) recovered")
        #expect(read + refused == count)
        #expect(read > count / 20 && refused > count / 4)   // both paths really ran
    }
}
