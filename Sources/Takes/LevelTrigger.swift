import Foundation

/// Decides level-triggered takes from the recorded samples: where each take starts (the trigger frame less the
/// pre-trigger) and where it ends (the last loud frame plus hold and post-roll), to the frame.
///
/// Runs on the disk-writer thread over the frames it moves out of the capture ring (never on the RT thread). It
/// decides with a delay: a start is known `attack` (plus the peak window) after the trigger frame, an end `hold`
/// after the last loud frame; the frames it names are stream positions, so the writer keeps at least
/// `rule.framesToKeep` frames behind its read position while no take runs and starts or ends the take at exactly
/// the frames given.
///
/// Levels. `peak`: a channel is over a threshold at frame n when a sample of it in the trailing window
/// [n - window + 1, n] is (the window bridges zero crossings; a sound of D frames counts as loud for D frames: the
/// attack is measured from the first to the last over-threshold sample of a run with no gap of a window or more).
/// `rms`: the root mean square over the trailing window [n - window + 1, n] (frames before the stream are silence);
/// a sound is loud from where the window's RMS reaches the threshold, so RMS smooths over the window.
///
/// Channels: `any` of the watched channels over the threshold starts a take and the take goes on while any is over
/// the stop threshold; `all`: every watched channel must be over the start threshold, and the take stops once one
/// of them has stayed under the stop threshold for the hold time.
///
/// Threads: not thread-safe; one owner (the disk writer).
public struct LevelTrigger {
    public enum Measure: String, Sendable, Equatable, CaseIterable {
        case peak, rms
    }

    public enum Combine: String, Sendable, Equatable, CaseIterable {
        case any, all
    }

    /// The rule, in frames and linear amplitudes (see `Rule.init(seconds...)` for the preset's units).
    public struct Rule: Sendable, Equatable {
        public var measure: Measure
        /// Window of the level measure in frames (≥ 1).
        public var windowFrames: Int
        /// 0-based channels watched (nil: every channel).
        public var channels: [Int]?
        public var combine: Combine
        /// Start threshold in dBFS, and stop threshold (≤ start: hysteresis).
        public var startDB: Double
        public var stopDB: Double
        /// How long the level must stay over `startDB` before a take starts (≥ 1 frame).
        public var attackFrames: Int
        /// How long the level must stay under `stopDB` before the take stops (≥ 1 frame).
        public var holdFrames: Int
        /// Frames kept before the trigger frame (the recorder's pre-roll).
        public var pretriggerFrames: Int
        /// Frames kept after hold.
        public var postrollFrames: Int
        /// A take is at least this long (its end is moved out to `start + minFrames`); 0: no minimum.
        public var minFrames: Int
        /// A take is at most this long: at `start + maxFrames` it ends and the next take starts on that very frame
        /// (concatenated, they are one continuous recording); nil: no maximum.
        public var maxFrames: Int?

        public init(measure: Measure = .peak, windowFrames: Int = 480, channels: [Int]? = nil, combine: Combine = .any,
                    startDB: Double, stopDB: Double, attackFrames: Int, holdFrames: Int, pretriggerFrames: Int = 0,
                    postrollFrames: Int = 0, minFrames: Int = 0, maxFrames: Int? = nil) {
            self.measure = measure
            self.windowFrames = max(1, windowFrames)
            self.channels = channels
            self.combine = combine
            self.startDB = startDB
            self.stopDB = min(stopDB, startDB)
            self.attackFrames = max(1, attackFrames)
            self.holdFrames = max(1, holdFrames)
            self.pretriggerFrames = max(0, pretriggerFrames)
            self.postrollFrames = max(0, postrollFrames)
            self.minFrames = max(0, minFrames)
            self.maxFrames = maxFrames.map { max(1, $0) }
        }

        /// How far behind the newest frame the writer must still hold frames while no take runs, so that a start
        /// decided now can begin `pretriggerFrames` before its trigger frame.
        public var framesToKeep: Int {
            pretriggerFrames + attackFrames + (measure == .peak ? windowFrames : 0)
        }
    }

    /// A take begins.
    public struct Start: Sendable, Equatable {
        /// First frame of the take (stream position): the trigger frame less the pre-trigger, never before the
        /// stream's first frame nor inside the previous take.
        public var startFrame: Int
        /// The first frame the rule named (where the level crossed the start threshold); for a take continued
        /// after `maxFrames`, its first frame.
        public var triggerFrame: Int
        /// The highest level (dBFS) over the attack (for `all`: the lowest of the watched channels' highest).
        public var levelDB: Double
        /// The 0-based channel that had it.
        public var channel: Int
        /// false: a take started by the level; true: the continuation of a take that reached `maxFrames`.
        public var continued: Bool
    }

