/// Checks a recording of a source that was played in a loop (gapless, from any point): every recorded frame must be
/// silence or a frame of the source, and consecutive source frames must follow each other (wrapping at the end).
/// Used where a take starts and stops at moments the test does not choose (OSC fuzzing, signals, hostile
/// environments) so that exact offsets cannot be known in advance.
public struct LoopedSourceCheck: CustomStringConvertible, Sendable {
    /// Recorded frames that are source frames.
    public var sourceFrames = 0
    /// Recorded frames that are silence (before the source was connected, or a reported gap).
    public var silentFrames = 0
    /// Recorded frames found nowhere in the source: corruption.
    public var foreignFrames = 0
    /// Places where the next source frame is not the one after the previous (a lost or repeated stretch).
    public var discontinuities = 0
    /// Recorded frame index of the first foreign frame or discontinuity.
    public var firstProblem: Int?

    public init() {}

    public var description: String {
        "source=\(sourceFrames) silent=\(silentFrames) foreign=\(foreignFrames) discontinuities=\(discontinuities)"
            + (firstProblem.map { " first problem at frame \($0)" } ?? "")
    }

    /// True when every frame is the source's or silence and the source frames run on without a break.
    public var intact: Bool { foreignFrames == 0 && discontinuities == 0 && sourceFrames > 0 }

    /// Index of a source's frames by their first two samples' bit patterns (noise makes them unique).
    public struct Index: Sendable {
        let frames: Int
        let channels: Int
        let source: [Float]
        let positions: [UInt64: Int]

        public init(source: [Float], channels: Int) {
            self.source = source
            self.channels = channels
            frames = source.count / channels
            var p: [UInt64: Int] = [:]
            p.reserveCapacity(frames)
            for f in 0..<frames { p[Index.key(source, f * channels, channels)] = f }
            positions = p
        }

        static func key(_ s: [Float], _ at: Int, _ channels: Int) -> UInt64 {
            UInt64(s[at].bitPattern) << 32 | UInt64(channels > 1 ? s[at + 1].bitPattern : 0)
        }
    }

    public static func check(recorded: [Float], against index: Index) -> LoopedSourceCheck {
        let ch = index.channels
        var result = LoopedSourceCheck()
        var expected: Int?
        let frames = recorded.count / ch
        for r in 0..<frames {
            let base = r * ch
            if (0..<ch).allSatisfy({ recorded[base + $0] == 0 }) {
                result.silentFrames += 1
                if let e = expected { expected = (e + 1) % index.frames }
                continue
            }
            if let e = expected, (0..<ch).allSatisfy({ recorded[base + $0].bitPattern == index.source[e * ch + $0].bitPattern }) {
                result.sourceFrames += 1
                expected = (e + 1) % index.frames
                continue
            }
            guard let f = index.positions[Index.key(recorded, base, ch)],
                  (0..<ch).allSatisfy({ recorded[base + $0].bitPattern == index.source[f * ch + $0].bitPattern }) else {
                result.foreignFrames += 1
                if result.firstProblem == nil { result.firstProblem = r }
                expected = nil
                continue
            }
            if expected != nil {
                result.discontinuities += 1
                if result.firstProblem == nil { result.firstProblem = r }
            }
            result.sourceFrames += 1
            expected = (f + 1) % index.frames
        }
        return result
    }
}
