@testable import Takes
import Testing
import Foundation
@testable import Engine
@testable import Plugins
@testable import Presets
import Realtime
import SoundFile
import TestSupport

/// The recorder's disk writer doing issue 22's work, driven cycle by cycle on the test's thread (the real
/// `RecorderState.cycle` and `DiskWriter.step`, no server): level-triggered takes out of the ring, clock-aligned
/// chunks, markers as cue points. Checked sample by sample.
@Suite struct UnattendedWriterTests {
    static let rate = 48_000

    /// A recorder's RT state and writer, fed one channel whose sample at stream position p is `source(p)`.
    final class Rig {
        let s: UnsafeMutablePointer<RecorderState>
        let writer: DiskWriter
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 4096)
        let source: (Int) -> Float
        var position = 0
        var frameTime: UInt32 = 1_000
        let period = 256
        var finished: [TakeReport] = []
        let dir: URL
        let slot = ChainSlot.allocate()

        init(_ label: String, ringSeconds: Double = 4, source: @escaping (Int) -> Float,
             configure: (inout RecorderConfig) -> Void) throws {
            dir = TestEnvironment.temporaryDirectory(label)
            var config = RecorderConfig()
            config.ports = ["in_1"]
            config.directory = dir.path
            config.session = label
            config.ringSeconds = ringSeconds
            configure(&config)
            s = try RecorderState.allocate(client: .none, ports: [], channels: 1, recordDry: false, chain: slot,
                                           ringFrames: Int((config.ringSeconds + config.prerollSeconds) * Double(Rig.rate)),
                                           wakeFrames: 256, sampleRate: Rig.rate)
            s.pointee.resetAfterWarmUp()
            writer = DiskWriter(config: config, state: s.pointee, sampleRate: Rig.rate, portNames: config.ports,
                                logger: .init(label: "test"), xruns: { 0 })
            self.source = source
        }
        static let rate = UnattendedWriterTests.rate

        deinit {
            writer.finishForQuit()
            RecorderState.free(s)
            slot.deallocate()
            buffer.deallocate()
        }

        func context(wallClock: Date = Date(), scale: Double = 1) -> TakeContext {
            TakeContext(anchor: TakeAnchor(streamPosition: 0, frameTime: 1_000, wallClock: wallClock,
                                           sampleRate: Rig.rate, clockScale: scale), ports: [], xrunsAtStart: 0)
        }

        /// Runs `frames` frames (whole periods) through the callback, with a writer round every 8 periods.
        func run(_ frames: Int) {
            var left = frames
            var k = 0
            while left > 0 {
                for i in 0..<period { buffer[i] = source(position + i) }
                s.pointee.inputs.buffers[0] = buffer
                RecorderState.cycle(s.pointee, frames: period, frameTime: frameTime)
                frameTime &+= UInt32(period)
                position += period
                left -= period
                k += 1
                if k % 8 == 0 { step() }
            }
            step()
        }

