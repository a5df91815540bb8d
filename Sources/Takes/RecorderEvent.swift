import Commands
import Foundation
import Presets

/// What the recorder tells its owner (read with `Recorder.drainEvents()`).
public enum RecorderEvent: Sendable {
    case takeStarted(take: Int, files: [String])
    case chunkStarted(take: Int, chunk: Int, files: [String])
    /// `sidecar`: the report's path, or "" when none could be written (a full disk).
    case takeFinished(report: TakeReport, sidecar: String)
    /// A file could not be written; the take was finalized and ended.
    case diskError(take: Int, message: String)
}

/// Where and when a take's first frames were captured, as the control side knows it when the take starts.
public struct TakeAnchor: Sendable {
    /// A stream position...
    public var streamPosition: Int
    /// ...its JACK frame time...
    public var frameTime: UInt32
    /// ...and its wall-clock time.
    public var wallClock: Date
    var sampleRate: Int
    /// Wall-clock seconds per second of audio: 1, or a test's virtual clock's speed (`SessionClock`).
    public var clockScale: Double = 1

    public init(streamPosition: Int, frameTime: UInt32, wallClock: Date, sampleRate: Int, clockScale: Double = 1) {
        self.streamPosition = streamPosition
        self.frameTime = frameTime
        self.wallClock = wallClock
        self.sampleRate = sampleRate
        self.clockScale = clockScale
    }

    func frameTime(at position: Int) -> UInt32 {
        frameTime &+ UInt32(truncatingIfNeeded: position - streamPosition)
    }

    func wallClock(at position: Int) -> Date {
        wallClock.addingTimeInterval(Double(position - streamPosition) / Double(sampleRate) * clockScale)
    }

    /// The stream position captured at wall-clock time `date` (rounded to the nearest frame).
    public func position(at date: Date) -> Int {
        let frames = (date.timeIntervalSince(wallClock) / clockScale * Double(sampleRate)).rounded()
        return streamPosition + (frames.isFinite && abs(frames) < 1e15 ? Int(frames) : 0)
    }
}

/// What the control side hands the writer with a start command.
public struct TakeContext: Sendable {
    public var anchor: TakeAnchor
    var ports: [TakeReport.Port]
    /// Xrun count of the recorder's client when the take starts.
    public var xrunsAtStart: Int
    var notes: [String] = []
    var playback: PlaybackAlignment?
    var plugins: [PluginSpec]? = nil
    var pluginLatency: Int? = nil
    /// Plugins of the chain bypassed, or settings of them ignored, when the take starts.
    var pluginProblems: [TakeReport.PluginProblem]? = nil
    /// The server's period when the take starts (0: not known), and the session's chains then, for the take's
    /// control log.
    var period = 0
    var chains: [String: ControlLog.ChainStart]? = nil

    public init(anchor: TakeAnchor, ports: [TakeReport.Port], xrunsAtStart: Int, notes: [String] = [],
                playback: PlaybackAlignment? = nil, plugins: [PluginSpec]? = nil, pluginLatency: Int? = nil,
                pluginProblems: [TakeReport.PluginProblem]? = nil, period: Int = 0,
                chains: [String: ControlLog.ChainStart]? = nil) {
        self.anchor = anchor
        self.ports = ports
        self.xrunsAtStart = xrunsAtStart
        self.notes = notes
        self.playback = playback
        self.plugins = plugins
        self.pluginLatency = pluginLatency
        self.pluginProblems = pluginProblems
        self.period = period
        self.chains = chains
    }
}
