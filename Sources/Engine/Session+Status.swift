import Foundation
import Jack
import Plugins
import Presets
import Realtime
import SoundFile
#if canImport(Glibc)
import Glibc
import Takes
#endif

/// A snapshot of the whole session for status displays and the control protocol.
public struct SessionStatus: Codable, Sendable {
    public struct RecorderStatus: Codable, Sendable {
        public var client: String
        public var recording: Bool
        public var take: Int?
        public var frames: Int
        public var seconds: Double
        public var bytes: Int
        public var files: [String]
        public var directory: String
        public var freeBytes: Int?
        /// Recording time the free space leaves at the current format.
        public var secondsLeft: Double?
        public var ringFill: Int
        public var ringCapacity: Int
        public var droppedFrames: Int
        /// Frames of cycles the server ran without the recorder (never reached it; the take's report notes where).
        public var missedFrames: Int
        public var xruns: Int
        public var cycle: CycleCost
        /// What it does between takes: `recording`, `armed` (a take by command), `waiting-transport`, `waiting-level`,
        /// `scheduled` (its next window).
        public var state: String?
    }
    public struct PlayerStatus: Codable, Sendable {
        public var client: String
        public var playing: Bool
        public var paused: Bool
        public var item: Int?
        public var items: Int
        public var path: String?
        public var seconds: Double
        public var duration: Double
        public var underrunFrames: Int
        /// Frames of cycles the server ran without the player (the player was late; the graph heard nothing from it
        /// there, and the file went on where it stopped).
        public var missedFrames: Int
        public var xruns: Int
        public var ringFill: Int
        public var ringCapacity: Int
        public var cycle: CycleCost
        /// The queue (its files, in order) and the gain in dB.
        public var queue: [String]?
        public var gainDB: Double?
    }
    public struct RackStatus: Codable, Sendable {
        public var name: String
        public var client: String
        public var isolated: Bool
        /// Running now (an isolated rack: its process is up and said it is ready).
        public var running: Bool
        public var inputs: Int
        public var outputs: Int
        public var cycles: Int
        public var latencyFrames: Int
        public var xruns: Int?
        public var missedFrames: Int?
        public var cycle: CycleCost?
        /// Isolated racks: crashes, hangs, restarts, the pid, and the last recovery time in seconds.
        public var crashes: Int?
        public var hangs: Int?
        public var restarts: Int?
        public var pid: Int32?
        public var lastRecoverySeconds: Double?
        /// An isolated rack's own OSC control port (its plugins are set there: `tandem ctl --port N plugin set …`).
        public var controlPort: Int?
        /// In-process racks: MIDI events received, and messages for the control maps lost because the session had not
        /// read the last ones (its map ring was full).
        public var midiReceived: Int?
        public var mapDropped: Int?
    }
    public struct CycleCost: Codable, Sendable {
        public var p50Micros: Double
        public var p99Micros: Double
        public var maxMicros: Double
        init(_ s: CycleHistogram.Summary) {
            p50Micros = Double(s.p50) / 1000
            p99Micros = Double(s.p99) / 1000
            maxMicros = Double(s.max) / 1000
        }
    }
    public struct Meter: Codable, Sendable, Equatable {
        public var port: String
        /// Over the last metering interval.
        public var peakDB: Double
        public var rmsDB: Double
        /// Highest peak in the last 1.5 s.
        public var holdDB: Double
        /// A sample reached full scale in the last 3 s.
        public var clip: Bool
    }

    public var session: String
    public var server: String
    public var sampleRate: Int
    public var period: Int
    public var serverLost: Bool
    /// The JACK server's DSP load (percent of the period its cycle took, as JACK reports it) and its xruns since this
    /// session's first client opened.
    public var dspLoad: Double?
    public var xruns: Int?
    public var recorder: RecorderStatus?
    public var player: PlayerStatus?
    public var meters: [Meter]
    public var workers: [String]
    /// Each rack: in this process or isolated, its cycles, costs, and (isolated) how often it went down.
    public var racks: [RackStatus] = []
    /// Each engine's insert chain: plugins, control values, latency.
    public var plugins: [String: ChainStatus]

    public struct ChainStatus: Codable, Sendable {
        public var plugins: [PluginStatus]
        public var latencyFrames: Int
        /// Plugins left out and settings not applied, in words.
        public var problems: [String]
        /// The chain's dry/wet mix (0 dry … 1 wet) and output gain in dB.
        public var mix: Double?
        public var gainDB: Double?
    }

    public func json() -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return (try? e.encode(self)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }
}