    public enum EndReason: String, Sendable, Equatable, Codable {
        /// The level stayed under the stop threshold for the hold time.
        case quiet
        /// The take reached the maximum length (the next take starts on the next frame).
        case maxLength
        /// Quiet, but the take was moved out to the minimum length.
        case minLength
        /// Ended from outside (`stop(at:)`).
        case stopped
    }

    /// A take ends.
    public struct End: Sendable, Equatable {
        /// One past the take's last frame (stream position). May lie ahead of the frames fed so far (hold and
        /// post-roll); the writer writes up to it.
        public var endFrame: Int
        /// The last frame the level was over the stop threshold (nil for a take ended at its maximum length while
        /// loud, or stopped).
        public var lastLoudFrame: Int?
        public var reason: EndReason
    }

    public enum Event: Sendable, Equatable {
        case start(Start)
        case end(End)
    }

    public let rule: Rule
    public let channelCount: Int
    /// The next stream position `feed` expects.
    public private(set) var position: Int
    /// The take in progress: its start frame.
    public private(set) var runningSince: Int?

    private let watched: [Int]
    private let startLinear: Double
    private let stopLinear: Double
    private let startSum: Double
    private let stopSum: Double
    /// Per watched channel: the last frame over the start / stop threshold (Int.min / 2: never).
    private var lastOverStart: [Int]
    private var lastOverStop: [Int]
    /// Per watched channel: the highest level in the current loud run.
    private var runMax: [Double]
    /// Per watched channel: the level at the newest frame.
    private var levels: [Double]
    private var runStart: Int?
    /// RMS: per watched channel the squares of the window's frames, and their sum.
    private var squares: [Double]
    private var sums: [Double]
    private var slot = 0
    /// End of the last take (a new one never starts before it).
    private var floor: Int

    private static let never = Int.min / 2

    /// `origin`: the stream position of the first frame that will be fed.
    public init(rule: Rule, channels: Int, origin: Int = 0) {
        self.rule = rule
        self.channelCount = max(1, channels)
        let valid = (rule.channels ?? Array(0..<channelCount)).filter { $0 >= 0 && $0 < channels }
        watched = valid.isEmpty ? [0] : valid
        startLinear = pow(10, rule.startDB / 20)
        stopLinear = pow(10, rule.stopDB / 20)
        startSum = startLinear * startLinear * Double(rule.windowFrames)
        stopSum = stopLinear * stopLinear * Double(rule.windowFrames)
        lastOverStart = Array(repeating: Self.never, count: watched.count)
        lastOverStop = lastOverStart
        runMax = Array(repeating: 0, count: watched.count)
        levels = runMax
        squares = rule.measure == .rms ? Array(repeating: 0, count: watched.count * rule.windowFrames) : []
        sums = Array(repeating: 0, count: watched.count)
        position = origin
        floor = origin
    }

    /// Feeds `frames` interleaved frames (`channelCount` samples each) that follow the frames fed before; returns
    /// what was decided on them, in order.
    public mutating func feed(_ samples: UnsafeBufferPointer<Float>, frames: Int) -> [Event] {
        var events: [Event] = []
        let n = min(frames, samples.count / channelCount)
        guard n > 0, let base = samples.baseAddress else { return events }
        for i in 0..<n {
            step(base + i * channelCount, &events)
        }
        return events
    }

    /// Feeds an array (tests, offline use).
    public mutating func feed(_ samples: [Float]) -> [Event] {
        samples.withUnsafeBufferPointer { feed($0, frames: $0.count / channelCount) }
    }

    /// Frames the writer has no samples for (a gap it fills with silence): fed as silence.
    public mutating func feedSilence(frames: Int) -> [Event] {
        var events: [Event] = []
        guard frames > 0 else { return events }
        let zero = [Float](repeating: 0, count: channelCount)
        zero.withUnsafeBufferPointer { z in
            guard let base = z.baseAddress else { return }
            for _ in 0..<frames { step(base, &events) }
        }
        return events
    }

    /// Ends a running take at `frame` (at least the frame after its start) from outside: the recorder stops.
    public mutating func stop(at frame: Int) -> End? {
        guard let start = runningSince else { return nil }
        runningSince = nil
        let end = max(frame, start + 1)
        floor = end
        runStart = nil
        return End(endFrame: end, lastLoudFrame: nil, reason: .stopped)
    }

