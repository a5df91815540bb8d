import Engine
import Foundation
import Prometheus

/// The session's counters and gauges in the Prometheus text format (swift-prometheus writes the format), for an
/// operator's alerts: frames recorded, dropped (overruns: the disk too slow), missed (cycles the server ran without
/// Tandem), xruns, underruns, ring fill, cycle cost quantiles, disk free and the recording time it leaves, takes.
///
/// Counters stay monotonic across engines that are re-created (a reload that changed ports, a server that came
/// back, an NSM switch): each engine counter is read as a running value, and a value lower than the last one read
/// means a new engine, whose whole value is added.
///
/// Threads: control thread only (`observe` from the run loop, `render` when a scrape arrives in the same loop).
public final class SessionMetrics {
    private let registry = PrometheusCollectorRegistry()
    private let session: Session

    private let framesRecorded: Counter
    private let droppedFrames: Counter
    private let recorderMissed: Counter
    private let playerMissed: Counter
    private let underrunFrames: Counter
    private let xruns: [String: Counter]
    private let takesStarted: Counter
    private let takesFinished: Counter
    private let diskErrors: Counter
    private let serverLosses: Counter
    private let recording: Gauge
    private let takeSeconds: Gauge
    private let ringFill: [String: Gauge]
    private let ringCapacity: [String: Gauge]
    private let cycle: [String: [Gauge]]
    private let diskFree: Gauge
    private let diskSecondsLeft: Gauge
    private let serverLost: Gauge
    private let playing: Gauge
    // Racks (isolated plugin processes) are not built yet: when they are, `tandem_rack_crashes_total{rack}` and
    // `tandem_rack_restarts_total{rack}` counters go here, fed from the session's rack supervisor like the rest.

    /// Last raw values read, per counter key (see the type's note on re-created engines).
    private var last: [String: Int] = [:]
    /// Frames of takes that have finished (the running take's frames come from the status).
    private var finishedFrames = 0

