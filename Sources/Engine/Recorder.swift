import Commands
import Foundation
import Jack
import Logging
import Loudness
import Plugins
import Presets
import Realtime
import SoundFile
import Takes

/// Per-channel levels since the last read.
public struct MeterReading: Sendable, Equatable {
    public var peak: Float
    public var rms: Float
    /// dBFS of a linear level (-inf for 0).
    public static func decibels(_ level: Float) -> Double { 20 * log10(Double(level)) }
}

/// The recorder: one JACK client with input ports, a capture ring and a disk-writer thread.
///
/// Threads: control side only (one owner). The RT callback and the writer thread run behind it.
// @unchecked Sendable: every field is a constant but `chainSnapshot` (a closure over the session, not Sendable), which
// is set and called on the control thread; the RT callback and the writer thread see only `engine.state` and `writer`.
public final class Recorder: @unchecked Sendable {
    public let config: RecorderConfig
    /// The client, its ports, RT state, chain and writer thread (see `EngineClient`).
    let engine: EngineClient<RecorderState>
    let writer: DiskWriter
    private let logger: Logger
    /// Interrupted takes found in the directory at start-up and completed (see `TakeRecovery`).
    public let recovered: [TakeRecovery.Recovered]

    public var client: JackClient { engine.client }
    public var ports: [JackPort] { engine.inputs }
    /// The insert chain (what the callback runs before the ring).
    public var plugins: ChainHolder { engine.plugins }
    var state: UnsafeMutablePointer<RecorderState> { engine.state }

    /// Opens the client, registers the ports, starts the writer thread and activates. No take runs yet (armed).
    /// `strictPlugins`: a plugin of the chain that cannot run as asked (see `PluginError.stopsStart`) is an error:
    /// nothing is started. Otherwise the chain runs without it and the problem is logged, in the status and in
    /// every take's report.
    public init(config: RecorderConfig, server: String?, logger: Logger = Logger(label: "tandem.rec"),
                strictPlugins: Bool = false, loopWakeup: Wakeup? = nil) throws(EngineError) {
        let problems = config.problems()
        guard problems.isEmpty else { throw EngineError(.badConfig, problems.joined(separator: "; ")) }
        try Recorder.checkDirectory(config.directory)
        recovered = TakeRecovery.recover(directory: config.directory)
        for r in recovered {
            logger.warning("completed the report of an interrupted take",
                           metadata: ["take": "\(r.report.take)", "frames": "\(r.report.frames)", "report": "\(r.sidecar)"])
        }
        self.config = config
        self.logger = logger
        let setup = EngineClient<RecorderState>.Setup(
            clientName: config.clientName, server: server, inputs: config.ports, midiInputs: config.midiPorts,
            role: "recorder",
            plugins: config.plugins, pluginState: config.pluginState, strictPlugins: strictPlugins,
            loopWakeup: loopWakeup)
        engine = try EngineClient(setup, logger: logger, check: { client throws(EngineError) in
            let channels = config.stems ? 1 : config.recordedChannelNames.count
            if let e = config.format.check(channels: channels, sampleRate: client.sampleRate) {
                throw EngineError(.badConfig, e.message)
            }
        }, allocate: { client, registered, slot throws(EngineError) in
            let ports = registered.inputs
            let rate = client.sampleRate
            let ringFrames = try EngineClient<RecorderState>.ringFrames(
                seconds: config.ringSeconds + config.prerollSeconds, rate: rate,
                channels: config.recordedChannelNames.count, what: "a capture ring (ring + pre-roll)",
                hint: "shorten ring or preroll")
            let wake = RecorderState.wakeFrames(sampleRate: rate, period: client.bufferSize)
            return try RecorderState.allocate(client: client.cycleHandle, ports: ports, channels: ports.count,
                                              recordDry: config.recordDry, chain: slot, ringFrames: ringFrames,
                                              wakeFrames: wake, sampleRate: rate, midiPorts: registered.midiInputs)
        })
        let notifications = engine.client.notifications
        writer = DiskWriter(config: config, state: engine.state.pointee, sampleRate: engine.sampleRate,
                            portNames: config.recordedChannelNames, logger: logger,
                            xruns: { notifications.count(.xrun) })
        let w = writer
        try engine.activate(worker: (name: "tandem-disk-writer", body: { w.run() }, stop: { w.send(.quit) }))
    }

