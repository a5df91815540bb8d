@testable import Takes
import Testing
import Foundation
@testable import Engine
import Jack
import Presets
@testable import Plugins
import Realtime
import SoundFile
import TestSupport

/// The engine's real-time bodies and the disk writer's pump, driven cycle by cycle on the test's thread: no `jackd`,
/// no process thread, no writer thread. Samples are checked one by one.
@Suite struct EngineCycleTests {
    static let rate = 48_000

    /// A recorder state without ports (the test points `inputs.buffers` at its own input).
    static func recorderState(channels: Int = 2, ringFrames: Int = 4096, chain: ChainSlot)
        throws -> UnsafeMutablePointer<RecorderState> {
        let s = try RecorderState.allocate(client: .none, ports: [], channels: channels, recordDry: false, chain: chain,
                                           ringFrames: ringFrames, wakeFrames: 256, sampleRate: rate)
        s.pointee.resetAfterWarmUp()
        return s
    }

    /// Input buffers whose sample at stream position p on channel c is `value(p, c)`.
    final class Input {
        let channels: Int
        let buffers: [UnsafeMutablePointer<Float>]
        init(channels: Int) {
            self.channels = channels
            buffers = (0..<channels).map { _ in
                let b = UnsafeMutablePointer<Float>.allocate(capacity: Period.maxFrames)
                b.initialize(repeating: 0, count: Period.maxFrames)
                return b
            }
        }
        deinit { buffers.forEach { $0.deallocate() } }
        static func value(_ p: Int, _ c: Int) -> Float { Float(p % 100_000) + Float(c) * 0.25 }
        /// Fills one cycle starting at stream position `at` and points the state's buffers at it.
        func cycle(_ s: RecorderState, at: Int, frames: Int) {
            for c in 0..<channels {
                for i in 0..<frames { buffers[c][i] = Input.value(at + i, c) }
                s.inputs.buffers[c] = buffers[c]
            }
        }
    }

    /// Drains the recorder's ring and returns interleaved frames.
    static func drain(_ ring: FrameRing) -> [Float] {
        let r = ring.reader
        let n = r.available
        let regions = r.peek(n)
        var out: [Float] = []
        out.append(contentsOf: UnsafeBufferPointer(start: regions.first, count: regions.firstFrames * ring.channels))
        out.append(contentsOf: UnsafeBufferPointer(start: regions.second, count: regions.secondFrames * ring.channels))
        r.consume(n)
        return out
    }

    static func notes(_ ring: GapNoteRing) -> [GapNote] {
        var out: [GapNote] = []
        while case .note(let n) = ring.peek() {
            out.append(n)
            ring.pop()
        }
        return out
    }

    // MARK: Recorder

