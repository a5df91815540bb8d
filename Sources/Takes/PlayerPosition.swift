import Foundation

/// Where playback is.
public struct PlayerPosition: Sendable, Equatable {
    /// Index in the queue, and its path (nil before anything was queued).
    public var item: Int?
    public var path: String?
    /// Frame within the file (in the file's own rate) and seconds.
    public var frame: Int
    public var seconds: Double
    /// The file's length in frames and seconds.
    public var frames: Int
    public var duration: Double
    public var playing: Bool
    public var paused: Bool

    public init(item: Int?, path: String?, frame: Int, seconds: Double, frames: Int, duration: Double, playing: Bool,
                paused: Bool) {
        self.item = item
        self.path = path
        self.frame = frame
        self.seconds = seconds
        self.frames = frames
        self.duration = duration
        self.playing = playing
        self.paused = paused
    }
}
