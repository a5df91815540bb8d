import Testing
import Foundation
import Engine
import TestSupport

@Suite struct TestSignalTests {
    @Test func writtenSignalReadsBackBitForBit() throws {
        let path = TestEnvironment.temporaryDirectory("sig").appendingPathComponent("s.wav").path
        let source = try TestSignal.write(to: path, seconds: 8, sampleRate: 48000)
        let back = try TestEnvironment.readAudio(path).samples
        let bad = (0..<source.count).filter { source[$0].bitPattern != back[$0].bitPattern }
        #expect(bad.isEmpty, "\(bad.count) differ; first \(bad.prefix(3).map { "\($0): \(source[$0]) vs \(back[$0])" })")
        let result = TestSignal.verify(source: source, recorded: [0, 0] + back, channels: 2)
        #expect(result.matched == source.count / 2 && result.total == source.count / 2 && result.firstMismatch == nil)
        var cut = back
        cut.removeSubrange(2000..<2512)     // 256 frames lost from frame 1000 on
        #expect(TestSignal.verify(source: source, recorded: cut, channels: 2).firstMismatch == 1000)
    }

    /// A source whose links came up one by one: frames before its first whole frame with some channels silent count as
    /// partial only where each live channel is the source frame that recorded frame stands for.
    @Test func framesBeforeTheSourceAreCheckedAgainstTheSourceFrameTheyStandFor() {
        let channels = 4
        let source = Signals.noise(frames: 2000, channels: channels, seed: 44)
        let index = LoopedSourceCheck.Index(source: source, channels: channels)
        // Recorded: 10 silent frames, then source frames 300..<700 with channel 0 silent in 300..<350 and
        // channels 0 and 1 silent in 300..<320.
        var recorded = [Float](repeating: 0, count: 10 * channels) + Array(source[300 * channels..<700 * channels])
        for f in 0..<50 { recorded[(10 + f) * channels] = 0 }
        for f in 0..<20 { recorded[(10 + f) * channels + 1] = 0 }
        let good = LoopedSourceCheck.check(recorded: recorded, against: index, looped: false)
        #expect(good.partialBeforeSource == 50 && good.foreignBeforeSource == 0 && good.silentFrames == 10
                && good.firstSourceFrame == 350 && good.intact, "\(good)")
        // One early frame whose live channel is another frame's sample is foreign, not partial.
        var torn = recorded
        torn[(10 + 5) * channels + 2] = source[900 * channels + 2]
        let bad = LoopedSourceCheck.check(recorded: torn, against: index, looped: false)
        #expect(bad.partialBeforeSource == 49 && bad.foreignBeforeSource == 1, "\(bad)")
    }
}
