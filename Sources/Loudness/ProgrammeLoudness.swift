/// One programme's loudness as reports and status show it: which channels (port names), and what was read. In a
/// take or render report the current values (`momentary`, `shortTerm`) are left out: what counts there is the whole.
public struct ProgrammeLoudness: Codable, Equatable, Sendable {
    /// The engine measured (status only: "recorder", "player", a rack's name).
    public var engine: String?
    public var channels: [String]
    public var momentary: Double?
    public var shortTerm: Double?
    public var integrated: Double?
    public var range: Double?
    public var truePeak: Double?
    public var samplePeak: Double?
    public var momentaryMax: Double?
    public var shortTermMax: Double?
    public var seconds: Double
    public var note: String?

    /// `summary`: a report's entry (no current values).
    public init(engine: String? = nil, channels: [String], reading r: LoudnessReading, summary: Bool = false) {
        self.engine = engine
        self.channels = channels
        momentary = summary ? nil : r.momentary
        shortTerm = summary ? nil : r.shortTerm
        integrated = r.integrated
        range = r.range
        truePeak = r.truePeak
        samplePeak = r.samplePeak
        momentaryMax = r.momentaryMax
        shortTermMax = r.shortTermMax
        seconds = r.seconds
        note = r.note
    }
}

/// The meters of an engine's programmes, fed with the engine's interleaved frames: each group is a run of
/// neighbouring channels. Not thread-safe: one thread feeds and reads it.
public final class ProgrammeMeters {
    public let groups: [Range<Int>]
    public let labels: [[String]]
    public let meters: [LoudnessMeter]
    /// Channels of the frames fed (the stride).
    public let channels: Int

    /// Meters for `groups` of frames of `channels` channels named `names`. Groups the standard does not weigh are
    /// refused (`LoudnessError`).
    public init(groups: [Range<Int>], channels: Int, names: [String], sampleRate: Double) throws(LoudnessError) {
        var meters: [LoudnessMeter] = []
        for g in groups {
            guard g.lowerBound >= 0, g.upperBound <= channels else { throw .channels(g.count) }
            meters.append(try LoudnessMeter(channels: g.count, sampleRate: sampleRate))
        }
        self.groups = groups
        self.meters = meters
        self.channels = channels
        labels = groups.map { g in g.map { $0 < names.count ? names[$0] : "\($0 + 1)" } }
    }

    /// Measures `frames` interleaved frames of `channels` channels.
    public func add(_ samples: UnsafePointer<Float>, frames: Int) {
        guard frames > 0 else { return }
        for (g, m) in zip(groups, meters) { m.add(samples, frames: frames, stride: channels, offset: g.lowerBound) }
    }

    /// Measures `frames` frames of silence.
    public func addSilence(frames: Int) {
        for m in meters { m.addSilence(frames: frames) }
    }

    public func reset() { for m in meters { m.reset() } }

    /// Each programme's reading (`summary`: for a report).
    public func readings(engine: String? = nil, summary: Bool = false) -> [ProgrammeLoudness] {
        zip(labels, meters).map { ProgrammeLoudness(engine: engine, channels: $0, reading: $1.reading, summary: summary) }
    }
}
