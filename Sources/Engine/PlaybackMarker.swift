import SoundFile

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
    /// The file's cue points, by file frame (empty for a MIDI file or a file without any; see `DiskReader.cues`).
    var cues: [CueMarker] = []
    /// For the first marker after a seek or a new queue: the ring's read position when the reader jumped. What lies
    /// between it and `ringPosition` is stale (discarded, never played), so the segment before ends there for cues.
    var staleFrom: Int?

    /// The ring position at which file frame `frame` of this stretch plays.
    func ringPosition(ofFileFrame frame: Int) -> Int {
        ringPosition + Int((Double(frame - fileFrame) / max(ratio, 1e-9)).rounded())
    }
}

/// A cue point of a file the player played, reached: its frame has been played (see `Player.drainCues`).
public struct PlayerCue: Sendable, Equatable {
    /// The queue item, from 0.
    public var item: Int
    public var path: String
    /// The cue's frame in the file.
    public var frame: Int
    /// Its label ("" when it has none).
    public var label: String
    /// The JACK frame time at which that frame went out of the player's ports (from the last cycle's frame time and
    /// ring position; exact while the playback ran without a pause or an underrun since).
    public var frameTime: UInt32
}
