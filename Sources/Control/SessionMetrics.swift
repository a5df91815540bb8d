import Coordinator
import Engine
import Foundation
import Loudness
import Plugins
import Prometheus

/// The session's counters and gauges in the Prometheus text format (swift-prometheus writes the format), for an
/// operator's alerts: frames recorded, dropped (overruns: the disk too slow), missed (cycles the server ran without
/// Tandem), xruns, underruns, ring fill, cycle cost percentiles, disk free and the recording time it leaves, takes.
/// An engine's metrics appear from the first scrape that finds the engine (a session without a player shows none
/// of the player's).
///
/// Counters stay monotonic across engines that are re-created (a reload that changed ports, a server that came
/// back, an NSM switch): each engine counter is read as a running value, and a value lower than the last one read
/// means a new engine, whose whole value is added.
///
/// Threads: control thread only (`observe` from the run loop, `render` when a scrape arrives in the same loop).
public final class SessionMetrics {
    private let registry = PrometheusCollectorRegistry()
    private let session: Session

    private let takesStarted: Counter
    private let takesFinished: Counter
    private let diskErrors: Counter
    private let serverLosses: Counter
    private let serverStalls: Counter
    private let serverLost: Gauge
    /// Per rack (labelled `rack`): processes that went down (crashed or hung) and restarts, for isolated racks.
    private var rackDowns: [String: Counter] = [:]
    private var rackBacks: [String: Counter] = [:]

    /// What both engines have, labelled `engine`.
    private struct EngineMetrics {
        var missed: Counter
        var xruns: Counter
        var ringFill: Gauge
        var ringCapacity: Gauge
        /// p50, p99, max.
        var cycle: [Gauge]
    }
    private struct RecorderMetrics {
        var engine: EngineMetrics
        var frames: Counter
        var dropped: Counter
        var recording: Gauge
        var takeSeconds: Gauge
        var diskFree: Gauge
        var diskSecondsLeft: Gauge
    }
    private struct PlayerMetrics {
        var engine: EngineMetrics
        var underruns: Counter
        var playing: Gauge
    }
    /// Per plugin (labelled `engine`, `plugin`): its cycle cost (mean, max) and cycles over budget.
    private struct PluginMetrics {
        var cost: [Gauge]
        var over: Counter
    }
    private var pluginMetrics: [String: PluginMetrics] = [:]
    /// Per rack (labelled `engine` with the rack's name): its cycle cost, as the recorder's and player's.
    private var rackCycles: [String: [Gauge]] = [:]
    private var recorderMetrics: RecorderMetrics?
    /// Per programme (labelled `engine`, `channels`): momentary, short-term and integrated loudness, the range, the
    /// true peak. A value the meter cannot have yet (silence, too short) is -Inf.
    private var loudnessMetrics: [String: [Gauge]] = [:]
    private var playerMetrics: PlayerMetrics?

    /// Last raw values read, per counter key (see the type's note on re-created engines).
    private var last: [String: Int] = [:]
    /// Frames of takes that have finished (the running take's frames come from the status).
    private var finishedFrames = 0