    public init(session: Session) {
        self.session = session
        let r = registry
        /// `tandem_NAME` (the unit is part of NAME), with its help line.
        func name(_ full: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "tandem", metricName: full, unitName: "", helpText: help)
        }
        framesRecorded = r.makeCounter(descriptor: name("recorder_frames_recorded_total", "Frames written to takes."))
        droppedFrames = r.makeCounter(descriptor: name("recorder_dropped_frames_total", "Frames lost because the capture ring was full (the disk too slow); silence in the take."))
        recorderMissed = r.makeCounter(descriptor: name("missed_frames_total", "Frames of cycles the JACK server ran without calling the engine."), labels: [("engine", "recorder")])
        playerMissed = r.makeCounter(descriptor: name("missed_frames_total", "Frames of cycles the JACK server ran without calling the engine."), labels: [("engine", "player")])
        underrunFrames = r.makeCounter(descriptor: name("player_underrun_frames_total", "Frames the player had to play as silence because its ring was empty."))
        var x: [String: Counter] = [:], fill: [String: Gauge] = [:], capacity: [String: Gauge] = [:], cyc: [String: [Gauge]] = [:]
        for e in ["recorder", "player"] {
            x[e] = r.makeCounter(descriptor: name("xruns_total", "Xruns the JACK server reported."), labels: [("engine", e)])
            fill[e] = r.makeGauge(descriptor: name("ring_fill_frames", "Frames in the engine's ring now."), labels: [("engine", e)])
            capacity[e] = r.makeGauge(descriptor: name("ring_capacity_frames", "Frames the engine's ring holds."), labels: [("engine", e)])
            cyc[e] = ["0.5", "0.99", "1"].map {
                r.makeGauge(descriptor: name("cycle_cost_seconds", "Time the process callback took, quantiles over the engine's cycles (1: the longest)."), labels: [("engine", e), ("quantile", $0)])
            }
        }
        xruns = x
        ringFill = fill
        ringCapacity = capacity
        cycle = cyc
        takesStarted = r.makeCounter(descriptor: name("takes_started_total", "Takes started."))
        takesFinished = r.makeCounter(descriptor: name("takes_finished_total", "Takes finished (any ending)."))
        diskErrors = r.makeCounter(descriptor: name("disk_errors_total", "Takes ended by a disk error."))
        serverLosses = r.makeCounter(descriptor: name("server_losses_total", "Times the JACK server went away."))
        recording = r.makeGauge(descriptor: name("recording", "1 while a take is being written."))
        takeSeconds = r.makeGauge(descriptor: name("take_seconds", "Length of the running take."))
        diskFree = r.makeGauge(descriptor: name("disk_free_bytes", "Free bytes where takes are written."))
        diskSecondsLeft = r.makeGauge(descriptor: name("disk_seconds_left", "Recording time the free space leaves at the current format."))
        serverLost = r.makeGauge(descriptor: name("server_lost", "1 while waiting for a lost JACK server."))
        playing = r.makeGauge(descriptor: name("playing", "1 while the player plays."))
    }

    /// Counts what the session's events tell (call with every batch the run loop drains).
    public func observe(_ events: [SessionEvent]) {
        for e in events {
            switch e {
            case .recorder(.takeStarted): takesStarted.increment()
            case .recorder(.takeFinished(let report, _)):
                takesFinished.increment()
                finishedFrames += report.frames
            case .recorder(.diskError): diskErrors.increment()
            case .serverLost: serverLosses.increment()
            default: break
            }
        }
    }

    /// Adds to `counter` what the engine counter `value` grew by since the last read.
    private func feed(_ counter: Counter, _ key: String, _ value: Int) {
        let before = last[key] ?? 0
        let delta = value >= before ? value - before : value
        if delta > 0 { counter.increment(by: Int64(delta)) }
        last[key] = value
    }

    /// The metrics now, as the Prometheus text exposition format.
    public func render() -> [UInt8] {
        let s = session.status()
        if let r = s.recorder {
            feed(framesRecorded, "recorded", finishedFrames + r.frames)
            feed(droppedFrames, "dropped", r.droppedFrames)
            feed(recorderMissed, "recorder.missed", r.missedFrames)
            if let x = xruns["recorder"] { feed(x, "recorder.xruns", r.xruns) }
            recording.set(to: r.recording ? 1 : 0)
            takeSeconds.set(to: r.seconds)
            ringFill["recorder"]?.set(to: Double(r.ringFill))
            ringCapacity["recorder"]?.set(to: Double(r.ringCapacity))
            for (g, v) in zip(cycle["recorder"] ?? [], [r.cycle.p50Micros, r.cycle.p99Micros, r.cycle.maxMicros]) { g.set(to: v / 1e6) }
            if let free = r.freeBytes { diskFree.set(to: Double(free)) }
            if let left = r.secondsLeft { diskSecondsLeft.set(to: left) }
        } else {
            recording.set(to: 0)
        }
        if let p = s.player {
            feed(underrunFrames, "underruns", p.underrunFrames)
            feed(playerMissed, "player.missed", p.missedFrames)
            if let x = xruns["player"] { feed(x, "player.xruns", p.xruns) }
            playing.set(to: p.playing ? 1 : 0)
            ringFill["player"]?.set(to: Double(p.ringFill))
            ringCapacity["player"]?.set(to: Double(p.ringCapacity))
            for (g, v) in zip(cycle["player"] ?? [], [p.cycle.p50Micros, p.cycle.p99Micros, p.cycle.maxMicros]) { g.set(to: v / 1e6) }
        }
        serverLost.set(to: s.serverLost ? 1 : 0)
        return registry.emitToBuffer()
    }
}

/// The metrics endpoint of a running session: `SessionMetrics` served by `MetricsHTTPServer`.
///
/// Threads: control thread only.
public final class MetricsEndpoint {
    public let metrics: SessionMetrics
    public let server: MetricsHTTPServer

    public init(session: Session, port: Int) throws(MetricsHTTPServer.Error) {
        let metrics = SessionMetrics(session: session)
        self.metrics = metrics
        server = try MetricsHTTPServer(port: port) { metrics.render() }
    }

    /// Counts the loop's events and serves waiting requests (never waits).
    public func poll(events: [SessionEvent]) {
        metrics.observe(events)
        server.poll()
    }
}
