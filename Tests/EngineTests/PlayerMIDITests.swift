import Testing
import Foundation
import Engine
import Jack
import TestSupport

/// The player plays Standard MIDI Files into its MIDI port, sample-accurately, beside audio items: every event of
/// a type-1 file with tempo changes lands on the frame mido says, counted from the item's start.
@Suite(.serialized) struct PlayerMIDITests {
    struct Rig {
        let server: JackServer
        let dir: URL
        let player: Player
        let capture: MIDICapture

        init(_ label: String, queue: (URL) throws -> [String], configure: (inout PlayerConfig) -> Void = { _ in }) throws {
            server = try TestEnvironment.server(label)
            dir = TestEnvironment.temporaryDirectory(label)
            capture = try MIDICapture(name: "mcap", server: server.name)
            var c = PlayerConfig()
            c.ports = ["out_1"]
            c.queue = try queue(dir)
            c.startImmediately = false
            configure(&c)
            player = try Player(config: c, server: server.name)
            try player.client.connect("tandem-play:midi_out", "mcap:midi_in")
        }

        func close() {
            player.close()
            capture.close()
            server.stop()
        }
    }

    static func midoFile(_ dir: URL, notes: Int = 120) throws -> String {
        let path = dir.appendingPathComponent("song.mid").path
        _ = try Mido.run(Mido.writeType1, [path, String(notes)])
        return path
    }

    @Test func midiAfterAudioLandsOnMidoFrames() throws {
        var mid = ""
        let audioFrames = 30_001
        let rig = try Rig("pmidi") { dir in
            mid = try Self.midoFile(dir, notes: 60)
            let wav = dir.appendingPathComponent("a.wav").path
            try TestEnvironment.writeWAV(Signals.noise(frames: audioFrames, channels: 1, seed: 3), channels: 1, path: wav)
            return [wav, mid]
        }
        defer { rig.close() }
        let expected = try Mido.frames(mid, rate: 48000).events
        rig.player.waitForFill(seconds: 5)
        rig.player.play(atFrameTime: rig.player.client.frameTime &+ 3000)
        var events: [PlayerEvent] = []
        #expect(TestEnvironment.waitUntil(timeout: 30) {
            events += rig.player.drainEvents()
            return events.contains(.queueFinished)
        })
        usleep(100_000)
        let start = try #require(rig.player.startedAtFrameTime.map(Int.init))
        let got = rig.capture.events()
        #expect(got.count == expected.count && expected.count > 120)
        var moved = 0, differing = 0
        for (g, e) in zip(got, expected) {
            if g.frame - start != audioFrames + e.frame { moved += 1 }
            if Mido.hex(g.bytes) != e.hex { differing += 1 }
        }
        #expect(moved == 0 && differing == 0, "\(moved) events moved, \(differing) differ")
        #expect(rig.player.midiSent == expected.count && rig.player.midiLost == 0)
    }

    @Test func seekAndLoopKeepEveryEventOnItsFrame() throws {
        var mid = ""
        let rig = try Rig("pmidiloop", queue: { dir in
            mid = try Self.midoFile(dir, notes: 30)
            return [mid]
        }, configure: { $0.loop = .item })
        defer { rig.close() }
        let file = try Mido.frames(mid, rate: 48000)
        let lastEvent = try #require(file.events.last?.frame)
        let length = max(file.length, lastEvent + 1)
        let seekTo = file.events[file.events.count / 3].frame      // on an event: it must play, at the start
        #expect(rig.player.cue(item: 0, frame: seekTo))
        rig.player.waitForFill(seconds: 5)
        rig.player.play()
        let firstPass = file.events.filter { $0.frame >= seekTo }
        let wanted = firstPass.count + 2 * file.events.count
        #expect(TestEnvironment.waitUntil(timeout: 30) { rig.player.midiSent >= wanted })
        rig.player.stop()
        usleep(100_000)
        let start = try #require(rig.player.startedAtFrameTime.map(Int.init))
        var expected = firstPass.map { ($0.frame - seekTo, $0.hex) }
        for pass in 0..<2 { expected += file.events.map { (length - seekTo + pass * length + $0.frame, $0.hex) } }
        let got = Array(rig.capture.events().prefix(expected.count))
        #expect(got.count == expected.count)
        let moved = zip(got, expected).filter { $0.0.frame - start != $0.1.0 || Mido.hex($0.0.bytes) != $0.1.1 }.count
        #expect(moved == 0, "\(moved) of \(expected.count) events moved or differ")
    }
}
