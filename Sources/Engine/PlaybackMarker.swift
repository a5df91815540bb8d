/// Where in the queue a stretch of the playback ring comes from: from ring position `ringPosition` on, the ring
/// holds item `item` starting at file frame `fileFrame`, `ratio` file frames per output frame. For an item that
/// continues a resampler stream, `ringPosition` is where its first frame comes out of the converter (its input
/// position in the stream times the rate ratio), which can be ahead of what the reader has written so far.
struct PlaybackMarker: Sendable {
    var ringPosition: Int
    var item: Int
    var path: String
    var fileFrame: Int
    var ratio: Double
    var fileFrames: Int
    var fileRate: Int
    /// The same item again because of `loop item` (not announced as a new item).
    var repeatOfItem = false
}
