import CSndFile

/// A file container Tandem can write.
public enum Container: String, CaseIterable, Sendable, Codable {
    /// WAV that becomes RF64 by itself past 4 GiB (RF64 with auto-downgrade): plain WAV readers open every file that
    /// stays below the limit, and long takes stay correct.
    case wav
    /// RF64 from the first byte.
    case rf64
    case flac
    /// Ogg Vorbis.
    case ogg
    /// Ogg Opus (48 kHz family rates only).
    case opus
    case mp3

    /// The usual file extension.
    public var fileExtension: String {
        switch self {
        case .wav, .rf64: return "wav"
        case .flac: return "flac"
        case .ogg, .opus: return "ogg"
        case .mp3: return "mp3"
        }
    }

    /// Whether the sample format applies (lossy codecs choose their own).
    public var hasSampleFormat: Bool { self == .wav || self == .rf64 || self == .flac }

    /// Whether libsndfile can keep the header current while the file grows (never for Ogg: it corrupts the file).
    public var updatesHeaderAsItGoes: Bool { self == .wav || self == .rf64 }
}

/// How samples are stored in a PCM container.
public enum SampleFormat: String, CaseIterable, Sendable, Codable {
    case float32, int24, int16
}

/// Everything that decides the bytes of a new file.
public struct AudioFormat: Sendable, Equatable, Codable {
    public var container: Container
    public var sample: SampleFormat
    /// Encoder quality for lossy formats, 0 (smallest) ... 1 (best); FLAC compression level 0 ... 1. nil: default.
    public var quality: Double?

    public init(container: Container = .wav, sample: SampleFormat = .float32, quality: Double? = nil) {
        self.container = container
        self.sample = sample
        self.quality = quality
    }

    /// The libsndfile format word, or an explanation of why this combination cannot be written.
    public func sndfileFormat() -> Result<Int32, SoundFileError> {
        let major: Int32
        var minor: Int32
        switch sample {
        case .float32: minor = Int32(SF_FORMAT_FLOAT)
        case .int24: minor = Int32(SF_FORMAT_PCM_24)
        case .int16: minor = Int32(SF_FORMAT_PCM_16)
        }
        switch container {
        case .wav, .rf64: major = Int32(SF_FORMAT_RF64)
        case .flac:
            major = Int32(SF_FORMAT_FLAC)
            if sample == .float32 {
                return .failure(SoundFileError(.unsupportedFormat, path: "",
                                               message: "FLAC stores integers only: use int24 or int16"))
            }
        case .ogg:
            major = Int32(SF_FORMAT_OGG)
            minor = Int32(SF_FORMAT_VORBIS)
        case .opus:
            major = Int32(SF_FORMAT_OGG)
            minor = Int32(SF_FORMAT_OPUS)
        case .mp3:
            major = Int32(SF_FORMAT_MPEG)
            minor = Int32(SF_FORMAT_MPEG_LAYER_III)
        }
        return .success(major | minor)
    }

    /// Whether libsndfile on this machine can write this format with `channels` at `sampleRate`.
    public func check(channels: Int, sampleRate: Int) -> SoundFileError? {
        switch sndfileFormat() {
        case .failure(let e): return e
        case .success(let f):
            var info = SF_INFO()
            info.format = f
            info.channels = Int32(channels)
            info.samplerate = Int32(sampleRate)
            if sf_format_check(&info) == 0 {
                return SoundFileError(.unsupportedFormat, path: "",
                                      message: "libsndfile cannot write \(container.rawValue) with \(channels) "
                                             + "channels at \(sampleRate) Hz")
            }
            return nil
        }
    }
}
