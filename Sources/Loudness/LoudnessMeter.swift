internal import LoudnessDSP
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An ITU-R BS.1770-4 / EBU R128 loudness meter for one programme (a mono, stereo or 5.1 channel group): momentary,
/// short-term, integrated (gated), loudness range (EBU Tech 3342) and true peak (BS.1770 Annex 2, 4x oversampled).
///
/// The per-sample work (K-weighting, the true-peak interpolator) is C (`LoudnessDSP`); here, the 100 ms sub-blocks
/// it fills become 400 ms blocks (momentary, the integrated gate) and 3 s windows (short-term, the range), each
/// every 100 ms. Blocks and windows go into histograms of 0.01 LU that also keep each bin's energy, so the memory is
/// fixed however long a take runs and the integrated loudness is exact to the bin.
///
/// Why not libebur128 (Debian's, made for this): at 16 channels its true peak alone cost 1.8 % of a core on this
/// machine (the budget for all of loudness is 1 %), and its short-term reading sums the whole 3 s window on every
/// call, so a maximum and a range at 10 Hz would cost more again. The tests hold this meter to the EBU test signals
/// and to ffmpeg's `ebur128` filter.
///
/// Not thread-safe: one thread gives it frames and reads it (a disk or meter thread, a command).
public final class LoudnessMeter {
    public let channels: Int
    public let sampleRate: Double
    /// Frames in one 100 ms sub-block.
    public let subBlockFrames: Int

    private var filters = loudness_kweight()
    private var peaks = loudness_truepeak()
    /// The last 30 sub-blocks' energies (sum over frames and channels of weight * y^2), a ring.
    private var subBlocks = [Double](repeating: 0, count: 30)
    private var subBlockCount = 0
    private var filled = 0
    private var energy = 0.0
    private var totalFrames = 0

    private var momentaryEnergy: Double?
    private var shortTermEnergy: Double?
    private var momentaryMaxEnergy: Double?
    private var shortTermMaxEnergy: Double?
    private var truePeak: Float = 0
    private var samplePeak: Float = 0
    /// 400 ms blocks above the absolute gate (the integrated loudness's) and 3 s windows above it (the range's).
    private var blocks = LoudnessHistogram()
    private var windows = LoudnessHistogram()

    /// A meter for `channels` channels weighted by `weights` (`LoudnessLayout.weights`, or one of 1.0 per channel
    /// of a group). Refuses more channels than one programme may have and rates outside 8...768 kHz.
    public init(channels: Int, sampleRate: Double, weights: [Double]? = nil) throws(LoudnessError) {
        guard channels >= 1, channels <= Int(LOUDNESS_MAX_CHANNELS) else { throw .channels(channels) }
        guard sampleRate.isFinite, sampleRate >= 8000, sampleRate <= 768_000 else { throw .rate(sampleRate) }
        let w: [Double]
        if let weights { w = weights } else { w = try LoudnessLayout.weights(channels: channels) }
        guard w.count == channels else { throw .channels(channels) }
        self.channels = channels
        self.sampleRate = sampleRate
        subBlockFrames = max(1, Int((sampleRate / 10).rounded()))
        w.withUnsafeBufferPointer { loudness_kweight_init(&filters, Int32(channels), sampleRate, $0.baseAddress) }
        loudness_truepeak_init(&peaks, Int32(channels))
    }

    /// Forgets everything: a new programme.
    public func reset() {
        loudness_kweight_reset(&filters)
        loudness_truepeak_init(&peaks, Int32(channels))
        for i in subBlocks.indices { subBlocks[i] = 0 }
        subBlockCount = 0
        filled = 0
        energy = 0
        totalFrames = 0
        momentaryEnergy = nil
        shortTermEnergy = nil
        momentaryMaxEnergy = nil
        shortTermMaxEnergy = nil
        truePeak = 0
        samplePeak = 0
        blocks = LoudnessHistogram()
        windows = LoudnessHistogram()
    }

    /// Measures `frames` frames whose channel c is `samples[f * stride + offset + c]` (a group inside wider
    /// interleaved frames, or `stride == channels` and `offset == 0` for the group alone).
    public func add(_ samples: UnsafePointer<Float>, frames: Int, stride: Int, offset: Int = 0) {
        var done = 0
        while done < frames {
            let n = min(frames - done, subBlockFrames - filled)
            let at = samples + done * stride
            energy += loudness_kweight_run(&filters, at, n, stride, offset)
            truePeak = max(truePeak, loudness_truepeak_run(&peaks, at, n, stride, offset))
            samplePeak = max(samplePeak, loudness_sample_peak(at, n, stride, offset, Int32(channels)))
            filled += n
            done += n
            if filled == subBlockFrames { closeSubBlock() }
        }
        totalFrames += frames
    }

    /// Measures interleaved frames of exactly this meter's channels.
    public func add(_ samples: UnsafeBufferPointer<Float>) {
        guard let base = samples.baseAddress else { return }
        add(base, frames: samples.count / channels, stride: channels)
    }

    /// Measures `frames` frames of silence (a gap written into a take as silence).
    public func addSilence(frames: Int) {
        let chunk = 1024
        let zeros = [Float](repeating: 0, count: chunk * channels)
        zeros.withUnsafeBufferPointer { z in
            var left = frames
            while left > 0 {
                let n = min(left, chunk)
                add(z.baseAddress!, frames: n, stride: channels)
                left -= n
            }
        }
    }

