/// What the player tells its owner.
public enum PlayerEvent: Sendable, Equatable {
    case itemStarted(item: Int, path: String)
    /// A file could not be played; the queue went on with the next one.
    case itemFailed(item: Int, path: String, message: String)
    /// Every item has been played (no loop).
    case queueFinished
}
