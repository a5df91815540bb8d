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
    /// Frames before the source's first whole frame that are that stretch of the source with some channels still
    /// silent: a source whose ports were linked one by one while it played (PipeWire and NetJACK2 make links
    /// asynchronously; on a loaded machine sixteen links took five periods). Each is checked against the source
    /// frame it must be, counted back from the first whole one.
    public var partialBeforeSource = 0
    /// Frames before the source's first whole frame that are not a partial copy of the source frame they stand for.
    public var foreignBeforeSource = 0
    /// Places where the next source frame is not the one after the previous (a lost or repeated stretch).
    public var discontinuities = 0
    /// Source frames skipped over at forward discontinuities, silence counted as time: frames lost by the recorder
    /// (its cycles skipped) rather than by its source (which shows as silence and then a step back).
    public var framesJumpedOver = 0
    /// The source frame the recording's first source frame is (0: nothing of the source's start is missing).
    public var firstSourceFrame: Int?
    /// Recorded frame index of the first foreign frame or discontinuity.
    public var firstProblem: Int?

    public init() {}

    public var description: String {
        "source=\(sourceFrames) silent=\(silentFrames) foreign=\(foreignFrames) discontinuities=\(discontinuities)"
            + (partialBeforeSource > 0 ? " partial before the source \(partialBeforeSource)" : "")
            + (foreignBeforeSource > 0 ? " foreign before the source \(foreignBeforeSource)" : "")
            + (framesJumpedOver > 0 ? " jumped over \(framesJumpedOver)" : "")
            + (firstSourceFrame.map { $0 > 0 ? " starts at source frame \($0)" : "" } ?? "")
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

    /// With `looped` false the source was played once: silence after its end does not wrap round to its start.
    public static func check(recorded: [Float], against index: Index, looped: Bool = true) -> LoopedSourceCheck {
        let ch = index.channels
        var result = LoopedSourceCheck()
        var expected: Int?
        let frames = recorded.count / ch
        var beforeSource: [Int] = []
        for r in 0..<frames {
            let base = r * ch
            if (0..<ch).allSatisfy({ recorded[base + $0] == 0 }) {
                result.silentFrames += 1
                if let e = expected { expected = looped ? (e + 1) % index.frames : (e + 1 < index.frames ? e + 1 : nil) }
                continue
            }
            if let e = expected, (0..<ch).allSatisfy({ recorded[base + $0].bitPattern == index.source[e * ch + $0].bitPattern }) {
                result.sourceFrames += 1
                expected = looped ? (e + 1) % index.frames : (e + 1 < index.frames ? e + 1 : nil)
                continue
            }
            guard let f = index.positions[Index.key(recorded, base, ch)],
                  (0..<ch).allSatisfy({ recorded[base + $0].bitPattern == index.source[f * ch + $0].bitPattern }) else {
                if result.sourceFrames == 0 {
                    beforeSource.append(r)
                    continue
                }
                result.foreignFrames += 1
                if result.firstProblem == nil { result.firstProblem = r }
                expected = nil
                continue
            }
            if let e = expected {
                result.discontinuities += 1
                if f > e { result.framesJumpedOver += f - e }
                if result.firstProblem == nil { result.firstProblem = r }
            }
            result.sourceFrames += 1
            if result.firstSourceFrame == nil {
                result.firstSourceFrame = f
                for early in beforeSource {
                    let g = f - (r - early)
                    let partial = g >= 0 && (0..<ch).allSatisfy {
                        recorded[early * ch + $0] == 0
                            || recorded[early * ch + $0].bitPattern == index.source[g * ch + $0].bitPattern
                    }
                    if partial { result.partialBeforeSource += 1 } else { result.foreignBeforeSource += 1 }
                }
                beforeSource.removeAll()
            }
            expected = looped ? (f + 1) % index.frames : (f + 1 < index.frames ? f + 1 : nil)
        }
        result.foreignBeforeSource += beforeSource.count
        return result
    }
}
