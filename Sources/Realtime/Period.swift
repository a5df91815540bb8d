/// The one limit every real-time buffer is sized by: the longest JACK period (and so the longest plugin block) Tandem
/// runs. Scratch buffers, plugin `buf-size:maxBlockLength`, ring slack and the chain's stage buffers all use it.
public enum Period {
    public static let maxFrames = 8192
}
