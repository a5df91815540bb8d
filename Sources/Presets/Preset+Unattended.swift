import Foundation

// Takes that run themselves (issue 22): level-triggered takes, schedules, wall-clock rotation and retention.
// Parsed and validated here; the recorder acts on them (RecorderConfig(section:), DiskWriter, Session+Unattended).

/// How the level of a `[recorder.trigger]` is measured.
public enum TriggerMeasure: String, Sendable, CaseIterable {
    /// The highest sample in the window.
    case peak
    /// The root mean square over the window.
    case rms
}

/// Which channels a trigger watches, and whether any or all of them must be loud.
public enum TriggerChannels: Sendable, Equatable {
    case any
    case all
    /// These 1-based channels; `all`: every one of them must be loud, else any one.
    case listed([Int], all: Bool)
}

/// `[recorder.trigger]`: start a take when the level stays over `threshold` for `attack`, stop it when it stays
/// under `stopThreshold` for `hold`; the recorder's `preroll` is kept before the trigger, `postroll` after hold.
public struct TriggerSection: Sendable, Equatable {
    public var measure: TriggerMeasure = .peak
    public var windowSeconds: Double = 0.01
    public var channels: TriggerChannels = .any
    /// dBFS.
    public var thresholdDB: Double = -30
    /// dBFS, at most `thresholdDB` (hysteresis); default 6 dB under it.
    public var stopThresholdDB: Double = -36
    public var attackSeconds: Double = 0.01
    public var holdSeconds: Double = 2
    public var postrollSeconds: Double = 0
    public var minLengthSeconds: Double = 0
    public var maxLengthSeconds: Double?
    public init() {}
}

/// What a retention pass may do to takes of a take still being written.
public enum RunningTakeRetention: String, Sendable, CaseIterable {
    /// Nothing: none of its chunks is deleted.
    case keep
    /// Its closed chunks may go (for one endless take rotated hourly); never the chunk being written.
    case closedChunks = "closed-chunks"
}

/// `[recorder.retention]`: keep takes newer than `keepDays`, keep at least `minFreeBytes` free; never a chunk younger
/// than `guardSeconds`, never the take being written, only this session's takes.
public struct RetentionSection: Sendable, Equatable {
    public var keepDays: Double?
    public var minFreeBytes: Int?
    public var guardSeconds: Double = 3600
    public var dryRun = false
    public var runningTake: RunningTakeRetention = .keep
    public init() {}
}

public extension Preset {
    /// Keys this preset sets that are parsed and validated but not yet acted on by the recorder (empty when none):
    /// `run` and `preset check` refuse such a preset rather than run it without what it asks for. The level
    /// trigger, schedules, clock rotation and retention are all acted on; the list stays for what comes next.
    var pendingFeatures: [String] { [] }

    /// `pendingFeatures` as problems: `run` refuses such a preset rather than run it without what it asks for.
    var pendingProblems: [PresetProblem] {
        pendingFeatures.map {
            PresetProblem(file: path ?? "preset", line: nil, key: $0.components(separatedBy: " ").first ?? $0,
                          message: "\($0) is valid, but this build's recorder does not act on it yet; nothing started")
        }
    }
}

extension Validator {
    /// `schedule = [...]` in [recorder]: each entry parsed, overlaps refused, each problem on its entry's line.
    mutating func schedule(_ t: TOMLTable, _ r: inout RecorderSection) {
        guard let v = t["schedule"] else { return }
        let key = "recorder.schedule"
        guard case .array(let items, let line) = v else {
            problem(key, v.line, "expected an array of strings like [\"Mon-Fri 09:00-17:00\"], found \(v.typeName)")
            return
        }
        var texts: [String] = []
        var lines: [Int] = []
        for item in items {
            guard case .string(let s, let l) = item else {
                problem(key, item.line, "expected strings like \"Mon-Fri 09:00-17:00\", found \(item.typeName)")
                return
            }
            texts.append(s)
            lines.append(l)
        }
        if texts.isEmpty { problem(key, line, "an empty schedule never records (leave the key out to record at any time)") }
        let (_, problems) = Schedule.parse(texts)
        for p in problems { problem(key, lines.indices.contains(p.index) ? lines[p.index] : line, p.description) }
        r.schedule = texts
        if r.start == .armed || r.start == .transport {
            problem(key, line, "a schedule works with start = \"immediately\" (record in its windows) or \"level\" (trigger in its windows), not \"\(r.start.rawValue)\"")
        }
    }