    /// Frames go into the ring interleaved, in stream order; the stream position, the cycle stamp and the meters
    /// follow; a full ring drops whole cycles, counts them and announces the gap before any later frame.
    @Test func recorderCycleCopiesMetersAndDropsWholeCycles() throws {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let state = try Self.recorderState(ringFrames: 1024 + 2 * Period.maxFrames, chain: slot)
        defer { RecorderState.free(state) }
        let s = state.pointee
        let input = Input(channels: 2)
        let n = 256
        var frameTime: UInt32 = 10_000
        for k in 0..<4 {
            input.cycle(s, at: k * n, frames: n)
            RecorderState.cycle(s, frames: n, frameTime: frameTime)
            frameTime &+= UInt32(n)
        }
        #expect(s.counter(.streamFrames) == 4 * n)
        #expect(s.counter(.cycles) == 4)
        #expect(s.counter(.cycleStamp) == Int(10_000 + 3 * n) << 32 | (3 * n))
        let got = Self.drain(s.ring)
        #expect(got.count == 4 * n * 2)
        for p in 0..<(4 * n) {
            #expect(got[2 * p] == Input.value(p, 0) && got[2 * p + 1] == Input.value(p, 1), "frame \(p)")
            if got[2 * p] != Input.value(p, 0) { break }
        }
        // Meters: the peak is the largest magnitude seen, over every frame summed.
        #expect(s.counter(.meterFrames) == 4 * n)
        #expect(Float(bitPattern: UInt32(truncatingIfNeeded: s.peaks.load(1))) == Input.value(4 * n - 1, 1))

        // Fill the ring, then one cycle more: dropped whole, counted, announced before the next frames.
        let capacity = s.ring.capacity
        var position = 4 * n
        while s.ring.writer.space >= n {
            input.cycle(s, at: position, frames: n)
            RecorderState.cycle(s, frames: n, frameTime: frameTime)
            frameTime &+= UInt32(n)
            position += n
        }
        let dropAt = position
        input.cycle(s, at: position, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: frameTime)
        frameTime &+= UInt32(n)
        position += n
        #expect(s.counter(.droppedFrames) == n)
        #expect(s.counter(.pendingDropFrames) == n && s.counter(.pendingDropStart) == dropAt)
        #expect(Self.notes(s.drops).isEmpty, "the gap is announced by the next cycle, before its frames")
        let kept = Self.drain(s.ring)
        #expect(kept.count / 2 == dropAt - 4 * n && kept.count / 2 <= capacity)
        input.cycle(s, at: position, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: frameTime)
        #expect(Self.notes(s.drops) == [.overrun(at: dropAt, frames: n)])
        #expect(s.counter(.pendingDropFrames) == 0)
        let after = Self.drain(s.ring)
        #expect(after.count == 2 * n && after[0] == Input.value(position, 0))
    }

    /// A jump in JACK's frame time is counted as skipped cycles and noted at its stream position; a step back in the
    /// next cycle comes as a negative note (the correction); the stream itself has no gap.
    /// The recorder's MIDI side as the process glue drives it, without a server: each event lands in the MIDI ring at
    /// the stream position of its frame, with its port and bytes; a SysEx too long for a slot and an event that finds
    /// the ring full are counted, never lost silently.
    @Test func recorderMIDIIsCapturedAtItsStreamPositionCycleByCycle() throws {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let state = try RecorderState.allocate(client: .none, ports: [], channels: 1, recordDry: false, chain: slot,
                                               ringFrames: 4096, wakeFrames: 256, sampleRate: Self.rate, midiCapacity: 3)
        state.pointee.resetAfterWarmUp()
        defer { RecorderState.free(state) }
        let s = state.pointee
        let input = Input(channels: 1)
        let n = 256
        func take(port: Int, frame: Int, _ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { RecorderState.takeMIDI(s, port: port, frame: frame, bytes: $0.baseAddress!, count: bytes.count) }
        }
        // Cycle 1: a note-on at frame 10. Cycle 2: a CC at frame 0 on port 1, a note-off at frame 255, a 57-byte SysEx.
        take(port: 0, frame: 10, [0x90, 60, 100])
        input.cycle(s, at: 0, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 1000)
        take(port: 1, frame: 0, [0xB0, 7, 64])
        take(port: 0, frame: 255, [0x80, 60, 0])
        take(port: 0, frame: 3, [0xF0] + [UInt8](repeating: 1, count: 55) + [0xF7])
        // The ring holds three: a fourth is lost and counted.
        take(port: 0, frame: 4, [0x90, 61, 1])
        input.cycle(s, at: n, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 1000 + UInt32(n))
        var got: [(Int, Int, [UInt8])] = []
        while let e = s.midi.ring.peek() {
            got.append((Int(e.position), Int(e.port), e.bytes))
            s.midi.ring.drop()
        }
        #expect(got.map(\.0) == [10, n, n + 255])
        #expect(got.map(\.1) == [0, 1, 0])
        #expect(got.map(\.2) == [[0x90, 60, 100], [0xB0, 7, 64], [0x80, 60, 0]])
        #expect(s.midi.counters.load(RecorderMIDI.Counter.received.rawValue) == 5)
        #expect(s.midi.counters.load(RecorderMIDI.Counter.tooLong.rawValue) == 1)
        #expect(s.midi.counters.load(RecorderMIDI.Counter.overrun.rawValue) == 1)
    }

