import CSoxr

/// Resampling quality, mapped to libsoxr's recipes.
public enum ResampleQuality: String, CaseIterable, Sendable, Codable {
    /// 16-bit quality (fast).
    case low
    /// 20-bit quality.
    case medium
    /// 28-bit quality (the default).
    case high
    /// 32-bit quality.
    case veryHigh = "very-high"

    var recipe: UInt {
        switch self {
        case .low: return UInt(SOXR_LQ)
        case .medium: return UInt(SOXR_MQ)
        case .high: return UInt(SOXR_HQ)
        case .veryHigh: return UInt(SOXR_VHQ)
        }
    }
}

/// Streaming sample-rate conversion of interleaved float frames with libsoxr.
///
/// Why libsoxr and not libsamplerate: at comparable settings it has the higher stop-band rejection and costs less
/// CPU per sample, and it streams with bounded latency; both are in Debian. Single-threaded here (the disk-reader
/// thread owns it).
///
/// Threads: one owner (the disk-reader thread).
public final class Resampler {
    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    private var handle: soxr_t?

    public init(from inputRate: Int, to outputRate: Int, channels: Int, quality: ResampleQuality = .high)
        throws(SoundFileError) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        var error: soxr_error_t?
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var q = soxr_quality_spec(quality.recipe, 0)
        var runtime = soxr_runtime_spec(1)
        handle = soxr_create(Double(inputRate), Double(outputRate), UInt32(channels), &error, &io, &q, &runtime)
        if handle == nil || error != nil {
            throw SoundFileError(.unsupportedFormat, path: "",
                                 message: "cannot resample \(inputRate) Hz to \(outputRate) Hz: "
                                        + (error.map { String(cString: $0) } ?? "unknown soxr error"))
        }
    }

    deinit { soxr_delete(handle) }

    /// Converts up to `inputFrames` frames (nil input: flush the tail at the end of the stream) into `output`,
    /// room for `outputCapacity` frames. Returns (frames consumed, frames produced).
    public func process(_ input: UnsafePointer<Float>?, inputFrames: Int, into output: UnsafeMutablePointer<Float>,
                        outputCapacity: Int) -> (consumed: Int, produced: Int) {
        var consumed = 0
        var produced = 0
        _ = soxr_process(handle, input, input == nil ? 0 : inputFrames, &consumed, output, outputCapacity, &produced)
        return (consumed, produced)
    }

    /// Frames of delay inside the converter (for position reporting).
    public var delay: Double { soxr_delay(handle) }

    /// Forgets buffered input (after a seek).
    public func clear() { soxr_clear(handle) }
}