/// Meter readings with RMS integrated over 300 ms, peak hold and clip memory, sampled by the control loop (the one
/// reader of the recorder's meters, so the live view and control subscribers never take readings from each other).
///
/// `sample` runs every 50 ms whether anyone watches or not (it keeps the peaks, holds and clips true and the
/// recorder's sums from growing), so it only moves numbers into storage it already has: the `Meter` values, with
/// their port names and decibels, are built when someone reads `meters` (a view, a subscriber, a status query, the
/// metrics), at most once per sample. At 128 channels the old per-turn build (a port-name lookup in libjack and a
/// new array of meters every turn) was most of the control thread's cost in a quiet take.
final class MeterTap {
    /// One reading of every channel: the frames it covers, each channel's energy (mean square x frames) and peak.
    private struct Window {
        var at: Date = .distantPast
        var frames = 0
        var energy: [Double]
        var peak: [Float]
    }
    /// Enough windows for the integration time at the control loop's fastest sampling (50 ms) and then some.
    private static let windowCount = 16
    static let integration = 0.3

    /// The recorder's port names (its configuration's: no libjack call).
    private var names: [String] = []
    private var windows: [Window] = []
    /// The newest window's index in `windows` (a ring: each sample takes the next slot, the oldest).
    private var newest = 0
    /// Linear peak held per channel, and since when.
    private var holds: [Float] = []
    /// Scratch: each channel's peak over the integration time.
    private var levels: [Float] = []
    private var heldAt: [Date] = []
    private var clips: [Date] = []
    private var built: [SessionStatus.Meter]? = []

    func sample(_ recorder: Recorder?) {
        names = recorder?.config.ports ?? []
        let channels = names.count
        if windows.isEmpty || levels.count != channels { reset(channels: channels) }
        guard let r = recorder else { return }
        newest = (newest + 1) % windows.count
        let now = Date()
        var window = windows[newest]
        windows[newest] = Window(energy: [], peak: [])   // so the arrays below are not shared (no copy)
        let frames = window.energy.withUnsafeMutableBufferPointer { energy in
            window.peak.withUnsafeMutableBufferPointer { peak in r.readMeterWindow(energy: energy, peak: peak) }
        }
        windows[newest] = window
        guard frames > 0 else {   // no cycle since the last reading
            newest = (newest + windows.count - 1) % windows.count
            return
        }
        windows[newest].at = now
        windows[newest].frames = frames
        built = nil
        windowPeaks(now: now)
        for c in 0..<channels {
            if windows[newest].peak[c] >= 1.0 { clips[c] = now }
            let level = levels[c]
            if level >= holds[c] || now.timeIntervalSince(heldAt[c]) > 1.5 {
                holds[c] = level
                heldAt[c] = now
            }
        }
    }

    /// The meters as of the last sample.
    var meters: [SessionStatus.Meter] {
        if let built { return built }
        let now = windows.isEmpty ? .distantPast : windows[newest].at
        var energy = [Double](repeating: 0, count: names.count)
        var total = 0
        for w in windows where w.frames > 0 && now.timeIntervalSince(w.at) <= Self.integration {
            total += w.frames
            for c in energy.indices { energy[c] += w.energy[c] }
        }
        windowPeaks(now: now)
        let meters = names.indices.map { c in
            SessionStatus.Meter(port: names[c], peakDB: MeterReading.decibels(levels[c]),
                                rmsDB: 20 * log10((energy[c] / Double(max(1, total))).squareRoot()),
                                holdDB: MeterReading.decibels(holds[c]), clip: now.timeIntervalSince(clips[c]) < 3)
        }
        built = meters
        return meters
    }

    /// Sets `levels` to each channel's highest peak among the windows of the last integration time.
    private func windowPeaks(now: Date) {
        for c in levels.indices { levels[c] = 0 }
        for w in windows where w.frames > 0 && now.timeIntervalSince(w.at) <= Self.integration {
            for c in levels.indices { levels[c] = max(levels[c], w.peak[c]) }
        }
    }

    private func reset(channels: Int) {
        windows = Array(repeating: Window(energy: Array(repeating: 0, count: channels),
                                          peak: Array(repeating: 0, count: channels)), count: Self.windowCount)
        newest = 0
        holds = Array(repeating: 0, count: channels)
        levels = Array(repeating: 0, count: channels)
        heldAt = Array(repeating: .distantPast, count: channels)
        clips = Array(repeating: .distantPast, count: channels)
        built = []
    }
}

extension Session {
    /// Reads the recorder's meters into the shared tap. Call every ~50 ms from the control loop.
    public func sampleMeters() { meterTap.sample(recorder) }

    /// The latest meter readings (from `sampleMeters`).
    public var meters: [SessionStatus.Meter] { meterTap.meters }

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
        return SessionStatus(session: preset?.session.name ?? "", server: serverName,
                             sampleRate: client?.sampleRate ?? 0, period: client?.bufferSize ?? 0,
                             serverLost: isWaitingForServer, dspLoad: client.map(\.cpuLoad),
                             xruns: [rec?.xruns, play?.xruns].compactMap { $0 }.max(),
                             recorder: rec, player: play, meters: meterTap.meters,
                             workers: workers.list.map { $0.detail.isEmpty ? $0.name : "\($0.name): \($0.detail)" },
                             racks: rackStatus(), plugins: pluginStatus())
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
