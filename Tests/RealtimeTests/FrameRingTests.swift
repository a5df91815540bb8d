import Testing
import Realtime
#if canImport(Glibc)
import Glibc
#endif

@Suite struct FrameRingTests {
    @Test func writeThenReadKeepsFramesAndChannelOrder() throws {
        let ring = try FrameRing.allocate(channels: 2, capacity: 5)
        defer { ring.deallocate() }
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 4)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: 4)
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2)
        defer { left.deallocate(); right.deallocate(); buffers.deallocate() }
        buffers[0] = left
        buffers[1] = right
        for i in 0..<4 { left[i] = Float(i); right[i] = Float(100 + i) }
        #expect(ring.writer.write(planar: buffers, frames: 3))
        #expect(!ring.writer.write(planar: buffers, frames: 3), "all-or-nothing when there is no room")
        #expect(ring.fill == 3)
        #expect(ring.reader.read(planar: buffers, frames: 2) == 2)
        #expect(left[0] == 0 && left[1] == 1 && right[0] == 100 && right[1] == 101)
        // Wraps: 1 frame left, 4 written across the end.
        for i in 0..<4 { left[i] = Float(10 + i); right[i] = Float(20 + i) }
        #expect(ring.writer.write(planar: buffers, frames: 4))
        let r = ring.reader.peek(5)
        #expect(r.frames == 5 && r.secondFrames > 0)
        #expect(r.sample(frame: 0, channel: 0).pointee == 2)
        #expect(r.sample(frame: 4, channel: 1).pointee == 23)
    }

    /// Every channel count from 1 to 20 and 128, with writes of 1 to 16 frames that wrap around the ring's end at
    /// many offsets: the interleave puts each sample in its frame and channel.
    @Test(arguments: Array(1...20) + [128])
    func interleavingKeepsEverySampleInPlace(channels: Int) throws {
        let capacity = 37, period = 16
        let ring = try FrameRing.allocate(channels: channels, capacity: capacity)
        defer { ring.deallocate() }
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        for c in 0..<channels { buffers[c] = .allocate(capacity: period) }
        defer { for c in 0..<channels { buffers[c].deallocate() }; buffers.deallocate() }
        var wrong = 0, wrapped = 0, position = 0
        for cycle in 0..<(3 * capacity) {
            let n = 1 + cycle % period
            for c in 0..<channels { for i in 0..<n { buffers[c][i] = Float(c * 100_000 + position + i) } }
            #expect(ring.writer.write(planar: buffers, frames: n))
            let r = ring.reader.peek(n)
            if r.secondFrames > 0 { wrapped += 1 }
            for i in 0..<n {
                for c in 0..<channels where r.sample(frame: i, channel: c).pointee != Float(c * 100_000 + position + i) {
                    wrong += 1
                }
            }
            ring.reader.consume(n)
            position += n
        }
        #expect(wrong == 0)
        #expect(wrapped > 5, "writes across the ring's end")
    }

    /// An absurd ring is an error the caller can report, not a stop of the process (it used to be a `fatalError`).
    @Test func anAbsurdRingIsAnErrorNotAStop() {
        #expect(throws: ResidentMemory.Failure.self) { try FrameRing.allocate(channels: 256, capacity: 1 << 60) }
        // Fits an Int, but no kernel maps a petabyte.
        #expect(throws: ResidentMemory.Failure.self) { try ResidentMemory.allocate(Float.self, count: 1 << 48) }
        #expect(throws: ResidentMemory.Failure.self) { try ResidentMemory.allocate(Float.self, count: Int.max / 2) }
    }

    /// A ring's memory is resident and zero before anyone touches it (`mincore` counts every page in).
    @Test func residentMemoryIsInAndZeroBeforeItIsTouched() throws {
        let count = 8 << 20 / MemoryLayout<Float>.size
        let p = try ResidentMemory.allocate(Float.self, count: count)
        defer { ResidentMemory.deallocate(p, count: count) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (8 << 20) / page)
        #expect(mincore(UnsafeMutableRawPointer(p), 8 << 20, &vector) == 0)
        #expect(vector.allSatisfy { $0 & 1 == 1 }, "\(vector.filter { $0 & 1 == 0 }.count) pages not resident")
        #expect((0..<count).allSatisfy { p[$0] == 0 })
    }

    @Test func threadNamesFitTheKernelsFifteenBytes() {
        #expect(OSThread.kernelName("tandem-disk-writer") == "disk-writer")
        #expect(OSThread.kernelName("tandem-signals") == "signals")
        #expect(OSThread.kernelName("a-very-long-thread-name") == "a-very-long-thr")
        // A character is never cut in half: "é" is two bytes, and the fifteenth byte would split it.
        #expect(OSThread.kernelName("abcdefghijklmné") == "abcdefghijklmn")
    }

    @Test func messageRingRefusesWhenFullAndKeepsOrder() {
        let ring = MessageRing.allocate(capacity: 3)
        defer { ring.deallocate() }
        for i in 0..<3 { #expect(ring.push(RTMessage(kind: 1, a: Int64(i)))) }
        #expect(!ring.push(RTMessage(kind: 1, a: 99)))
        #expect(ring.pop()?.a == 0)
        #expect(ring.push(RTMessage(kind: 2, a: 3)))
        #expect([ring.pop()?.a, ring.pop()?.a, ring.pop()?.a] == [1, 2, 3])
        #expect(ring.pop() == nil)
    }

    /// One producer and one consumer thread move 50 million samples through a 61-frame ring in odd-sized steps, so
    /// nearly every step wraps. Every sample must arrive once and in order.
    @Test func stressFiftyMillionSamplesThroughASmallRing() throws {
        let channels = 4
        let totalFrames = 12_500_000          // x 4 channels = 50 M samples
        let ring = try FrameRing.allocate(channels: channels, capacity: 61)
        defer { ring.deallocate() }
        let modulus = 1 << 24                 // exact integers in Float

        let producer = OSThread(name: "stress-producer") {
            let writer = ring.writer
            var next = 0
            var step = 1
            while next < totalFrames {
                step = step % 37 + 1
                let r = writer.reserve(min(step, totalFrames - next))
                if r.frames == 0 { continue }
                for f in 0..<r.frames {
                    for c in 0..<channels {
                        r.sample(frame: f, channel: c).pointee = Float(((next + f) * channels + c) % modulus)
                    }
                }
                writer.commit(r.frames)
                next += r.frames
            }
        }
        let errors = AtomicCounterArray.allocate(count: 2)   // [0] wrong samples, [1] samples seen
        defer { errors.deallocate() }
        let consumer = OSThread(name: "stress-consumer") {
            let reader = ring.reader
            var step = 3
            while reader.position < totalFrames {
                step = step % 41 + 1
                let r = reader.peek(step)
                if r.frames == 0 { continue }
                let base = reader.position
                for f in 0..<r.frames {
                    for c in 0..<channels
                    where r.sample(frame: f, channel: c).pointee != Float(((base + f) * channels + c) % modulus) {
                        errors.add(0, 1)
                    }
                }
                reader.consume(r.frames)
                errors.add(1, r.frames * channels)
            }
        }
        producer.join()
        consumer.join()
        #expect(errors.load(0) == 0, "samples out of order or lost")
        #expect(errors.load(1) == totalFrames * channels)
        #expect(ring.totalRead == totalFrames && ring.totalWritten == totalFrames)
    }
}

@Suite struct CycleHistogramTests {
    @Test func percentilesAreWithinABucketAndMaxIsExact() {
        let h = CycleHistogram.allocate()
        defer { h.deallocate() }
        for i in 1...1000 { h.record(nanoseconds: i * 1000) }     // 1 µs ... 1 ms, uniform
        let s = h.summary()
        #expect(s.count == 1000 && s.max == 1_000_000)
        #expect(s.p50 >= 500_000 && s.p50 <= 500_000 * 9 / 8 + 1, "\(s)")
        #expect(s.p99 >= 990_000 && s.p99 <= 1_000_000, "\(s)")
        h.reset()
        #expect(h.summary().count == 0)
    }
}
