import Foundation
import Jack
import Logging
import Loudness
import Plugins
import Realtime
import Presets
import SoundFile
import Takes

/// The player: one JACK client with output ports, a playback ring and a disk-reader thread.
///
/// Threads: control side only (one owner).
// @unchecked Sendable: `queue`, `announcedMarker`, `announcedFinish` and `cuesCheckedTo` change only on the control
// thread that owns the player; the RT callback and the reader thread see only `engine.state` and `reader`.
public final class Player: @unchecked Sendable {
    public let config: PlayerConfig
    /// The client, its ports, RT state, chain and reader thread (see `EngineClient`).
    let engine: EngineClient<PlayerState>
    let reader: DiskReader
    private let logger: Logger
    private var announcedMarker = -1
    private var announcedFinish = false
    /// The ring position up to which `drainCues` has looked (cues before it were told or skipped).
    private var cuesCheckedTo = 0

    public var client: JackClient { engine.client }
    /// The outputs' loudness meters (nil: not measured).
    private var loudnessTap: LoudnessTap?
    public var ports: [JackPort] { engine.outputs }
    /// The insert chain (what the callback runs between the ring and the ports).
    public var plugins: ChainHolder { engine.plugins }
    var state: UnsafeMutablePointer<PlayerState> { engine.state }

    /// Full names of the MIDI output ports (those the MIDI files of the queue play to).
    public var midiOutputNames: [String] { config.resolvedMIDIPorts.map { "\(client.name):\($0)" } }

    /// Opens the client, registers the ports, starts the reader thread and activates. Loads `config.queue`, and
    /// starts playing at once when `config.startImmediately` is set. `notify` is posted when there are events to
    /// drain (a failure, the end of the queue), so a control loop can sleep long between looks.
    /// `strictPlugins`: a plugin of the chain that cannot run as asked is an error (nothing started); otherwise
    /// the chain runs without it and the problem is logged and in the status.
    public init(config: PlayerConfig, server: String?, logger: Logger = Logger(label: "tandem.play"),
                notify: Wakeup? = nil, strictPlugins: Bool = false, loopWakeup: Wakeup? = nil) throws(EngineError) {
        let problems = config.problems()
        guard problems.isEmpty else { throw EngineError(.badConfig, problems.joined(separator: "; ")) }
        self.config = config
        self.logger = logger
        let setup = EngineClient<PlayerState>.Setup(
            clientName: config.clientName, server: server, outputs: config.ports, midiOutputs: config.resolvedMIDIPorts,
            role: "player",
            plugins: config.plugins, pluginState: config.pluginState, strictPlugins: strictPlugins,
            loopWakeup: loopWakeup)
        var tap: LoudnessTap?
        engine = try EngineClient(setup, logger: logger, allocate: { client, registered, slot throws(EngineError) in
            let ports = registered.outputs
            let ringFrames = try EngineClient<PlayerState>.ringFrames(
                seconds: config.ringSeconds, rate: client.sampleRate, channels: ports.count, what: "a playback ring",
                hint: "shorten ring")
            tap = try LoudnessTap(engine: "player", groups: config.loudness, channels: ports.count,
                                  names: config.ports, sampleRate: client.sampleRate)
            return try PlayerState.allocate(client: client.cycleHandle, ports: ports, channels: ports.count,
                                            chain: slot, ringFrames: ringFrames,
                                            wakeSpace: max(client.bufferSize, PlayerState.minimumWakeSpace),
                                            notify: notify, midiPorts: registered.midiOutputs, loudness: tap?.feed,
                                            cueWakeup: loopWakeup)
        })
        loudnessTap = tap
        let gain = config.gain
        engine.state.pointee.set(.gainTarget, Int(gain.bitPattern))
        reader = DiskReader(config: config, state: engine.state.pointee, sampleRate: engine.sampleRate, logger: logger)
        let r = reader
        let s = engine.state
        try engine.activate(worker: (name: "tandem-disk-reader", body: { r.run() }, stop: { r.send(.quit) })) {
            s.pointee.set(.gainTarget, Int(gain.bitPattern))
            s.pointee.set(.gainNow, Int(gain.bitPattern))
        }
        loudnessTap?.start()
        if !config.queue.isEmpty { load(config.queue) }
        if config.startImmediately && !config.queue.isEmpty {
            // Let the reader fill the ring first, so playback starts without an underrun.
            _ = waitForFill(seconds: 2)
            play()
        }
    }

    deinit { close() }

