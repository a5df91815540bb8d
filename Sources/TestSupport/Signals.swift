/// Deterministic test signals whose samples are exact 24-bit values (k / 2^23), so they survive float32 and
/// 24-bit PCM files and JACK unchanged and can be compared bit for bit.
public enum Signals {
    /// Interleaved white noise in [-0.5, 0.5), a different stream per channel, repeatable for a given `seed`.
    public static func noise(frames: Int, channels: Int, seed: UInt64 = 0x7A4D_E11A) -> [Float] {
        var state = seed | 1
        var out = [Float](repeating: 0, count: frames * channels)
        for i in 0..<out.count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let k = Int32(truncatingIfNeeded: state >> 41) - (1 << 22)   // [-2^22, 2^22)
            out[i] = Float(k) / 8_388_608.0
        }
        return out
    }

    /// A sine of `frequency` Hz at `peak` amplitude on every channel, quantized to 24 bits.
    public static func sine(frames: Int, channels: Int, frequency: Double, sampleRate: Int,
                            peak: Double) -> [Float] {
        var out = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            let v = peak * sin(2 * .pi * frequency * Double(f) / Double(sampleRate))
            let q = Float((v * 8_388_608).rounded() / 8_388_608) + 0   // + 0: no -0.0
            for c in 0..<channels { out[f * channels + c] = q }
        }
        return out
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// The result of lining a recording up against its source.
public struct Alignment: CustomStringConvertible, Sendable {
    /// Index of the recorded frame that equals source frame 0 (negative: the recording started late).
    public var recordedOffset: Int
    /// Source frames found, in order, at the aligned positions.
    public var matchedFrames: Int
    /// Aligned frames that differ from the source.
    public var mismatchedFrames: Int
    /// First aligned frame (in source frames) that differs, or nil.
    public var firstMismatch: Int?
    /// Non-silent recorded frames after the aligned end of the source.
    public var extraFrames: Int

    public var description: String {
        "offset=\(recordedOffset) matched=\(matchedFrames) mismatched=\(mismatchedFrames) "
            + "firstMismatch=\(firstMismatch.map(String.init) ?? "-") extra=\(extraFrames)"
    }
}

/// Aligning and comparing interleaved audio, bit for bit.
public enum AudioCompare {
    /// Finds where the source's first non-silent frame appears in `recorded` and compares every frame after it.
    /// Returns nil when the source's first non-silent frame does not occur in the recording at all.
    public static func align(source: [Float], recorded: [Float], channels: Int) -> Alignment? {
        let sourceFrames = source.count / channels
        let recordedFrames = recorded.count / channels
        guard let anchor = (0..<sourceFrames).first(where: { f in
            (0..<channels).contains { source[f * channels + $0] != 0 }
        }) else { return nil }
        var found: Int?
        search: for r in 0..<recordedFrames {
            for c in 0..<channels where recorded[r * channels + c] != source[anchor * channels + c] {
                continue search
            }
            found = r
            break
        }
        guard let hit = found else { return nil }
        let offset = hit - anchor
        var matched = 0, mismatched = 0, firstMismatch: Int?
        for f in 0..<sourceFrames {
            let r = f + offset
            guard r >= 0, r < recordedFrames else { continue }
            var equal = true
            for c in 0..<channels where recorded[r * channels + c].bitPattern != source[f * channels + c].bitPattern {
                equal = false
                break
            }
            if equal { matched += 1 } else {
                mismatched += 1
                if firstMismatch == nil { firstMismatch = f }
            }
        }
        var extra = 0
        let tailStart = max(0, sourceFrames + offset)
        if tailStart < recordedFrames {
            for r in tailStart..<recordedFrames where (0..<channels).contains(where: { recorded[r * channels + $0] != 0 }) {
                extra += 1
            }
        }
        return Alignment(recordedOffset: offset, matchedFrames: matched, mismatchedFrames: mismatched,
                         firstMismatch: firstMismatch, extraFrames: extra)
    }

    /// As `align`, but a recording in which the source's first non-silent frame is nowhere (a lost first period)
    /// comes back as an alignment with nothing matched and every source frame mismatched, so a test checks the
    /// counts and its message stays short (a failed `#require(align(...))` prints both sample arrays).
    public static func alignment(source: [Float], recorded: [Float], channels: Int) -> Alignment {
        align(source: source, recorded: recorded, channels: channels)
            ?? Alignment(recordedOffset: 0, matchedFrames: 0, mismatchedFrames: source.count / max(channels, 1),
                         firstMismatch: 0, extraFrames: 0)
    }
}
