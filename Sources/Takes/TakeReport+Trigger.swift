import Foundation

extension TakeReport {
    /// What started and ended a level-triggered take.
    public struct TriggerInfo: Codable, Sendable, Equatable {
        /// Take frame of the first frame the rule named (the take starts `pretrigger` before it, or later when the
        /// stream or the previous take did not leave that much).
        public var triggerFrame: Int
        /// The level that fired (dBFS) and the 1-based channel it was on.
        public var levelDB: Double
        public var channel: Int
        /// true: the continuation of a take that reached the maximum length.
        public var continued: Bool
        /// Why it ended (absent while it runs): quiet, maxLength, minLength, stopped.
        public var ended: LevelTrigger.EndReason?
        /// Take frame of the last frame over the stop threshold (absent when it did not end by being quiet).
        public var lastLoudFrame: Int?

        /// From the trigger's decisions (stream positions) and the take's first frame's stream position.
        public init(start: LevelTrigger.Start, end: LevelTrigger.End? = nil, takeStreamStart: Int) {
            triggerFrame = start.triggerFrame - takeStreamStart
            levelDB = (start.levelDB * 100).rounded() / 100
            channel = start.channel + 1
            continued = start.continued
            ended = end?.reason
            lastLoudFrame = end?.lastLoudFrame.map { $0 - takeStreamStart }
        }
    }
}