    @Test func recorderCycleNotesSkippedCyclesAndTheirCorrection() throws {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let state = try Self.recorderState(chain: slot)
        defer { RecorderState.free(state) }
        let s = state.pointee
        let input = Input(channels: 2)
        let n = 128
        input.cycle(s, at: 0, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000)
        input.cycle(s, at: n, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000 + UInt32(4 * n))     // three cycles skipped
        #expect(s.counter(.missedFrames) == 3 * n)
        input.cycle(s, at: 2 * n, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000 + UInt32(4 * n))     // read one early: a step back
        #expect(s.counter(.missedFrames) == 2 * n)
        #expect(Self.notes(s.drops) == [.skippedCycles(at: n, frames: 3 * n), .skippedCycles(at: 2 * n, frames: -n)])
        let got = Self.drain(s.ring)
        #expect(got.count == 3 * n * 2 && got[2 * (3 * n - 1)] == Input.value(3 * n - 1, 0))
    }

    /// A late cycle that read its source's next period (one lost) and a cycle after it that reads that period again
    /// with the frame time stepping back: not a late clock to correct, but a repeated period, counted and noted; the
    /// lost period's jump stands. (Netted against each other, as they were, the pair went uncounted.)
    @Test func aRepeatedPeriodIsCountedNotCorrectedAway() throws {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let state = try Self.recorderState(chain: slot)
        defer { RecorderState.free(state) }
        let s = state.pointee
        let input = Input(channels: 2)
        let n = 128
        input.cycle(s, at: 0, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000)
        // Late: the source has run on, so this cycle holds the period after the one it should have (n lost).
        input.cycle(s, at: 2 * n, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000 + UInt32(2 * n))
        // The next cycle reads the same buffer again, and the frame time steps back.
        input.cycle(s, at: 2 * n, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000 + UInt32(2 * n))
        #expect(s.counter(.missedFrames) == n && s.counter(.repeatedFrames) == n)
        #expect(Self.notes(s.drops) == [.skippedCycles(at: n, frames: n), .repeatedCycle(at: 2 * n, frames: n)])
        // A late clock over fresh samples stays a correction.
        input.cycle(s, at: 3 * n, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000 + UInt32(4 * n))
        input.cycle(s, at: 4 * n, frames: n)
        RecorderState.cycle(s, frames: n, frameTime: 5_000 + UInt32(4 * n))
        #expect(s.counter(.missedFrames) == n && s.counter(.repeatedFrames) == n)
    }

    /// `SkippedCycles`: nothing before the first cycle, jumps and steps back across the 32-bit wrap, and a clock that
    /// jumps too far (a new server) is not taken for skipped cycles.
    @Test func skippedCyclesReadsJumpsAcrossTheWrap() {
        #expect(SkippedCycles.frames(frameTime: 1234, expected: -1) == 0)
        #expect(SkippedCycles.frames(frameTime: 1024, expected: 1024) == 0)
        #expect(SkippedCycles.frames(frameTime: 1024 + 512, expected: 1024) == 512)
        #expect(SkippedCycles.frames(frameTime: 1024 - 256, expected: 1024) == -256)
        #expect(SkippedCycles.frames(frameTime: 100, expected: Int(UInt32.max) - 155) == 256)
        #expect(SkippedCycles.frames(frameTime: UInt32.max - 100, expected: 155) == -256)
        #expect(SkippedCycles.frames(frameTime: UInt32(SkippedCycles.maxFrames + 1), expected: 0) == 0)
        #expect(SkippedCycles.frames(frameTime: UInt32(SkippedCycles.maxFrames), expected: 0) == SkippedCycles.maxFrames)
    }

