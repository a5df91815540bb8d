import Engine
import Foundation
import Presets

/// Where the player was when the JACK server went away, so that it goes on from there when the server is back
/// (rather than from the top of its queue).
struct PlayerResumePoint: Sendable, Equatable {
    var queue: [String]
    var item: Int
    /// Frame within the item's file (the file's own rate).
    var frame: Int
    /// Playing then (paused or stopped: cued, silent, until asked to play).
    var playing: Bool
}