    /// Waits until the ring is full of frames to play (not stale ones from before a seek, which the callback
    /// discards) or the queue is drained (up to `seconds`).
    @discardableResult
    public func waitForFill(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        let s = state.pointee
        while Date() < deadline {
            let fresh = s.ring.totalWritten - max(s.ring.totalRead, s.counter(.skipTo))
            let room = max(PlayerState.minimumWakeSpace, s.wakeSpace) + DiskReader.chunkFrames
            // Filled: the audio ring, or (a dense MIDI file) the MIDI ring, which holds the reader back as well;
            // waiting on the audio ring then cost the whole timeout and held the control loop for it.
            if s.ring.capacity - fresh < room || s.counter(.drainedAt) != PlayerState.notDrained
                || s.midi.ring.space == 0 {
                return true
            }
            usleep(2_000)
        }
        return false
    }

    /// Replaces the queue and cues its first item (playback state unchanged).
    public func load(_ queue: [String], item: Int = 0, frame: Int = 0) {
        self.queue = queue
        announcedMarker = -1
        announcedFinish = false
        reader.send(.load(queue, item: item, frame: frame))
    }

    /// Starts or resumes playback, at once or at a JACK frame time (sample-accurate).
    public func play(atFrameTime frameTime: UInt32? = nil) {
        state.pointee.set(.startAt, frameTime.map { Int($0) } ?? PlayerState.unset)
        state.pointee.set(.transport, PlayerState.Transport.playing.rawValue)
    }

    /// Pauses a playing player (fading out over one period); the ports carry silence and the play head stays. A
    /// stopped player stays stopped (a pause would play the fade-out from its cue point), so a transport stop after
    /// a server restart cannot move a cued player.
    public func pause() {
        _ = state.pointee.counters.compareExchange(PlayerState.Counter.transport.rawValue, expected: PlayerState.Transport.playing.rawValue,
                                                  desired: PlayerState.Transport.paused.rawValue)
    }

    /// Stops: silence, nothing consumed.
    public func stop() { state.pointee.set(.transport, PlayerState.Transport.stopped.rawValue) }

    /// Jumps to `frame` of `item` (nil: the current item).
    public func seek(item: Int? = nil, frame: Int) { reader.send(.seek(item: item, frame: frame)) }

    /// Jumps to `frame` of `item` and waits (up to `seconds`) until the reader has taken the jump, so a `play()`
    /// after it cannot play what was cued before. Returns false on timeout.
    @discardableResult
    public func cue(item: Int, frame: Int, seconds: Double = 2) -> Bool {
        reader.send(.seek(item: item, frame: frame))
        return reader.waitUntilHandled(seconds: seconds)
    }

    /// Skips to the next item.
    public func next() { reader.send(.next) }

    /// New loop mode, channel map and resampling quality; the queue and the play head are not touched.
    public func reconfigure(loop: LoopMode, map: [Int]?, quality: ResampleQuality) {
        reader.send(.configure(loop: loop, map: map, quality: quality))
    }

    /// The queue last loaded.
    public private(set) var queue: [String] = []

    /// Sets the gain (ramped over one period).
    public func setGain(dB: Double) { setGain(dB: dB, rampFrames: 0) }

    /// Sets the gain gliding over `rampFrames` in equal steps of dB (0: over one period).
    public func setGain(dB: Double, rampFrames: Int) {
        state.pointee.set(.gainRamp, max(0, rampFrames))
        state.pointee.set(.gainTarget, Int(Float(pow(10, dB / 20)).bitPattern))
    }

    /// The gain it is set to, in dB.
    public var gainDB: Double {
        let g = Float(bitPattern: UInt32(truncatingIfNeeded: state.pointee.counter(.gainTarget)))
        return g > 0 ? Double(20 * log10(g)) : -.infinity
    }

    public var sampleRate: Int { engine.sampleRate }
    public var playedFrames: Int { state.pointee.counter(.playedFrames) }
    public var underrunFrames: Int { state.pointee.counter(.underrunFrames) }
    public var underrunCycles: Int { state.pointee.counter(.underrunCycles) }
    /// Frames of cycles the server ran without the player, playing or not. The player has no inputs, so JACK skips
    /// it only when it is late itself (its thread woken late, the process stopped).
    public var missedFrames: Int { engine.missedFrames }
    /// Xruns the server reported to the player's client.
    public var xruns: Int { engine.xruns }
    public var cycles: Int { engine.cycles }
    public var ringFill: (frames: Int, capacity: Int) { (state.pointee.ring.fill, state.pointee.ring.capacity) }
    /// JACK frame time at which the first frame of the current run was played (nil before).
    public var startedAtFrameTime: UInt32? {
        let v = state.pointee.counter(.startedAtFrameTime)
        return v == PlayerState.unset ? nil : UInt32(truncatingIfNeeded: v)
    }
    /// p50 / p99 / max cost of the process callback since activation, in nanoseconds.
    public var cycleCost: CycleHistogram.Summary { engine.cycleCost }