    /// `[recorder.trigger]`.
    mutating func trigger(_ t: TOMLTable, _ r: inout RecorderSection) {
        let s = "recorder.trigger"
        guard let v = t["trigger"] else {
            if r.start == .level {
                problem("recorder.start", t.keyLines["start"], "start = \"level\" needs a [recorder.trigger] table with at least 'threshold'")
            }
            return
        }
        guard case .table(let tt) = v else {
            problem(s, v.line, "expected a table [recorder.trigger], found \(v.typeName)")
            return
        }
        unknownKeys(tt, ["measure", "window", "channels", "combine", "threshold", "stop_threshold", "attack", "hold",
                         "postroll", "min_length", "max_length"], section: s)
        var g = TriggerSection()
        g.measure = choice(tt, "measure", s, TriggerMeasure.self) ?? .peak
        g.windowSeconds = number(tt, "window", s, Limits.triggerWindowSeconds, unit: " seconds") ?? g.windowSeconds
        if let th = number(tt, "threshold", s, Limits.triggerDBFS, unit: " dBFS") {
            g.thresholdDB = th
            g.stopThresholdDB = max(Limits.triggerDBFS.lowerBound, th - 6)
        } else if tt["threshold"] == nil {
            problem("\(s).threshold", tt.line, "a trigger needs 'threshold' (dBFS, e.g. -30)")
        }
        if let stop = number(tt, "stop_threshold", s, Limits.triggerDBFS, unit: " dBFS") {
            if stop > g.thresholdDB && tt["threshold"] != nil {
                problem("\(s).stop_threshold", tt.keyLines["stop_threshold"],
                        "\(Self.format(stop)) dBFS is above the start threshold \(Self.format(g.thresholdDB)) dBFS (it must be at or under it)")
            }
            g.stopThresholdDB = stop
        }
        g.attackSeconds = number(tt, "attack", s, Limits.triggerAttackSeconds, unit: " seconds") ?? g.attackSeconds
        g.holdSeconds = number(tt, "hold", s, Limits.triggerHoldSeconds, unit: " seconds") ?? g.holdSeconds
        g.postrollSeconds = number(tt, "postroll", s, Limits.prerollSeconds, unit: " seconds") ?? 0
        g.minLengthSeconds = number(tt, "min_length", s, Limits.triggerMinLengthSeconds, unit: " seconds") ?? 0
        g.maxLengthSeconds = number(tt, "max_length", s, Limits.durationSeconds, unit: " seconds")
        let combine = tt["combine"] == nil ? nil : choice(tt, "combine", s, TriggerCombine.self)
        if let c = tt["channels"] {
            switch c {
            case .string(let word, let line):
                switch word {
                case "any": g.channels = .any
                case "all": g.channels = .all
                default: problem("\(s).channels", line, "'\(word)' is not allowed (\"any\", \"all\", or a list of channel numbers like [1, 2])")
                }
                if combine != nil { problem("\(s).combine", tt.keyLines["combine"], "'combine' goes with a list of channels") }
            case .array(let items, let line):
                var list: [Int] = []
                for item in items {
                    if case .integer(let i, _) = item, (1...r.ports.count).contains(i) { list.append(i) } else {
                        problem("\(s).channels", item.line, "channels are numbers 1 to \(r.ports.count) (the recorder's ports)")
                    }
                }
                if items.isEmpty { problem("\(s).channels", line, "an empty list watches nothing") }
                if Set(list).count != list.count { problem("\(s).channels", line, "a channel is listed twice") }
                g.channels = .listed(list, all: combine == .all)
            default:
                problem("\(s).channels", c.line, "expected \"any\", \"all\" or a list of channel numbers, found \(c.typeName)")
            }
        } else if combine != nil {
            problem("\(s).combine", tt.keyLines["combine"], "'combine' goes with a list of channels")
        }
        // The start is decided `attack` (plus a window) after the trigger frame, and the pre-roll must still be in
        // the ring then.
        if g.windowSeconds > r.ringSeconds {
            problem("\(s).window", tt.keyLines["window"], "\(Self.format(g.windowSeconds)) s is longer than the ring (\(Self.format(r.ringSeconds)) s)")
        } else if g.attackSeconds + g.windowSeconds > r.ringSeconds {
            problem("\(s).attack", tt.keyLines["attack"], "attack + window (\(Self.format(g.attackSeconds + g.windowSeconds)) s) must fit in the ring"
                    + " (\(Self.format(r.ringSeconds)) s): a take's start is decided that long after its trigger, and its pre-roll must still be there")
        }
        if let maxLength = g.maxLengthSeconds {
            if maxLength < g.minLengthSeconds {
                problem("\(s).max_length", tt.keyLines["max_length"], "shorter than min_length (\(Self.format(g.minLengthSeconds)) s)")
            }
            let decided = r.prerollSeconds + g.attackSeconds + g.windowSeconds
            if maxLength <= decided {
                problem("\(s).max_length", tt.keyLines["max_length"], "\(Self.format(maxLength)) s is not longer than preroll + attack + window"
                        + " (\(Self.format(decided)) s): every take would be cut before its start is decided")
            }
        }
        if r.start != .level {
            problem(s, tt.line, "[recorder.trigger] needs start = \"level\"")
        }
        r.trigger = g
    }

