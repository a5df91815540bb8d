import Engine
import Foundation
import Jack
import Loudness
import Plugins
import Presets
import Realtime
import SoundFile
#if canImport(Glibc)
import Glibc
import Takes
#endif

extension Session {
    /// Reads the recorder's meters into the shared tap. Call every ~50 ms from the control loop.
    public func sampleMeters() { meterTap.sample(recorder) }

    /// The latest meter readings (from `sampleMeters`).
    public var meters: [SessionStatus.Meter] { meterTap.meters }

    /// Every measured programme's loudness now (each engine publishes its own at most every 100 ms).
    public var loudness: [ProgrammeLoudness] {
        (recorder?.loudness ?? []) + (player?.loudness ?? [])
            + Set(racks.keys).union(supervisors.keys).sorted().flatMap { racks[$0]?.loudness ?? supervisors[$0]?.loudness ?? [] }
    }

    /// Everything a status display or a remote controller wants to know, now.
    public func status() -> SessionStatus {
        let client = patchClient
        var rec: SessionStatus.RecorderStatus?
        if let r = recorder, let cfg = recorderConfig {
            let take = r.takeStatus
            var free: Int?
            var st = statvfs()
            if statvfs(cfg.directory, &st) == 0 { free = Int(st.f_bavail) * Int(st.f_frsize) }
            // Every recorded channel counts: the dry copies too.
            let channels = cfg.recordedChannelNames.count
            var perSecond = Double(r.sampleRate * channels * 4)
            if let width = TakeFiles.bytesPerSample(cfg.format) {
                perSecond = Double(r.sampleRate * channels * width)
            } else if let t = take, t.frames > 0, t.bytes > 0 {
                perSecond = Double(t.bytes) / (Double(t.frames) / Double(r.sampleRate))
            }
            rec = SessionStatus.RecorderStatus(
                client: r.client.name, recording: take != nil, take: take?.take, frames: take?.frames ?? 0,
                seconds: Double(take?.frames ?? 0) / Double(max(1, r.sampleRate)), bytes: take?.bytes ?? 0,
                files: take?.files ?? [], directory: cfg.directory, freeBytes: free,
                secondsLeft: free.map { Double($0) / max(1, perSecond) }, ringFill: r.ringFill.frames,
                ringCapacity: r.ringFill.capacity, droppedFrames: r.droppedFrames, missedFrames: r.missedFrames,
                xruns: r.client.notifications.count(.xrun), cycle: .init(r.cycleCost),
                state: take != nil ? "recording" : recorderWaitState)
        }
        var play: SessionStatus.PlayerStatus?
        if let p = player {
            let pos = p.position
            play = SessionStatus.PlayerStatus(
                client: p.client.name, playing: pos.playing && !p.isFinished, paused: pos.paused, item: pos.item,
                items: p.queue.count, path: pos.path, seconds: pos.seconds, duration: pos.duration,
                underrunFrames: p.underrunFrames, missedFrames: p.missedFrames,
                xruns: p.xruns, ringFill: p.ringFill.frames, ringCapacity: p.ringFill.capacity,
                cycle: .init(p.cycleCost), queue: p.queue, gainDB: p.gainDB)
        }
        let serverName = JackServer.effectiveName(server)
        let programmes = loudness
        var status = SessionStatus(session: preset?.session.name ?? "", server: serverName,
                             sampleRate: client?.sampleRate ?? 0, period: client?.bufferSize ?? 0,
                             serverLost: isWaitingForServer, dspLoad: client.map(\.cpuLoad),
                             xruns: [rec?.xruns, play?.xruns].compactMap { $0 }.max(),
                             recorder: rec, player: play, meters: meterTap.meters,
                             workers: workers.list.map { $0.detail.isEmpty ? $0.name : "\($0.name): \($0.detail)" },
                             racks: rackStatus(), plugins: pluginStatus())
        status.loudness = programmes.isEmpty ? nil : programmes
        status.idleConnections = patchbay.idleRules.isEmpty ? nil : patchbay.idleRules
        status.preset = .init(path: preset?.path)
        return status
    }

    /// What an idle recorder waits for (see `RecorderStatus.state`).
    var recorderWaitState: String {
        if recorderConfig?.schedule?.isEmpty == false { return "scheduled" }
        switch preset?.recorder?.start {
        case .transport: return "waiting-transport"
        case .level: return "waiting-level"
        default: return "armed"
        }
    }

    func rackStatus() -> [SessionStatus.RackStatus] {
        var out: [SessionStatus.RackStatus] = []
        for name in Set(racks.keys).union(supervisors.keys).sorted() {
            if let r = racks[name] {
                out.append(.init(name: name, client: r.client.name, isolated: false, running: true,
                                 inputs: r.inputs.count, outputs: r.outputs.count, cycles: r.cycles,
                                 latencyFrames: r.latency, xruns: r.xruns, missedFrames: r.missedFrames,
                                 cycle: .init(r.cycleCost), midiReceived: r.midiReceived, mapDropped: r.mapDropped))
            } else if let s = supervisors[name] {
                out.append(.init(name: name, client: s.rack.client, isolated: true, running: s.ready && s.isRunning,
                                 inputs: s.ports.inputs, outputs: s.ports.outputs,
                                 cycles: s.cycles, latencyFrames: 0, crashes: s.crashes, hangs: s.hangs,
                                 restarts: s.restarts, pid: s.pid, lastRecoverySeconds: s.lastRecoverySeconds,
                                 controlPort: s.controlPort))
            }
        }
        return out
    }

    // MARK: Commands for the control protocol

    /// Plays the cued or paused player once its ring is full (a start time still waiting is cancelled). False when there is
    /// no player.
    @discardableResult public func play() -> Bool {
        guard let p = player else { return false }
        timetable.cancelPlayerStart()
        p.waitForFill(seconds: 5)
        p.play()
        return true
    }
    @discardableResult public func pause() -> Bool { player.map { $0.pause(); return true } ?? false }
    @discardableResult public func stopPlayback() -> Bool { player.map { $0.stop(); return true } ?? false }
    @discardableResult public func next() -> Bool { player.map { $0.next(); return true } ?? false }

    /// Seeks the current item to `seconds` (within `Limits.seekSeconds`; false when outside or without a player).
    @discardableResult public func seek(seconds: Double) -> Bool {
        guard let p = player, Limits.contains(Limits.seekSeconds, seconds) else { return false }
        let rate = p.position.frames > 0 && p.position.duration > 0
            ? Double(p.position.frames) / p.position.duration : Double(p.sampleRate)
        guard let frame = Limits.frames(seconds: seconds, rate: rate) else { return false }
        p.seek(frame: frame)
        return true
    }

    @discardableResult public func load(_ queue: [String]) -> Bool { player.map { $0.load(queue); return true } ?? false }
    @discardableResult public func setGain(dB: Double) -> Bool { player.map { $0.setGain(dB: dB); return true } ?? false }
    @discardableResult public func rotate() -> Bool {
        guard let r = recorder, r.isRecording else { return false }
        r.rotate()
        return true
    }
}

extension Session {
    func pluginStatus() -> [String: SessionStatus.ChainStatus] {
        var out: [String: SessionStatus.ChainStatus] = [:]
        for engine in chainEngines {
            guard let c = chain(engine) else { continue }
            out[engine.rawValue] = .init(plugins: c.status, latencyFrames: c.latency, problems: c.problems.map(PluginChain.bypassLine),
                                         mix: c.mix, gainDB: c.gainDB)
        }
        return out
    }
}
