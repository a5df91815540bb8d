import Foundation
import Presets

// The preset's units (seconds, dBFS, days, 1-based channels) turned into what the engine's pieces take (frames,
// 0-based channels, seconds). The one place the recorder needs when it is wired.

public extension LevelTrigger.Rule {
    /// The rule of `[recorder.trigger]` at `sampleRate`; the pre-trigger is the recorder's `preroll`.
    init(_ g: TriggerSection, sampleRate: Int, prerollSeconds: Double) {
        let rate = Double(sampleRate)
        func frames(_ s: Double) -> Int { Limits.frames(seconds: s, rate: rate) ?? 0 }
        let channels: [Int]?
        let combine: LevelTrigger.Combine
        switch g.channels {
        case .any: (channels, combine) = (nil, .any)
        case .all: (channels, combine) = (nil, .all)
        case .listed(let list, let all): (channels, combine) = (list.map { $0 - 1 }, all ? .all : .any)
        }
        self.init(measure: g.measure == .rms ? .rms : .peak, windowFrames: max(1, frames(g.windowSeconds)),
                  channels: channels, combine: combine, startDB: g.thresholdDB, stopDB: g.stopThresholdDB,
                  attackFrames: max(1, frames(g.attackSeconds)), holdFrames: max(1, frames(g.holdSeconds)),
                  pretriggerFrames: frames(prerollSeconds), postrollFrames: frames(g.postrollSeconds),
                  minFrames: frames(g.minLengthSeconds), maxFrames: g.maxLengthSeconds.map(frames))
    }
}

public extension RetentionPolicy {
    /// The policy of `[recorder.retention]`.
    init(_ k: RetentionSection) {
        self.init(keepSeconds: k.keepDays.map { $0 * 86_400 }, minFreeBytes: k.minFreeBytes.map(Int64.init),
                  guardSeconds: k.guardSeconds, dryRun: k.dryRun, closedChunksOfRunningTake: k.runningTake == .closedChunks)
    }
}

public extension Schedule {
    /// The parsed schedule of a preset's `schedule` (nil when absent; the loader has refused bad ones).
    static func of(_ r: RecorderSection) -> Schedule? {
        r.schedule.flatMap { Schedule.parse($0).schedule }
    }
}