    private func closeSubBlock() {
        subBlocks[subBlockCount % subBlocks.count] = energy
        subBlockCount += 1
        energy = 0
        filled = 0
        let perFrame = Double(subBlockFrames)
        if subBlockCount >= 4 {
            let e = sumOfLast(4) / (4 * perFrame)
            momentaryEnergy = e
            momentaryMaxEnergy = max(momentaryMaxEnergy ?? e, e)
            blocks.add(energy: e)
        }
        if subBlockCount >= 30 {
            let e = sumOfLast(30) / (30 * perFrame)
            shortTermEnergy = e
            shortTermMaxEnergy = max(shortTermMaxEnergy ?? e, e)
            windows.add(energy: e)
        }
    }

    private func sumOfLast(_ n: Int) -> Double {
        var sum = 0.0
        for i in 1...n { sum += subBlocks[(subBlockCount - i) % subBlocks.count] }
        return sum
    }

    /// Everything as of the frames given so far.
    public var reading: LoudnessReading {
        var r = LoudnessReading(seconds: Double(totalFrames) / sampleRate)
        r.momentary = momentaryEnergy.flatMap(LoudnessHistogram.lufs)
        r.shortTerm = shortTermEnergy.flatMap(LoudnessHistogram.lufs)
        r.momentaryMax = momentaryMaxEnergy.flatMap(LoudnessHistogram.lufs)
        r.shortTermMax = shortTermMaxEnergy.flatMap(LoudnessHistogram.lufs)
        r.integrated = blocks.integrated()
        r.range = windows.range()
        // The interpolated phases sit between the samples (an eighth of a sample off), so the samples themselves
        // count too, as in libebur128: a true peak is never below the sample peak.
        let tp = max(truePeak, samplePeak)
        r.truePeak = tp > 0 ? 20 * log10(Double(tp)) : nil
        r.samplePeak = samplePeak > 0 ? 20 * log10(Double(samplePeak)) : nil
        if subBlockCount < 4 {
            r.note = "shorter than 400 ms: no integrated loudness"
        } else if r.integrated == nil {
            r.note = "silence: no 400 ms block above the -70 LUFS gate"
        }
        return r
    }
}

/// Loudness values above the absolute gate (-70 LUFS) in bins of 0.01 LU up to +30 LUFS, each bin with its count
/// and the sum of its values' energies, so a gated mean is exact however many values there are.
struct LoudnessHistogram {
    static let floor = -70.0
    static let binsPerLU = 100.0
    static let binCount = 10_000
    private var counts: [Int32] = []
    private var energies: [Double] = []
    private var total = 0
    private var totalEnergy = 0.0

    static func lufs(_ energy: Double) -> Double? {
        guard energy > 0, energy.isFinite else { return nil }
        return -0.691 + 10 * log10(energy)
    }

    mutating func add(energy: Double) {
        guard let l = Self.lufs(energy), l > Self.floor else { return }
        if counts.isEmpty {
            counts = [Int32](repeating: 0, count: Self.binCount)
            energies = [Double](repeating: 0, count: Self.binCount)
        }
        let bin = min(Self.binCount - 1, max(0, Int((l - Self.floor) * Self.binsPerLU)))
        counts[bin] &+= 1
        energies[bin] += energy
        total += 1
        totalEnergy += energy
    }

    /// The first bin whose middle is at or above `lufs`.
    private static func bin(atOrAbove lufs: Double) -> Int {
        let b = Int(((lufs - floor) * binsPerLU - 0.5).rounded(.up))
        return min(binCount, max(0, b))
    }

    private static func middle(_ bin: Int) -> Double { floor + (Double(bin) + 0.5) / binsPerLU }

    /// BS.1770-4's integrated loudness: the mean energy of the blocks above the relative gate, 10 LU below the mean
    /// of all blocks above the absolute gate.
    func integrated() -> Double? {
        guard total > 0, let mean = Self.lufs(totalEnergy / Double(total)) else { return nil }
        var count = 0
        var sum = 0.0
        for b in Self.bin(atOrAbove: mean - 10)..<Self.binCount where counts[b] > 0 {
            count += Int(counts[b])
            sum += energies[b]
        }
        return count > 0 ? Self.lufs(sum / Double(count)) : nil
    }

    /// EBU Tech 3342's loudness range: of the short-term values above the relative gate (20 LU below their mean),
    /// the 95th percentile less the 10th.
    func range() -> Double? {
        guard total > 0, let mean = Self.lufs(totalEnergy / Double(total)) else { return nil }
        let first = Self.bin(atOrAbove: mean - 20)
        var count = 0
        for b in first..<Self.binCount { count += Int(counts[b]) }
        guard count > 0 else { return nil }
        let low = Int(Double(count - 1) * 0.10 + 0.5)
        let high = Int(Double(count - 1) * 0.95 + 0.5)
        var seen = 0
        var lowValue: Double?
        for b in first..<Self.binCount where counts[b] > 0 {
            let next = seen + Int(counts[b])
            if lowValue == nil, low < next { lowValue = Self.middle(b) }
            if high < next, let lowValue { return Self.middle(b) - lowValue }
            seen = next
        }
        return nil
    }
}
