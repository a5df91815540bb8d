import SoundFile

/// One continuous libsoxr stream through which consecutive items at the same foreign rate, channel count and
/// quality pass. Reader thread only.
final class ResampleStream {
    let resampler: Resampler
    let fileRate: Int
    let channels: Int
    let quality: ResampleQuality
    /// Ring position of the stream's first output frame (set when its first item's marker is published).
    var startRing = 0
    /// Input frames the converter has taken since the stream began.
    var fed = 0

    init(resampler: Resampler, fileRate: Int, channels: Int, quality: ResampleQuality) {
        self.resampler = resampler
        self.fileRate = fileRate
        self.channels = channels
        self.quality = quality
    }

    /// Output frames from the stream's start to where input frame `input` comes out, rounded to the nearest frame
    /// (the converter's output starts aligned with its input: libsoxr trims its own delay). Exact integer arithmetic,
    /// so markers do not drift over days of looping.
    func outputFrames(forInput input: Int, outputRate: Int) -> Int {
        let whole = input / fileRate, part = input % fileRate
        return whole * outputRate + (part * outputRate + fileRate / 2) / fileRate
    }
}
