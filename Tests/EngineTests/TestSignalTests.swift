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
}