    /// `tandem_NAME` (the unit is part of NAME), with its help line.
    private static func name(_ full: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "tandem", metricName: full, unitName: "", helpText: help)
    }

    public init(session: Session) {
        self.session = session
        let r = registry
        takesStarted = r.makeCounter(descriptor: Self.name("takes_started_total", "Takes started."))
        takesFinished = r.makeCounter(descriptor: Self.name("takes_finished_total", "Takes finished (any ending)."))
        diskErrors = r.makeCounter(descriptor: Self.name("disk_errors_total", "Takes ended by a disk error."))
        serverLosses = r.makeCounter(descriptor: Self.name("server_losses_total", "Times the JACK server went away."))
        serverStalls = r.makeCounter(descriptor: Self.name("server_stalls_total",
                                                           "Times the JACK server stayed up but ran no cycles."))
        serverLost = r.makeGauge(descriptor: Self.name("server_lost", "1 while waiting for a lost JACK server."))
    }

    private func engineMetrics(_ e: String) -> EngineMetrics {
        let r = registry, label = [("engine", e)]
        return EngineMetrics(
            missed: r.makeCounter(descriptor: Self.name("missed_frames_total", "Frames of cycles the JACK server ran without calling the engine."), labels: label),
            xruns: r.makeCounter(descriptor: Self.name("xruns_total", "Xruns the JACK server reported."), labels: label),
            ringFill: r.makeGauge(descriptor: Self.name("ring_fill_frames", "Frames in the engine's ring now."), labels: label),
            ringCapacity: r.makeGauge(descriptor: Self.name("ring_capacity_frames", "Frames the engine's ring holds."), labels: label),
            // Gauges, not a summary (there is no sum and count), so the label is not `quantile`, which the
            // exposition format keeps for summaries (promtool refuses it on a gauge).
            cycle: ["p50", "p99", "max"].map {
                r.makeGauge(descriptor: Self.name("cycle_cost_seconds", "Time the process callback took over the engine's cycles: the median (p50), 99th percentile (p99) and longest (max)."),
                            labels: label + [("stat", $0)])
            })
    }

    private func recorder() -> RecorderMetrics {
        if let m = recorderMetrics { return m }
        let r = registry
        let m = RecorderMetrics(
            engine: engineMetrics("recorder"),
            frames: r.makeCounter(descriptor: Self.name("recorder_frames_recorded_total", "Frames written to takes.")),
            dropped: r.makeCounter(descriptor: Self.name("recorder_dropped_frames_total",
                                                         "Frames lost because the capture ring was full (the disk too slow); silence in the take.")),
            recording: r.makeGauge(descriptor: Self.name("recording", "1 while a take is being written.")),
            takeSeconds: r.makeGauge(descriptor: Self.name("take_seconds", "Length of the running take.")),
            diskFree: r.makeGauge(descriptor: Self.name("disk_free_bytes", "Free bytes where takes are written.")),
            diskSecondsLeft: r.makeGauge(descriptor: Self.name("disk_seconds_left", "Recording time the free space leaves at the current format.")))
        recorderMetrics = m
        return m
    }

    private func player() -> PlayerMetrics {
        if let m = playerMetrics { return m }
        let r = registry
        let m = PlayerMetrics(
            engine: engineMetrics("player"),
            underruns: r.makeCounter(descriptor: Self.name("player_underrun_frames_total",
                                                           "Frames the player had to play as silence because its ring was empty.")),
            playing: r.makeGauge(descriptor: Self.name("playing", "1 while the player plays.")))
        playerMetrics = m
        return m
    }

    private func plugin(_ engine: String, _ name: String) -> PluginMetrics {
        let key = engine + "\u{0}" + name
        if let m = pluginMetrics[key] { return m }
        let r = registry, labels = [("engine", engine), ("plugin", name)]
        let m = PluginMetrics(
            cost: ["mean", "max"].map {
                r.makeGauge(descriptor: Self.name("plugin_cycle_cost_seconds", "Time a plugin's run took per cycle since its chain was built: the mean and the longest."),
                            labels: labels + [("stat", $0)])
            },
            over: r.makeCounter(descriptor: Self.name("plugin_cycles_over_budget_total", "Cycles in which a plugin took more than \(Int(StageTiming.budgetShare * 100)) % of the period."),
                                labels: labels))
        pluginMetrics[key] = m
        return m
    }

    private func loudness(_ p: ProgrammeLoudness) -> [Gauge] {
        let engine = p.engine ?? "", channels = p.channels.joined(separator: "+")
        let key = engine + "\u{0}" + channels
        if let g = loudnessMetrics[key] { return g }
        let r = registry, labels = [("engine", engine), ("channels", channels)]
        let g = ["momentary", "short_term", "integrated"].map {
            r.makeGauge(descriptor: Self.name("loudness_lufs", "EBU R128 loudness of a programme (a channel group): momentary (400 ms), short-term (3 s) and integrated (gated, since the take or the meter started)."),
                        labels: labels + [("stat", $0)])
        } + [
            r.makeGauge(descriptor: Self.name("loudness_range_lu", "EBU Tech 3342 loudness range of a programme."), labels: labels),
            r.makeGauge(descriptor: Self.name("true_peak_dbtp", "Highest true peak (4x oversampled) of a programme."), labels: labels),
        ]
        loudnessMetrics[key] = g
        return g
    }

    private func rackCycle(_ rack: String) -> [Gauge] {
        if let g = rackCycles[rack] { return g }
        let g = ["p50", "p99", "max"].map {
            registry.makeGauge(descriptor: Self.name("cycle_cost_seconds", "Time the process callback took over the engine's cycles: the median (p50), 99th percentile (p99) and longest (max)."),
                               labels: [("engine", rack), ("stat", $0)])
        }
        rackCycles[rack] = g
        return g
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
            case .cyclesStopped: serverStalls.increment()
            case .rackDown(let rack, _): rackCounter(&rackDowns, rack, "rack_crashes_total",
                                                     "Times an isolated rack's process went down (crashed or hung).").increment()
            case .rackBack(let rack, _): rackCounter(&rackBacks, rack, "rack_restarts_total",
                                                     "Times an isolated rack's process was back after going down.").increment()
            default: break
            }
        }
    }

    private func rackCounter(_ table: inout [String: Counter], _ rack: String, _ name: String, _ help: String) -> Counter {
        if let c = table[rack] { return c }
        let c = registry.makeCounter(descriptor: Self.name(name, help), labels: [("rack", rack)])
        table[rack] = c
        return c
    }

    /// Adds to `counter` what the engine counter `value` grew by since the last read.
    private func feed(_ counter: Counter, _ key: String, _ value: Int) {
        let before = last[key] ?? 0
        let delta = value >= before ? value - before : value
        if delta > 0 { counter.increment(by: Int64(delta)) }
        last[key] = value
    }

    private func feed(_ m: EngineMetrics, _ key: String, missed: Int, xruns: Int, fill: Int, capacity: Int,
                      cycle: SessionStatus.CycleCost) {
        feed(m.missed, key + ".missed", missed)
        feed(m.xruns, key + ".xruns", xruns)
        m.ringFill.set(to: Double(fill))
        m.ringCapacity.set(to: Double(capacity))
        for (g, v) in zip(m.cycle, [cycle.p50Micros, cycle.p99Micros, cycle.maxMicros]) { g.set(to: v / 1e6) }
    }

    /// The metrics now, as the Prometheus text exposition format.
    public func render() -> [UInt8] {
        let s = session.status()
        if let r = s.recorder {
            let m = recorder()
            feed(m.frames, "recorded", finishedFrames + r.frames)
            feed(m.dropped, "dropped", r.droppedFrames)
            feed(m.engine, "recorder", missed: r.missedFrames, xruns: r.xruns, fill: r.ringFill, capacity: r.ringCapacity,
                 cycle: r.cycle)
            m.recording.set(to: r.recording ? 1 : 0)
            m.takeSeconds.set(to: r.seconds)
            if let free = r.freeBytes { m.diskFree.set(to: Double(free)) }
            if let left = r.secondsLeft { m.diskSecondsLeft.set(to: left) }
        } else {
            recorderMetrics?.recording.set(to: 0)
        }
        if let p = s.player {
            let m = player()
            feed(m.underruns, "underruns", p.underrunFrames)
            feed(m.engine, "player", missed: p.missedFrames, xruns: p.xruns, fill: p.ringFill, capacity: p.ringCapacity,
                 cycle: p.cycle)
            m.playing.set(to: p.playing ? 1 : 0)
        } else {
            playerMetrics?.playing.set(to: 0)
        }
        for rack in s.racks {
            guard let c = rack.cycle else { continue }
            for (g, v) in zip(rackCycle(rack.name), [c.p50Micros, c.p99Micros, c.maxMicros]) { g.set(to: v / 1e6) }
        }
        for (engine, chain) in s.plugins {
            for p in chain.plugins {
                guard let t = p.timing else { continue }
                let m = plugin(engine, p.name)
                m.cost[0].set(to: t.meanMicros / 1e6)
                m.cost[1].set(to: t.maxMicros / 1e6)
                feed(m.over, "over.\(engine).\(p.name)", t.overBudget)
            }
        }
        for p in s.loudness ?? [] {
            for (g, v) in zip(loudness(p), [p.momentary, p.shortTerm, p.integrated, p.range, p.truePeak]) {
                g.set(to: v ?? -Double.infinity)
            }
        }
        serverLost.set(to: s.serverLost ? 1 : 0)
        return registry.emitToBuffer()
    }
}