    /// `[recorder.retention]`.
    mutating func retention(_ t: TOMLTable, _ r: inout RecorderSection) {
        let s = "recorder.retention"
        guard let v = t["retention"] else { return }
        guard case .table(let tt) = v else {
            problem(s, v.line, "expected a table [recorder.retention], found \(v.typeName)")
            return
        }
        unknownKeys(tt, ["keep_days", "min_free", "guard", "dry_run", "running_take"], section: s)
        var out = RetentionSection()
        out.keepDays = number(tt, "keep_days", s, Limits.retentionKeepDays, unit: " days")
        if let f = tt["min_free"] {
            switch f {
            case .integer(let i, let line):
                if Limits.retentionFreeBytes.contains(i) { out.minFreeBytes = i } else {
                    problem("\(s).min_free", line, "\(i) bytes is out of range (64K to 1P)")
                }
            case .string(let text, let line):
                if let b = Self.size(text), Limits.retentionFreeBytes.contains(b) { out.minFreeBytes = b } else {
                    problem("\(s).min_free", line, "'\(text)' is not a size from 64K to 1P (e.g. \"20G\")")
                }
            default: problem("\(s).min_free", f.line, "expected a size like \"20G\" or a byte count, found \(f.typeName)")
            }
        }
        if let g = tt["guard"] {
            switch g {
            case .integer(0, _), .float(0, _):
                problem("\(s).guard", g.line, "a guard of 0 would let a pass delete a chunk the moment it is closed (or a take"
                        + " whose report is not yet written); at least 60 seconds")
            default:
                out.guardSeconds = number(tt, "guard", s, Limits.retentionGuardSeconds, unit: " seconds") ?? out.guardSeconds
            }
        }
        out.dryRun = bool(tt, "dry_run", s) ?? false
        out.runningTake = choice(tt, "running_take", s, RunningTakeRetention.self) ?? .keep
        if out.keepDays == nil && out.minFreeBytes == nil && tt["keep_days"] == nil && tt["min_free"] == nil {
            problem(s, tt.line, "a retention policy needs 'keep_days', 'min_free' or both")
        }
        if let days = out.keepDays, days * 86_400 <= out.guardSeconds {
            problem("\(s).keep_days", tt.keyLines["keep_days"], "\(Self.format(days)) days is within the guard time"
                    + " (\(Self.format(out.guardSeconds)) s): nothing could ever be kept that long and deleted")
        }
        if out.runningTake == .closedChunks, let days = out.keepDays, let rotate = r.rotateSeconds,
           rotate + out.guardSeconds > days * 86_400 {
            problem("\(s).keep_days", tt.keyLines["keep_days"], "with running_take = \"closed-chunks\" a chunk (\(Self.format(rotate)) s)"
                    + " plus the guard must fit in keep_days, or the take being written would lose chunks as soon as they close")
        }
        r.retention = out
    }

    /// `rotate_on_clock = true`: `rotate` must divide a day, in whole seconds.
    mutating func rotateOnClock(_ t: TOMLTable, _ r: inout RecorderSection) {
        guard let on = bool(t, "rotate_on_clock", "recorder") else { return }
        r.rotateOnClock = on
        guard on else { return }
        let line = t.keyLines["rotate_on_clock"]
        guard let seconds = r.rotateSeconds else {
            problem("recorder.rotate_on_clock", line, "needs 'rotate' (e.g. rotate = 3600 for a new chunk on every hour)")
            return
        }
        if seconds != seconds.rounded() || 86_400 % Int(seconds) != 0 {
            problem("recorder.rotate_on_clock", line, "rotate = \(Self.format(seconds)) does not divide a day into whole seconds"
                    + " (use 60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200 or 86400)")
        }
    }
}

/// `combine` of a listed trigger.
public enum TriggerCombine: String, Sendable, CaseIterable {
    case any, all
}