    /// The note ring is typed on both ends: an unknown kind is reported as such, never as a drop.
    @Test func gapNotesRoundTripAndUnknownKindsStayUnknown() {
        let ring = GapNoteRing.allocate(capacity: 8)
        defer { ring.deallocate() }
        #expect(ring.peek() == .empty)
        let notes: [GapNote] = [.overrun(at: 5, frames: 7), .skippedCycles(at: 9, frames: -3), .latency(at: 11, frames: 64)]
        for n in notes { #expect(ring.push(n)) }
        _ = ring.messages.push(RTMessage(kind: 2, a: 1, b: 2))
        #expect(Self.notes(ring) == notes)
        #expect(ring.peek() == .unknown)
        ring.pop()
        #expect(ring.peek() == .empty)
    }

    // MARK: The pump

    /// The writer's pump, stepped by hand: the pre-roll is kept while idle, a take starts at its position, an
    /// overrun is written as silence of its length at its place and noted, skipped cycles are noted without a gap,
    /// and the take stops at its position. The file holds exactly the frames expected, sample for sample.
    @Test func pumpWritesTheTakeWithGapsAtTheirPlaces() throws {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let state = try Self.recorderState(ringFrames: 2048 + 2 * Period.maxFrames, chain: slot)
        defer { RecorderState.free(state) }
        let s = state.pointee
        let dir = TestEnvironment.temporaryDirectory("pump")
        var config = RecorderConfig()
        config.directory = dir.path
        config.session = "pump"
        config.prerollSeconds = 1.0 / 64     // 750 frames, exactly
        let preroll = 750
        let writer = DiskWriter(config: config, state: s, sampleRate: Self.rate, portNames: config.ports,
                                logger: .init(label: "test"), xruns: { 0 })
        let input = Input(channels: 2)
        let n = 256
        var position = 0
        var frameTime: UInt32 = 1_000
        func cycle(skipBefore skip: Int = 0) {
            frameTime &+= UInt32(skip)
            input.cycle(s, at: position, frames: n)
            RecorderState.cycle(s, frames: n, frameTime: frameTime)
            frameTime &+= UInt32(n)
            position += n
        }
        for _ in 0..<8 { cycle() }
        writer.step()
        #expect(writer.streamPosition == 8 * n - preroll, "idle: only the pre-roll stays")
        let anchor = TakeAnchor(streamPosition: 0, frameTime: 1_000, wallClock: Date(), sampleRate: Self.rate)
        let takeAt = 8 * n
        writer.send(.start(at: takeAt, context: TakeContext(anchor: anchor, ports: [], xrunsAtStart: 0)))
        for _ in 0..<4 { cycle() }
        writer.step()
        // An overrun: the ring is full for two cycles (the writer does not run), then drained.
        while s.ring.writer.space >= n { cycle() }
        let gapAt = position
        cycle()
        cycle()
        writer.step()
        cycle()                              // announces the gap
        cycle(skipBefore: 3 * n)             // skipped cycles: no gap in the stream
        let skipAt = position - n
        for _ in 0..<3 { cycle() }
        let stopAt = position
        writer.send(.stop(at: stopAt, end: .stopped, detail: nil))
        for _ in 0..<2 { cycle() }
        writer.step()
        #expect(writer.status == nil, "the take has ended")
        let events = writer.drainEvents()
        guard case .takeFinished(let report, _)? = events.last else {
            Issue.record("no take finished: \(events)")
            return
        }
        let start = takeAt - preroll
        #expect(report.streamStart == start && report.prerollFrames == preroll)
        #expect(report.frames == stopAt - start)
        #expect(report.droppedFrames == 2 * n)
        #expect(report.missedFrames == 3 * n)
        // Each dropped cycle is announced by the next cycle, which drops too while the ring stays full: two notes.
        #expect(report.drops.map(\.atFrame) == [gapAt - start, gapAt + n - start, skipAt - start])
        #expect(report.drops.map(\.frames) == [n, n, 3 * n])
        let file = try #require(report.chunks.first?.files.first)
        let samples = try SoundFileReader(path: file).readAll()
        #expect(samples.count == 2 * (stopAt - start))
        var wrong = 0
        for p in start..<stopAt {
            let inGap = p >= gapAt && p < gapAt + 2 * n
            for c in 0..<2 where samples[2 * (p - start) + c] != (inGap ? 0 : Input.value(p, c)) { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) samples differ")
    }

    // MARK: Player

    static func playerState(channels: Int = 2, ringFrames: Int = 4096, chain: ChainSlot)
        throws -> UnsafeMutablePointer<PlayerState> {
        try PlayerState.allocate(client: .none, ports: [], channels: channels, chain: chain, ringFrames: ringFrames,
                                 wakeSpace: 1024, notify: nil)
    }

    /// Writes `frames` frames of ramp (value: ring position, channel 1 negated) into the playback ring.
    static func fill(_ s: PlayerState, frames: Int) {
        let w = s.ring.writer
        let regions = w.reserve(frames)
        let base = s.ring.totalWritten
        for i in 0..<regions.frames {
            regions.sample(frame: i, channel: 0).pointee = Float(base + i)
            regions.sample(frame: i, channel: 1).pointee = -Float(base + i)
        }
        w.commit(regions.frames)
    }

    /// Stopped: silence, nothing consumed. Playing from a JACK frame time inside a cycle: silence up to that frame,
    /// then the ring from its first frame. Running short: silence, counted as an underrun unless the queue drained.
    @Test func playerCycleStartsAtItsFrameAndCountsUnderruns() throws {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let state = try Self.playerState(chain: slot)
        defer { PlayerState.free(state) }
        let s = state.pointee
        let n = 256
        Self.fill(s, frames: 1000)
        PlayerState.cycle(s, frames: n, frameTime: 0)
        #expect(s.ring.totalRead == 0 && (0..<n).allSatisfy { s.outputs.buffers[0][$0] == 0 })
        s.set(.startAt, 2 * n + 100)
        s.set(.transport, PlayerState.Transport.playing.rawValue)
        PlayerState.cycle(s, frames: n, frameTime: UInt32(n))
        #expect(s.ring.totalRead == 0, "the start is a cycle ahead")
        PlayerState.cycle(s, frames: n, frameTime: UInt32(2 * n))
        #expect((0..<100).allSatisfy { s.outputs.buffers[0][$0] == 0 })
        #expect((100..<n).allSatisfy { s.outputs.buffers[0][$0] == Float($0 - 100) && s.outputs.buffers[1][$0] == -Float($0 - 100) })
        #expect(s.counter(.startedAtFrameTime) == 2 * n + 100)
        #expect(s.counter(.playedFrames) == n - 100)
        PlayerState.cycle(s, frames: n, frameTime: UInt32(3 * n))
        #expect((0..<n).allSatisfy { s.outputs.buffers[0][$0] == Float(n - 100 + $0) })
        // 1000 - 412 = 588 frames left: two cycles and 76 frames, then an underrun of 180.
        PlayerState.cycle(s, frames: n, frameTime: UInt32(4 * n))
        PlayerState.cycle(s, frames: n, frameTime: UInt32(5 * n))
        #expect(s.counter(.underrunFrames) == 0)
        PlayerState.cycle(s, frames: n, frameTime: UInt32(6 * n))
        #expect(s.counter(.underrunFrames) == n - 76 && s.counter(.underrunCycles) == 1)
        #expect(s.outputs.buffers[0][75] == 999 && (76..<n).allSatisfy { s.outputs.buffers[0][$0] == 0 })
        // Drained: silence after the end is not an underrun.
        s.set(.drainedAt, 1000)
        PlayerState.cycle(s, frames: n, frameTime: UInt32(7 * n))
        #expect(s.counter(.underrunCycles) == 1)
        #expect(s.counter(.missedFrames) == 0)
        PlayerState.cycle(s, frames: n, frameTime: UInt32(9 * n))
        #expect(s.counter(.missedFrames) == n)
    }

    /// Stale frames before `skipTo` are discarded, never played; the gain ramps over one cycle to its target.
    @Test func playerCycleSkipsStaleFramesAndRampsTheGain() throws {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let state = try Self.playerState(chain: slot)
        defer { PlayerState.free(state) }
        let s = state.pointee
        let n = 100
        Self.fill(s, frames: 1000)
        s.set(.skipTo, 300)
        s.set(.transport, PlayerState.Transport.playing.rawValue)
        PlayerState.cycle(s, frames: n, frameTime: 0)
        #expect(s.outputs.buffers[0][0] == 300 && s.outputs.buffers[0][n - 1] == Float(300 + n - 1))
        s.set(.gainTarget, Int(Float(0.5).bitPattern))
        PlayerState.cycle(s, frames: n, frameTime: UInt32(n))
        // From gain 1 to 0.5 across the cycle: the last frame is at the target.
        let last = s.outputs.buffers[0][n - 1], expected = Float(400 + n - 1) * 0.5
        #expect(abs(last - expected) < 1e-3, "\(last) vs \(expected)")
        #expect(s.outputs.buffers[0][0] < 400 && s.outputs.buffers[0][0] > 399 * 0.99)
        PlayerState.cycle(s, frames: n, frameTime: UInt32(2 * n))
        #expect(s.outputs.buffers[0][0] == 250 && s.outputs.buffers[1][n - 1] == -Float(500 + n - 1) * 0.5)
    }

    // MARK: Limits

    /// The preset loader and the recorder's config take their rotation-size limit from `Limits` and say it the same
    /// way: a size one accepts the other accepts (they once disagreed: 4096 bytes against 64 KiB).
    @Test func loaderAndConfigAgreeOnTheRotationSize() {
        #expect(Limits.describeSize(Limits.rotateBytes) == "64K to 1P")
        #expect(Limits.size(1000) == "1000" && Limits.size(3 << 20) == "3M")
        let dir = TestEnvironment.temporaryDirectory("limits")
        for bytes in [Limits.rotateBytes.lowerBound - 1, Limits.rotateBytes.lowerBound, 4096, 1 << 30,
                      Limits.rotateBytes.upperBound, Limits.rotateBytes.upperBound + 1] {
            let (preset, problems) = PresetLoader.parse("[recorder]\nrotate_size = \(bytes)\n", file: "t.toml",
                                                        baseDirectory: dir.path)
            var config = RecorderConfig()
            config.directory = dir.path
            config.rotateBytes = bytes
            let loaderTakes = preset != nil && problems.isEmpty
            let configTakes = config.problems().isEmpty
            #expect(loaderTakes == configTakes, "\(bytes): loader \(problems), config \(config.problems())")
            #expect(loaderTakes == Limits.rotateBytes.contains(bytes), "\(bytes)")
            if !loaderTakes {
                #expect(problems.contains { $0.message.contains("64K to 1P") })
                #expect(config.problems().contains { $0.contains("64K to 1P") })
            }
        }
    }

    // MARK: Chain slot, memory

    /// The slot hands the process side the latest offer at the start of a cycle; an offer replaced before it was
    /// taken is withdrawn (its owner may free it at once); `nil` means no chain.
    @Test func chainSlotHandsOverAndWithdraws() {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        let a = UnsafeMutablePointer<ChainState>(bitPattern: 0x1000)!
        let b = UnsafeMutablePointer<ChainState>(bitPattern: 0x2000)!
        let c = UnsafeMutablePointer<ChainState>(bitPattern: 0x3000)!
        #expect(slot.acquire() == nil && slot.taken)
        #expect(!slot.offer(a))
        #expect(!slot.taken)
        #expect(slot.acquire() == a && slot.taken)
        #expect(slot.acquire() == a)
        #expect(!slot.offer(b))
        #expect(slot.offer(c), "b was never taken: withdrawn")
        #expect(slot.acquire() == c && slot.taken)
        #expect(!slot.offer(nil))
        #expect(slot.acquire() == nil)
    }

    /// Rings the kernel will not map are an `EngineError` (it used to stop the process in `ResidentMemory`).
    @Test func anAbsurdRingIsAnEngineErrorNotAStop() {
        let slot = ChainSlot.allocate()
        defer { slot.deallocate() }
        #expect(throws: EngineError.self) { _ = try Self.recorderState(ringFrames: 1 << 52, chain: slot) }
        #expect(throws: EngineError.self) { _ = try Self.playerState(channels: 64, ringFrames: 1 << 50, chain: slot) }
        do {
            _ = try Self.recorderState(ringFrames: 1 << 52, chain: slot)
        } catch let error as EngineError {
            #expect(error.code == .memory && error.message.contains("capture ring"), "\(error)")
        } catch {
            Issue.record("not an EngineError: \(error)")
        }
    }
}