    /// Checks that `directory` exists, is a directory and is writable.
    public static func checkDirectory(_ directory: String) throws(EngineError) {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDir) else {
            throw EngineError(.badDirectory, "output directory '\(directory)' does not exist")
        }
        guard isDir.boolValue else { throw EngineError(.badDirectory, "output path '\(directory)' is not a directory") }
        guard access(directory, W_OK) == 0 else {
            throw EngineError(.badDirectory, "output directory '\(directory)' is not writable")
        }
    }

    deinit { close() }

    /// The sample rate of the recorder's server.
    public var sampleRate: Int { engine.sampleRate }

    /// Frames the callback has seen since activation.
    public var streamPosition: Int { state.pointee.counter(.streamFrames) }

    /// Frames dropped because the ring was full.
    public var droppedFrames: Int { state.pointee.counter(.droppedFrames) }
    /// Frames of cycles the server ran without calling the recorder since activation (silence in the take).
    public var missedFrames: Int { engine.missedFrames }

    /// Process cycles run.
    public var cycles: Int { engine.cycles }

    /// Frames waiting in the capture ring, and its size.
    public var ringFill: (frames: Int, capacity: Int) { (state.pointee.ring.fill, state.pointee.ring.capacity) }

    /// The running take, if any.
    /// Each programme's loudness (`RecorderConfig.loudness`): the running take's, else the live meters'. Any thread.
    public var loudness: [ProgrammeLoudness] { writer.loudness.withLock { $0 } }

    public var takeStatus: (take: Int, frames: Int, files: [String], bytes: Int)? {
        writer.status.map { ($0.take, $0.frames, $0.files, $0.bytes) }
    }

    /// p50 / p99 / max cost of the process callback since activation, in nanoseconds.
    public var cycleCost: CycleHistogram.Summary { engine.cycleCost }

    /// Peak and RMS per channel since the last call (the call resets them); nil when no cycle ran since then.
    public func readMeters() -> [MeterReading]? {
        let channels = state.pointee.channels
        var energy = [Double](repeating: 0, count: channels), peak = [Float](repeating: 0, count: channels)
        let frames = energy.withUnsafeMutableBufferPointer { e in
            peak.withUnsafeMutableBufferPointer { p in readMeterWindow(energy: e, peak: p) }
        }
        guard frames > 0 else { return nil }
        return (0..<channels).map {
            MeterReading(peak: peak[$0], rms: Float((energy[$0] / Double(frames)).squareRoot()))
        }
    }

    /// The meters' readings since the last call (the call resets them), into the caller's storage (one element per
    /// channel): each channel's energy (mean square x frames) and peak. Returns the frames covered, 0 when no cycle
    /// ran since the last read (the buffers are then left alone).
    public func readMeterWindow(energy: UnsafeMutableBufferPointer<Double>,
                                peak: UnsafeMutableBufferPointer<Float>) -> Int {
        let s = state.pointee
        let frames = s.counters.exchange(RecorderState.Counter.meterFrames.rawValue, 0)
        guard frames > 0 else { return 0 }
        for c in 0..<min(s.channels, energy.count, peak.count) {
            peak[c] = Float(bitPattern: UInt32(truncatingIfNeeded: s.peaks.exchange(c, 0)))
            energy[c] = Double(s.sumSquares.exchange(c, 0)) / RecorderState.sumSquaresScale
        }
        return frames
    }

    /// Where stream position and JACK frame time meet, and the wall clock of that moment.
    func anchor() -> TakeAnchor {
        let s = state.pointee
        let stamp = s.counter(.cycleStamp)
        let position = s.counter(.streamFrames)
        let stampPosition = position - ((position - (stamp & 0xFFFF_FFFF)) & 0xFFFF_FFFF)
        let stampFrameTime = UInt32(truncatingIfNeeded: stamp >> 32)
        let now = config.clock.now()
        let frameNow = client.frameTime
        let age = Double(Int32(bitPattern: frameNow &- stampFrameTime)) / Double(max(1, sampleRate))
        return TakeAnchor(streamPosition: stampPosition, frameTime: stampFrameTime,
                          wallClock: now.addingTimeInterval(-age * config.clock.scale), sampleRate: sampleRate,
                          clockScale: config.clock.scale)
    }

    /// The stream position of the frame arriving now (JACK's estimate of the current frame time, mapped through
    /// the latest cycle's stamp), or of one that arrived at wall-clock time `arrival` (a datagram's receive stamp).
    public func arrivalPosition(at arrival: Date? = nil) -> Int {
        let a = anchor()
        var position = a.streamPosition + Int(Int32(bitPattern: client.frameTime &- a.frameTime))
        if let arrival {
            let ago = Date().timeIntervalSince(arrival)
            if ago.isFinite && ago > 0 && ago < 10 { position -= Int((ago * Double(sampleRate)).rounded()) }
        }
        return position
    }

    /// The stream position of wall-clock time `date` (on the recorder's clock).
    public func position(atWallClock date: Date) -> Int { anchor().position(at: date) }

    /// What the writer needs to start a take by itself (a level trigger), as of now.
    func takeContext(notes: [String] = []) -> TakeContext {
        let portInfo = ports.map { port in
            TakeReport.Port(name: port.name, connections: client.connections(of: port.name),
                            captureLatency: client.latency(of: port.name, capture: true).map { FrameRange(min: $0.min, max: $0.max) })
        }
        let chain = plugins.chain.flatMap { $0.isEmpty ? nil : $0 }
        return TakeContext(anchor: anchor(), ports: portInfo, xrunsAtStart: client.notifications.count(.xrun),
                           notes: notes, plugins: chain?.currentSpecs, pluginLatency: chain?.latency,
                           pluginProblems: plugins.chain?.takeProblems, period: client.bufferSize,
                           chains: chainSnapshot?())
    }

    /// Whether the recorder starts its own takes on the level (`start = "level"`).
    public var isLevelTriggered: Bool { config.trigger != nil }

    /// Starts watching the level: a take per trigger, from now on. Ignored without a trigger rule.
    public func armTrigger() {
        guard config.trigger != nil else { return }
        writer.send(.arm(takeContext()))
    }

    /// Stops watching the level; a triggered take still running ends at stream position `at` (now when nil).
    public func disarmTrigger(at position: Int? = nil) {
        writer.send(.disarm(at: position ?? streamPosition))
    }

    /// Hands the writer a fresh description of the ports and the clock (for the next triggered take, and for
    /// clock-aligned chunk boundaries of the running take). Control side, now and then.
    public func refreshContext() {
        guard config.trigger != nil || config.rotateOnClock else { return }
        writer.send(.context(takeContext()))
    }

    /// Adds a marker at the frame the request arrived (`arrival`: its receive time, else now) to the running take.
    /// Returns the stream position used, or nil when no take runs.
    @discardableResult
    public func mark(label: String, source: String, arrival: Date? = nil) -> Int? {
        guard isRecording else { return nil }
        let position = arrivalPosition(at: arrival)
        writer.send(.mark(at: position, label: label, source: source))
        return position
    }

    /// Adds a marker at JACK frame time `frameTime` (a MIDI message's frame) to the running take. Returns the stream
    /// position, or nil when no take runs.
    @discardableResult
    public func mark(label: String, source: String, frameTime: UInt32) -> Int? {
        guard isRecording else { return nil }
        let a = anchor()
        let position = a.streamPosition + Int(Int32(bitPattern: frameTime &- a.frameTime))
        writer.send(.mark(at: position, label: label, source: source))
        return position
    }

    /// The session's chains as they stand now, for a take's control log (set by the session). Control thread.
    public var chainSnapshot: (() -> [String: ControlLog.ChainStart])?

    /// Enters a control change in the running take's control log: a chain applied it at the cycle that began at JACK
    /// frame time `frameTime` (its engine's clock; every client of the server shares it).
    public func logControl(_ entry: TimedCommand, frameTime: UInt32) {
        guard isRecording else { return }
        let a = anchor()
        writer.send(.control(at: a.streamPosition + Int(Int32(bitPattern: frameTime &- a.frameTime)), entry))
    }

    /// Changes a chain applied during the take that its log does not hold.
    public func logControlDropped(_ count: Int) {
        if isRecording && count > 0 { writer.send(.controlDropped(count)) }
    }

    /// Runs the retention policy once (the writer does it again after each take and chunk).
    public func applyRetention() {
        if config.retention != nil { writer.send(.retention) }
    }

    /// Starts a take now (with the configured pre-roll before it). A running take is finished first.
    public func startTake() {
        startTake(at: streamPosition)
    }

    /// Starts a take at a given stream position (frames since activation).
    public func startTake(at position: Int, notes: [String] = [], playback: PlaybackAlignment? = nil) {
        let portInfo = ports.map { port in
            TakeReport.Port(name: port.name, connections: client.connections(of: port.name),
                            captureLatency: client.latency(of: port.name, capture: true).map { FrameRange(min: $0.min, max: $0.max) })
        }
        let chain = plugins.chain.flatMap { $0.isEmpty ? nil : $0 }
        writer.send(.start(at: position, context: TakeContext(anchor: anchor(), ports: portInfo,
                                                              xrunsAtStart: client.notifications.count(.xrun),
                                                              notes: notes, playback: playback,
                                                              plugins: chain?.currentSpecs, pluginLatency: chain?.latency,
                                                              pluginProblems: plugins.chain?.takeProblems,
                                                              period: client.bufferSize, chains: chainSnapshot?())))
    }

    /// Starts a take whose first frame is the one captured at JACK frame time `frameTime` (which may lie a few
    /// periods ahead: the writer skips to it). The pre-roll is not applied.
    public func startTake(atFrameTime frameTime: UInt32, notes: [String] = [], playback: PlaybackAlignment? = nil) {
        let a = anchor()
        let position = a.streamPosition + Int(Int32(bitPattern: frameTime &- a.frameTime))
        startTake(at: position + prerollFrames, notes: notes, playback: playback)
    }

    private var prerollFrames: Int { Int(config.prerollSeconds * Double(sampleRate)) }

    /// Uses new file and take settings from the next take on; the running take is not touched. Only settings that
    /// do not change the JACK client (client name, ports, ring, pre-roll) may differ.
    public func reconfigure(_ newConfig: RecorderConfig) {
        writer.send(.configure(newConfig))
    }

    /// Ends the running take after every frame captured so far (or at stream position `at`).
    public func stopTake(_ end: TakeEnd = .stopped, detail: String? = nil, at position: Int? = nil) {
        writer.send(.stop(at: position ?? streamPosition, end: end, detail: detail))
    }

    /// Starts the next chunk file of the running take at the next frame.
    public func rotate() { writer.send(.rotate) }

    /// Reports the insert chain's current latency to JACK (as the input ports' playback latency). Control thread.
    public func refreshPluginLatency() { engine.refreshPluginLatency() }

    /// Replaces the insert chain while recording: built here, taken by the process thread at the start of a cycle
    /// (the take goes on; from that cycle it records the new chain's output).
    public func replacePlugins(_ specs: [PluginSpec], savedState: String? = nil) {
        engine.replacePlugins(specs, savedState: savedState)
        if let problems = plugins.chain?.takeProblems, !problems.isEmpty { writer.send(.pluginProblems(problems)) }
    }

    /// Notes in the running take's report that an isolated rack feeding `channels` went down (`back` false) or came
    /// back, at the frame the writer has reached.
    public func noteRackIncident(rack: String, what: String, channels: [String], back: Bool) {
        writer.send(.rackIncident(rack: rack, what: what, channels: channels, back: back))
    }

    /// Plugins of a chain outside the recorder (an isolated rack feeding it) that run without what they were asked
    /// for: noted in the running take's report from now on.
    public func notePluginProblems(_ problems: [TakeReport.PluginProblem]) {
        writer.send(.pluginProblems(problems))
    }

    /// Whether a take is being written.
    public var isRecording: Bool { writer.status != nil }

    /// Events since the last call.
    public func drainEvents() -> [RecorderEvent] { writer.drainEvents() }

    /// Stops cleanly: ends the take after every captured frame, lets the writer drain the ring and finalize, then
    /// deactivates and closes the client. When the server is gone, finalizes what reached the ring.
    public func close(end: TakeEnd = .stopped, detail: String? = nil, timeout: Double = 10) {
        guard !engine.closed else { return }
        let serverGone = client.wasShutDown
        if !serverGone {
            writer.send(.stop(at: streamPosition, end: end, detail: detail))
            writer.send(.quit)
            let deadline = Date().addingTimeInterval(timeout)
            while writer.status != nil && Date() < deadline { usleep(5_000) }
        }
        client.deactivate()
        // The callback no longer runs: announce a gap it could not, so the writer never waits for frames.
        let s = state.pointee
        let pending = s.counter(.pendingDropFrames)
        if pending > 0 {
            _ = s.drops.push(GapNote.overrun(at: s.counter(.pendingDropStart), frames: pending))
            s.counters.store(RecorderState.Counter.pendingDropFrames.rawValue, 0)
        }
        writer.send(.stop(at: s.counter(.streamFrames), end: end, detail: detail, exact: true))
        engine.close()
    }
}