    /// Reports the insert chain's current latency to JACK (as the output ports' capture latency). Control thread.
    public func refreshPluginLatency() { engine.refreshPluginLatency() }

    /// Replaces the insert chain while playing: built here, taken by the process thread at the start of a cycle.
    public func replacePlugins(_ specs: [PluginSpec], savedState: String? = nil) {
        engine.replacePlugins(specs, savedState: savedState)
    }

    /// Whether every queued item has been played out (no loop).
    public var isFinished: Bool {
        let s = state.pointee
        let drained = s.counter(.drainedAt)
        return drained != PlayerState.notDrained && s.ring.totalRead >= drained && s.counter(.skipTo) <= drained
    }

    /// The current position.
    public var position: PlayerPosition {
        let s = state.pointee
        let played = s.ring.totalRead
        let transport = PlayerState.Transport(rawValue: s.counter(.transport)) ?? .stopped
        guard let m = reader.markers.last(where: { $0.ringPosition <= max(played, s.counter(.skipTo)) })
                ?? reader.markers.first else {
            return PlayerPosition(item: nil, path: nil, frame: 0, seconds: 0, frames: 0, duration: 0,
                                  playing: transport == .playing, paused: transport == .paused)
        }
        let frame = min(m.fileFrames, m.fileFrame + Int((Double(max(0, played - m.ringPosition)) * m.ratio).rounded()))
        return PlayerPosition(item: m.item, path: m.path, frame: frame, seconds: Double(frame) / Double(m.fileRate),
                              frames: m.fileFrames, duration: Double(m.fileFrames) / Double(m.fileRate),
                              playing: transport == .playing, paused: transport == .paused)
    }

    /// Events since the last call: failures from the reader, item starts and the end of the queue as the play head
    /// reaches them.
    public func drainEvents() -> [PlayerEvent] {
        var out = reader.drainEvents()
        let played = state.pointee.ring.totalRead
        // An item starts when its first frame has been played (not when it is cued).
        for m in reader.markers where m.ringPosition < played && m.ringPosition > announcedMarker {
            announcedMarker = m.ringPosition
            if !m.repeatOfItem { out.append(.itemStarted(item: m.item, path: m.path)) }
        }
        if isFinished && !announcedFinish {
            announcedFinish = true
            out.append(.queueFinished)
        }
        return out
    }

    /// The cue points of the files played since the last call whose frame has been played, in the order they played
    /// (found as `drainEvents` finds item starts: the reader's markers against the ring's read position). A cue in
    /// frames a seek or a new queue discarded unplayed is not told; one played again (a loop, a seek back) is told
    /// again. `wakingAhead`: the next cue ahead becomes the position at which the callback wakes the control loop
    /// (`cueAt`), so a cue is drained within a cycle of playing, not at the loop's next turn. Control thread.
    public func drainCues(wakingAhead: Bool = true) -> [PlayerCue] {
        let s = state.pointee
        let played = s.ring.totalRead
        let from = cuesCheckedTo
        cuesCheckedTo = max(from, played)
        let markers = reader.markers
        let cycleTime = UInt32(truncatingIfNeeded: s.counter(.cycleFrameTime))
        let cyclePosition = s.counter(.cycleRingPosition)
        var out: [PlayerCue] = []
        var ahead = Int.max
        for (k, m) in markers.enumerated() where !m.cues.isEmpty {
            var end = Int.max
            if k + 1 < markers.count { end = min(markers[k + 1].ringPosition, markers[k + 1].staleFrom ?? .max) }
            if end <= from { continue }
            for c in m.cues where c.frame >= m.fileFrame {
                let position = m.ringPosition(ofFileFrame: c.frame)
                if position >= end { break }
                if position >= played {
                    ahead = min(ahead, position)
                    break
                }
                guard position >= from else { continue }
                out.append(PlayerCue(item: m.item, path: m.path, frame: c.frame, label: c.label,
                                     frameTime: cycleTime &+ UInt32(truncatingIfNeeded: position - cyclePosition)))
            }
        }
        s.set(.cueAt, wakingAhead ? ahead : Int.max)
        return out
    }

    /// Stops the reader thread, deactivates and closes the client.
    public func close() {
        engine.close()
        loudnessTap?.close(freeRing: !client.abandoned)
    }

    /// The outputs' loudness per programme (`PlayerConfig.loudness`; empty when not measured). Any thread.
    public var loudness: [ProgrammeLoudness] { loudnessTap?.readings ?? [] }
}
