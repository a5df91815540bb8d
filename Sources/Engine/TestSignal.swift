import Foundation
import SoundFile

/// The demo's test signal: stereo, 24-bit-exact samples (so the recorded take can be checked bit for bit).
/// Left: a 440 Hz tone at -12 dBFS that steps up a fifth each second. Right: pink-ish noise at about -18 dBFS.
public enum TestSignal {
    public static func make(seconds: Double, sampleRate: Int) -> [Float] {
        let frames = Int(seconds * Double(sampleRate))
        var out = [Float](repeating: 0, count: frames * 2)
        var phase = 0.0
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var lowpass = 0.0
        for f in 0..<frames {
            let step = Double(f / sampleRate)
            let frequency = 440 * pow(1.5, step.truncatingRemainder(dividingBy: 4))
            phase += 2 * .pi * frequency / Double(sampleRate)
            let left = 0.25 * sin(phase)
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let white = Double(Int64(bitPattern: state) >> 11) / Double(1 << 52)
            lowpass = 0.9 * lowpass + 0.1 * white
            let right = 0.35 * lowpass
            out[2 * f] = quantize(left)
            out[2 * f + 1] = quantize(right)
        }
        return out
    }

    /// Rounds to a 24-bit value; never -0.0 (integer PCM has no negative zero, so it would not read back as such).
    static func quantize(_ v: Double) -> Float { Float((v * 8_388_608).rounded() / 8_388_608) + 0 }

    /// Writes the signal as a 24-bit WAV.
    public static func write(to path: String, seconds: Double, sampleRate: Int) throws -> [Float] {
        let samples = make(seconds: seconds, sampleRate: sampleRate)
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: .wav, sample: .int24), channels: 2,
                                    sampleRate: sampleRate)
        try samples.withUnsafeBufferPointer { b throws(SoundFileError) in try w.write(b.baseAddress!, frames: samples.count / 2) }
        try w.close()
        return samples
    }

    /// How many frames of `source` appear, in order and bit for bit, in `recorded` (both interleaved stereo), after
    /// lining up the first non-silent frame; and the first source frame that does not (nil when all do).
    public static func verify(source: [Float], recorded: [Float], channels: Int)
        -> (matched: Int, total: Int, firstMismatch: Int?) {
        let total = source.count / channels
        guard let sourceStart = (0..<total).first(where: { f in (0..<channels).contains { source[f * channels + $0] != 0 } }),
              let recordedStart = (0..<(recorded.count / channels)).first(where: { f in
                  (0..<channels).allSatisfy { recorded[f * channels + $0] == source[sourceStart * channels + $0] }
              }) else { return (0, total, 0) }
        let offset = recordedStart - sourceStart
        var matched = 0
        var firstMismatch: Int?
        for f in 0..<total {
            let r = f + offset
            if r >= 0, (r + 1) * channels <= recorded.count,
               (0..<channels).allSatisfy({ recorded[r * channels + $0].bitPattern == source[f * channels + $0].bitPattern }) {
                matched += 1
            } else if firstMismatch == nil {
                firstMismatch = f
            }
        }
        return (matched, total, firstMismatch)
    }
}