        func step() {
            writer.step()
            for e in writer.drainEvents() {
                if case .takeFinished(let r, _) = e { finished.append(r) }
            }
        }
    }

    /// ±0.5 (sign from a hash: noise at -6 dBFS whose every sample is over -40 dBFS) inside `burst`, else `floor`.
    static func burstSource(_ burst: Range<Int>, floor: Float = 0) -> (Int) -> Float {
        { p in
            var h = UInt64(truncatingIfNeeded: p) &* 0x9E37_79B9_7F4A_7C15
            h ^= h >> 29
            let sign: Float = h & 1 == 0 ? 1 : -1
            if burst.contains(p) { return 0.5 * sign }
            return floor * sign * Float(h >> 40 & 0xFFFF) / 65_535
        }
    }

    static func trigger(threshold: Double = -40, attack: Double, hold: Double, postroll: Double,
                        minLength: Double = 0, maxLength: Double? = nil) -> TriggerSection {
        var g = TriggerSection()
        g.thresholdDB = threshold
        g.stopThresholdDB = threshold - 6
        g.windowSeconds = 0.01
        g.attackSeconds = attack
        g.holdSeconds = hold
        g.postrollSeconds = postroll
        g.minLengthSeconds = minLength
        g.maxLengthSeconds = maxLength
        return g
    }

    @Test func aBurstStartsATakeExactlyPretriggerBeforeItAndEndsHoldPlusPostrollAfter() throws {
        let burst = 200_000..<248_000                  // 1 s at 4.17 s
        let source = Self.burstSource(burst)
        let rig = try Rig("trig", source: source) { c in
            c.prerollSeconds = 0.5
            c.trigger = Self.trigger(attack: 0.05, hold: 1, postroll: 0.25)
        }
        rig.writer.send(.arm(rig.context()))
        rig.run(10 * Self.rate)
        let r = try #require(rig.finished.first, "no take")
        #expect(rig.finished.count == 1)
        let pre = Self.rate / 2, hold = Self.rate, post = Self.rate / 4
        #expect(r.streamStart == burst.lowerBound - pre, "starts the pre-trigger before the first loud frame")
        #expect(r.frames == pre + burst.count + hold + post, "ends hold + post-roll after the burst")
        #expect(r.ended == .trigger && r.trigger?.ended == .quiet)
        #expect(r.trigger?.triggerFrame == pre && r.prerollFrames == pre)
        #expect(r.trigger?.lastLoudFrame == pre + burst.count - 1)
        #expect(abs((r.trigger?.levelDB ?? 0) - 20 * log10(0.5)) < 0.01)
        let samples = try SoundFileReader(path: try #require(r.chunks.first?.files.first)).readAll()
        #expect(samples.count == r.frames)
        let wrong = samples.indices.filter { samples[$0] != source(r.streamStart + $0) }.count
        #expect(wrong == 0, "\(wrong) samples differ from the source")
    }

    @Test func sixtySecondsOfQuietNoiseAndABurstShorterThanTheAttackStartNoTake() throws {
        let floor = Float(pow(10, -70.0 / 20))          // -70 dBFS peak noise
        let short = 30 * 48_000..<(30 * 48_000 + 2_000)  // 42 ms of -6 dBFS: under the 100 ms attack
        let rig = try Rig("quiet", source: Self.burstSource(short, floor: floor)) { c in
            c.prerollSeconds = 0.5
            c.trigger = Self.trigger(attack: 0.1, hold: 1, postroll: 0)
        }
        rig.writer.send(.arm(rig.context()))
        rig.run(60 * Self.rate)
        #expect(rig.finished.isEmpty && rig.writer.status == nil, "no take: \(rig.finished.map(\.frames))")
        let files = try FileManager.default.contentsOfDirectory(atPath: rig.dir.path)
        #expect(files.isEmpty, "\(files)")
    }

    @Test func maxLengthCutsATakeAndTheNextStartsOnTheNextFrame() throws {
        let burst = 100_000..<400_000
        let source = Self.burstSource(burst)
        let rig = try Rig("maxlen", source: source) { c in
            c.prerollSeconds = 0.25
            c.trigger = Self.trigger(attack: 0.01, hold: 0.5, postroll: 0, maxLength: 3)
        }
        rig.writer.send(.arm(rig.context()))
        rig.run(12 * Self.rate)
        // 6.25 s of sound, 0.25 s before it and 0.5 s of hold after: 3 s, 3 s and 1 s.
        #expect(rig.finished.map(\.frames) == [3 * Self.rate, 3 * Self.rate, Self.rate])
        guard rig.finished.count == 3 else { return }
        let a = rig.finished[0]
        #expect(a.streamStart == burst.lowerBound - Self.rate / 4 && a.trigger?.ended == .maxLength)
        for (x, y) in zip(rig.finished, rig.finished.dropFirst()) {
            #expect(y.streamStart == x.streamStart + x.frames && y.trigger?.continued == true)
        }
        #expect(rig.finished[2].trigger?.ended == .quiet)
        #expect(rig.finished[2].streamStart + rig.finished[2].frames == burst.upperBound + Self.rate / 2)
        var joined: [Float] = []
        for r in rig.finished { joined += try SoundFileReader(path: r.chunks[0].files[0]).readAll() }
        let wrong = joined.indices.filter { joined[$0] != source(a.streamStart + $0) }.count
        #expect(wrong == 0, "the takes concatenate to the source")
    }

    @Test func clockChunksAreExactAndMarkersLandInTheirChunksAsCuePoints() throws {
        // A virtual clock 1800 times as fast: an hour is 2 s of audio (96 000 frames). The take starts at 09:20
        // (virtual), so boundaries fall at 10:00 and 11:00: frames 64 000 and 160 000.
        let scale = 1800.0
        let start = ISO8601DateFormatter().date(from: "2026-11-23T09:20:00Z")!
        let source: (Int) -> Float = { p in Float(p % 65_536) / 65_536 }
        let rig = try Rig("clock", source: source) { c in
            c.rotateSeconds = 3600
            c.rotateOnClock = true
            c.template = "{session}-{date}-{time}"
        }
        rig.writer.send(.start(at: 0, context: rig.context(wallClock: start, scale: scale)))
        let marks = [1_000, 63_999, 64_000, 100_000, 200_000]
        for (i, m) in marks.enumerated() { rig.writer.send(.mark(at: m, label: "m\(i + 1)", source: "test")) }
        rig.run(240_000)
        let end = rig.position
        rig.writer.send(.stop(at: end, end: .stopped, detail: nil))
        rig.run(1_024)
        let r = try #require(rig.finished.first)
        #expect(r.chunks.map(\.startFrame) == [0, 64_000, 160_000])
        #expect(r.chunks.map(\.frames) == [64_000, 96_000, end - 160_000])
        // Named by their start on the local clock (this box's zone; whole-hour offsets keep the boundaries).
        let names = [0.0, 2400, 6000].enumerated().map { i, t in
            "clock-" + FileNameTemplate.stamp(start.addingTimeInterval(t), "yyyyMMdd-HHmmss") + "-00\(i + 1).wav"
        }
        #expect(r.chunks.map { ($0.files[0] as NSString).lastPathComponent } == names)
        var joined: [Float] = []
        for c in r.chunks { joined += try SoundFileReader(path: c.files[0]).readAll() }
        #expect(joined.count == end)
        #expect(joined.indices.allSatisfy { joined[$0] == source($0) }, "the chunks concatenate to the stream")
        #expect(r.markers?.map(\.frame) == marks)
        // Each marker is a cue point of the chunk holding it (one on a boundary: the chunk that starts there),
        // read back by libsndfile and by the independent parser.
        let expected: [[CueMarker]] = [[.init(frame: 1_000, label: "m1"), .init(frame: 63_999, label: "m2")],
                                       [.init(frame: 0, label: "m3"), .init(frame: 36_000, label: "m4")],
                                       [.init(frame: 40_000, label: "m5")]]
        for (i, c) in r.chunks.enumerated() {
            #expect(try CueChunks.read(from: c.files[0]) == expected[i], "chunk \(i + 1)")
            #expect(try SoundFileReader(path: c.files[0]).cues == expected[i], "chunk \(i + 1), libsndfile")
        }
    }
}