    private func combinedLoud(_ n: Int) -> Bool {
        let bridge = rule.measure == .peak ? rule.windowFrames : 1
        let any = rule.combine == .any
        for k in 0..<lastOverStart.count {
            let loud = n - lastOverStart[k] < bridge
            if any && loud { return true }
            if !any && !loud { return false }
        }
        return !any
    }

    /// The last frame the rule counts as over the stop threshold.
    private var combinedLastOverStop: Int {
        var out = lastOverStop[0]
        let any = rule.combine == .any
        for k in 1..<max(1, lastOverStop.count) {
            out = any ? Swift.max(out, lastOverStop[k]) : Swift.min(out, lastOverStop[k])
        }
        return out
    }

    private mutating func step(_ frame: UnsafePointer<Float>, _ events: inout [Event]) {
        let n = position
        position += 1
        let w = rule.windowFrames
        for k in 0..<watched.count {
            let x = Double(frame[watched[k]])
            var current: Double
            switch rule.measure {
            case .peak:
                current = abs(x)
                if current >= startLinear { lastOverStart[k] = n }
                if current >= stopLinear { lastOverStop[k] = n }
            case .rms:
                let sq = x * x
                let at = k * w + slot
                sums[k] += sq - squares[at]
                squares[at] = sq
                if sums[k] < 0 { sums[k] = 0 }
                if sums[k] >= startSum { lastOverStart[k] = n }
                if sums[k] >= stopSum { lastOverStop[k] = n }
                current = (sums[k] / Double(w)).squareRoot()
            }
            levels[k] = current
            if runStart != nil && current > runMax[k] { runMax[k] = current }
        }
        if rule.measure == .rms {
            slot += 1
            if slot == w {
                // Re-add the window exactly once per window, so rounding never accumulates over hours.
                slot = 0
                for k in watched.indices {
                    var s = 0.0
                    for j in 0..<w { s += squares[k * w + j] }
                    sums[k] = s
                }
            }
        }

        if let start = runningSince {
            if let maxFrames = rule.maxFrames, n + 1 - start >= maxFrames {
                var next = start
                while n + 1 - next >= maxFrames {
                    next += maxFrames
                    events.append(.end(End(endFrame: next, lastLoudFrame: nil, reason: .maxLength)))
                    let k = levels.indices.max { levels[$0] < levels[$1] } ?? 0
                    events.append(.start(Start(startFrame: next, triggerFrame: next, levelDB: Self.db(levels[k]),
                                               channel: watched[k], continued: true)))
                }
                runningSince = next
                return
            }
            let last = combinedLastOverStop
            if n - last >= rule.holdFrames && n - max(last, start) >= rule.holdFrames {
                let lastLoud = last >= start ? last : nil
                var end = max(last, start - 1) + 1 + rule.holdFrames + rule.postrollFrames
                var reason = EndReason.quiet
                if end - start < rule.minFrames {
                    end = start + rule.minFrames
                    reason = .minLength
                }
                if let maxFrames = rule.maxFrames, end - start > maxFrames {
                    end = start + maxFrames
                    reason = .maxLength
                }
                events.append(.end(End(endFrame: end, lastLoudFrame: lastLoud, reason: reason)))
                runningSince = nil
                floor = end
                runStart = nil
            }
            return
        }

        if combinedLoud(n) {
            if runStart == nil {
                runStart = n
                runMax = levels
            }
            guard let first = runStart else { return }
            // Peak: the run stays loud up to a window past its last over-threshold sample; the attack is measured
            // between first and last over-threshold samples, so a window more of run is needed.
            let needed = rule.attackFrames + (rule.measure == .peak ? rule.windowFrames - 1 : 0)
            if n - first + 1 >= needed {
                let start = Swift.max(first - rule.pretriggerFrames, floor)
                runningSince = start
                let (lvl, ch) = firedLevel()
                events.append(.start(Start(startFrame: start, triggerFrame: first, levelDB: Self.db(lvl), channel: ch,
                                           continued: false)))
                runStart = nil
            }
        } else {
            runStart = nil
        }
    }

    private func firedLevel() -> (Double, Int) {
        switch rule.combine {
        case .any:
            let k = runMax.indices.max { runMax[$0] < runMax[$1] } ?? 0
            return (runMax[k], watched[k])
        case .all:
            let k = runMax.indices.min { runMax[$0] < runMax[$1] } ?? 0
            return (runMax[k], watched[k])
        }
    }

    /// dBFS of a linear level (-inf for silence is written as -200).
    public static func db(_ linear: Double) -> Double {
        linear > 0 ? Swift.max(-200, 20 * log10(linear)) : -200
    }
}
