import Engine
import Foundation
import Logging
import Plugins
import Presets
#if canImport(Glibc)
import Glibc
#endif

/// Tandem's OSC control protocol (see docs/CONTROL.md), served on 127.0.0.1 from the control thread.
///
/// Every message gets a reply to its sender: `/tandem/reply ,sss` with "ok" or "error", the request's address, and a
/// detail (the status JSON for `/tandem/status`). Subscribers (loopback addresses only) also receive the replies,
/// every session event as `/tandem/event ,ss` and, at their chosen rate, `/tandem/meters` (peak and RMS dBFS per
/// channel). Paths given remotely must lie inside the session's directory; nothing remote runs a command.
///
/// Threads: control thread only (`poll` is called from the run loop).
public final class ControlProtocol {
    public let socket: UDPSocket
    let session: Session
    private let logger: Logger
    /// Largest message accepted (larger ones get an error reply).
    public static let maxMessageBytes = 8192

    struct Subscriber {
        var address: sockaddr_in
        var meterInterval: Double
        var nextMeters: Date
        /// Messages it may still be sent in this second (refilled at `sendRate` per second, up to `sendBurst`).
        var tokens = Double(ControlProtocol.sendBurst)
        var refilledAt = Date()
        /// Messages not sent because it was over its rate.
        var dropped = 0
    }
    /// At most this many messages a second go to one subscriber (replies, events, meters), in bursts up to
    /// `sendBurst`; the rest are dropped and counted, so no subscriber (not even a loop back to a session) can make
    /// the control loop spend its time sending.
    static let sendRate = 200.0
    static let sendBurst = 400
    /// At most this many requests are handled in one `poll`, so a flood can never delay the run loop's look at its
    /// signals (a stop request) by more than one poll.
    public static let maxRequestsPerPoll = 64
    /// ... and for at most this long (a request after it waits for the next poll).
    static let pollBudgetSeconds = 0.1
    /// Addresses the session never answers: its own replies, events and meters coming back (a loop).
    static let ownOutputs: Set<String> = ["/tandem/reply", "/tandem/event", "/tandem/meters"]
    private var subscribers: [String: Subscriber] = [:]
    /// The receive time of the request being handled (a marker lands on its frame).
    private var arrival: Date?
    private static let maxSubscribers = 16

    public static let commands: [String: String] = [
        "/tandem/ping": "", "/tandem/status": "", "/tandem/record/start": "", "/tandem/record/stop": "",
        "/tandem/record/arm": "", "/tandem/record/rotate": "", "/tandem/record/mark": "[s]", "/tandem/play/play": "", "/tandem/play/pause": "",
        "/tandem/play/stop": "", "/tandem/play/next": "", "/tandem/play/seek": "f", "/tandem/play/gain": "f",
        "/tandem/play/load": "s...", "/tandem/preset/apply": "s", "/tandem/subscribe": "[s] [f]",
        "/tandem/unsubscribe": "[s]", "/tandem/plugin/set": "sssf", "/tandem/plugin/get": "sss",
        "/tandem/plugin/save": "", "/tandem/engines": "", "/tandem/plugin/list": "[s]",
        "/tandem/plugin/preset": "sss", "/tandem/preset/save": "s", "/tandem/takes": "",
        "/tandem/plugin/bypass": "ss[f]", "/tandem/plugin/mix": "s[f]", "/tandem/plugin/gain": "s[f]",
    ].merging(mapCommands) { a, _ in a }

    /// The chain an engine runs now, if it has one with plugins.
    private func runningChain(_ engine: ChainEngine) -> PluginChain? {
        session.chain(engine).flatMap { $0.isEmpty ? nil : $0 }
    }

    public init(session: Session, port: Int, logger: Logger = Logger(label: "tandem.control")) throws(UDPSocket.Error) {
        self.session = session
        self.logger = logger
        socket = try UDPSocket(port: port)
        logger.info("control protocol listening", metadata: ["address": "osc.udp://127.0.0.1:\(socket.port)/"])
    }

    public var port: Int { socket.port }

    /// Whether a subscriber is waiting for meters or events (the control loop then turns often).
    public var hasSubscribers: Bool { !subscribers.isEmpty }

    /// Handles every waiting message, then pushes `events` and due meters to subscribers. Returns whether a message
    /// came in.
    @discardableResult
    public func poll(events: [SessionEvent]) -> Bool {
        var handled = 0
        let budgetEnds = Date().addingTimeInterval(Self.pollBudgetSeconds)
        while handled < Self.maxRequestsPerPoll, handled == 0 || Date() < budgetEnds,
              let d = socket.receive(limit: Self.maxMessageBytes + 1) {
            handled += 1
            let reply: [OSCValue]
            if isOwnAddress(d.source) {
                // A datagram from this very socket: a subscription or a forged source pointing back at us.
                continue
            }
            if d.size > Self.maxMessageBytes {
                reply = [.string("error"), .string("?"),
                         .string("message too large (\(d.size) bytes; at most \(Self.maxMessageBytes))")]
            } else {
                switch OSCMessage.decode(bytes: d.bytes) {
                case .success(let m) where Self.ownOutputs.contains(m.path):
                    continue   // another session's reply or event: answering it could start an endless exchange
                case .success(let m):
                    arrival = d.arrival
                    reply = handle(m, from: d.source)
                    arrival = nil
                case .failure(let e): reply = [.string("error"), .string("?"), .string("malformed: \(e.message)")]
                }
            }
            let message = OSCMessage("/tandem/reply", reply).encode()
            socket.send(message, to: d.source)
            for key in subscribers.keys where !Self.same(subscribers[key]?.address, d.source) { sendToSubscriber(key, message) }
        }
        guard !subscribers.isEmpty else { return handled > 0 }
        for e in events {
            let (kind, text) = Self.describe(e)
            let m = OSCMessage("/tandem/event", [.string(kind), .string(text)]).encode()
            for key in subscribers.keys { sendToSubscriber(key, m) }
        }
        let now = Date()
        let meters = session.meters
        for (key, var s) in subscribers where s.meterInterval > 0 && now >= s.nextMeters {
            s.nextMeters = now.addingTimeInterval(s.meterInterval)
            subscribers[key] = s
            var args: [OSCValue] = []
            for m in meters { args += [.float(Float(m.peakDB)), .float(Float(m.rmsDB))] }
            sendToSubscriber(key, OSCMessage("/tandem/meters", args).encode())
        }
        return handled > 0
    }

    /// Sends to one subscriber within its rate (see `sendRate`); over it, the message is dropped and counted.
    private func sendToSubscriber(_ key: String, _ message: [UInt8]) {
        guard var s = subscribers[key] else { return }
        let now = Date()
        s.tokens = min(Double(Self.sendBurst), s.tokens + now.timeIntervalSince(s.refilledAt) * Self.sendRate)
        s.refilledAt = now
        if s.tokens >= 1 {
            s.tokens -= 1
            socket.send(message, to: s.address)
        } else {
            if s.dropped == 0 {
                logger.warning("subscriber over its rate: messages dropped", metadata: ["subscriber": "\(key)"])
            }
            s.dropped += 1
        }
        subscribers[key] = s
    }

    /// Whether `a` is this session's own control socket (any loopback address, our port).
    func isOwnAddress(_ a: sockaddr_in) -> Bool {
        UDPSocket.isLoopback(a) && Int(UInt16(bigEndian: a.sin_port)) == socket.port
    }

    static func same(_ a: sockaddr_in?, _ b: sockaddr_in) -> Bool {
        guard let a else { return false }
        return a.sin_port == b.sin_port && a.sin_addr.s_addr == b.sin_addr.s_addr
    }

    static func key(_ a: sockaddr_in) -> String {
        "\(UInt32(bigEndian: a.sin_addr.s_addr)):\(UInt16(bigEndian: a.sin_port))"
    }

    /// Carries out one message and returns the reply's arguments.
    func handle(_ m: OSCMessage, from source: sockaddr_in) -> [OSCValue] {
        func ok(_ detail: String = "") -> [OSCValue] { [.string("ok"), .string(m.path), .string(detail)] }
        func error(_ why: String) -> [OSCValue] { [.string("error"), .string(m.path), .string(why)] }
        func noArguments() -> String? {
            m.arguments.isEmpty ? nil : "\(m.path) takes no arguments (got \(m.arguments.count))"
        }
        if let relayed = relayToIsolatedRack(m) { return relayed }
        if let reply = handleMap(m) { return reply }
        switch m.path {
        case "/tandem/ping":
            return ok("pong")
        case "/tandem/status":
            return ok(session.status().json())
        case "/tandem/record/start":
            if let e = noArguments() { return error(e) }
            guard session.recorder != nil else { return error("this session has no recorder") }
            return session.startTake() ? ok() : error("a take is already running")
        case "/tandem/record/stop", "/tandem/record/arm":
            if let e = noArguments() { return error(e) }
            guard session.recorder != nil else { return error("this session has no recorder") }
            session.stopTake()
            return ok(m.path.hasSuffix("arm") ? "armed: metering, nothing written until started" : "")
        case "/tandem/record/mark":
            // [LABEL]: a marker at the frame the request arrived.
            guard m.arguments.count <= 1 else { return error("/tandem/record/mark takes an optional LABEL (got \(m.arguments.count) arguments)") }
            var label = ""
            if let a = m.arguments.first {
                // A number is taken as its text (`tandem ctl record mark 2` sends an integer).
                guard let text = a.string ?? (a.number != nil ? a.description : nil) else {
                    return error("/tandem/record/mark: LABEL must be a string")
                }
                label = text
            }
            guard session.recorder != nil else { return error("this session has no recorder") }
            guard let r = session.recorder, r.isRecording else { return error("no take is running: marker not kept") }
            guard let at = session.mark(label: label, source: "osc", arrival: arrival ?? Date()) else {
                return error("no take is running: marker not kept")
            }
            return ok("marker at stream frame \(at)")
        case "/tandem/record/rotate":
            if let e = noArguments() { return error(e) }
            return session.rotate() ? ok() : error("no take is running")
        case "/tandem/play/play", "/tandem/play/pause", "/tandem/play/stop", "/tandem/play/next":
            if let e = noArguments() { return error(e) }
            let done: Bool
            switch m.path {
            case "/tandem/play/play": done = session.play()
            case "/tandem/play/pause": done = session.pause()
            case "/tandem/play/stop": done = session.stopPlayback()
            default: done = session.next()
            }
            return done ? ok() : error("this session has no player")
        case "/tandem/play/seek", "/tandem/play/gain":
            guard m.arguments.count == 1, let v = m.arguments[0].number, v.isFinite else {
                return error("\(m.path) takes one number (\(m.path.hasSuffix("seek") ? "seconds" : "dB")), got "
                             + (m.arguments.isEmpty ? "nothing" : m.arguments.map(\.description).joined(separator: ", ")))
            }
            if m.path.hasSuffix("seek") {
                guard Limits.contains(Limits.seekSeconds, v) else {
                    return error("seek position must be \(Limits.describe(Limits.seekSeconds, unit: " seconds"))")
                }
                guard session.player != nil else { return error("this session has no player") }
                return session.seek(seconds: v) ? ok() : error("cannot seek to \(v) seconds")
            }
            guard Limits.contains(Limits.gainDB, v) else { return error("gain must be \(Limits.describe(Limits.gainDB, unit: " dB"))") }
            return session.setGain(dB: v) ? ok() : error("this session has no player")
        case "/tandem/play/load":
            guard !m.arguments.isEmpty else { return error("/tandem/play/load takes one or more file paths") }
            var files: [String] = []
            for a in m.arguments {
                guard let s = a.string else { return error("file paths must be strings, got \(a)") }
                switch inside(s) {
                case .success(let p): files.append(p)
                case .failure(let why): return error(why.description)
                }
            }
            return session.load(files) ? ok("\(files.count) file(s) queued") : error("this session has no player")
        case "/tandem/preset/apply":
            guard m.arguments.count == 1, let s = m.arguments[0].string else {
                return error("/tandem/preset/apply takes one preset path")
            }
            let path: String
            switch inside(s) {
            case .success(let p): path = p
            case .failure(let why): return error(why.description)
            }
            let (preset, problems) = PresetLoader.load(path: path)
            guard var p = preset else { return error(problems.map(\.description).joined(separator: "; ")) }
            p.session.server = session.preset?.session.server ?? p.session.server
            do {
                let report = try session.apply(p)
                return ok(report.description)
            } catch let failure {
                return error(failure.message)
            }
        case "/tandem/plugin/set", "/tandem/plugin/get":
            // ENGINE PLUGIN SYMBOL [VALUE]: engine is "recorder" or "player", plugin its name in the chain.
            let setting = m.path.hasSuffix("set")
            let usage = "\(m.path) takes ENGINE (recorder, player or a rack name), PLUGIN (its name), SYMBOL" + (setting ? ", VALUE (a number)" : "")
            guard m.arguments.count == (setting ? 4 : 3) else { return error(usage) }
            // Names are strings; a command line may have sent a name like "2" as a number.
            let (e, plugin, symbol) = (m.arguments[0].string ?? m.arguments[0].description,
                                       m.arguments[1].string ?? m.arguments[1].description,
                                       m.arguments[2].string ?? m.arguments[2].description)
            guard session.hasEngine(e) else { return error("unknown engine '\(e)' (recorder, player or a rack's name)") }
            let engine = ChainEngine(rawValue: e)
            do {
                if setting {
                    guard let v = m.arguments[3].number, v.isFinite else { return error(usage) }
                    let set = try session.setPluginControl(engine, plugin: plugin, symbol: symbol, value: v)
                    return ok("\(set)")
                }
                return ok("\(try session.pluginControl(engine, plugin: plugin, symbol: symbol))")
            } catch let failure {
                return error(failure.description)
            }
        case "/tandem/plugin/bypass":
            // ENGINE PLUGIN [ON]: sets (1 bypassed, 0 running) or, without ON, reads the plugin's bypass.
            let usage = "/tandem/plugin/bypass takes ENGINE (recorder, player or a rack name), PLUGIN (its name), and optionally 1 or 0"
            guard m.arguments.count == 2 || m.arguments.count == 3 else { return error(usage) }
            let e = m.arguments[0].string ?? m.arguments[0].description
            guard session.hasEngine(e) else { return error("unknown engine '\(e)' (recorder, player or a rack's name)") }
            let engine = ChainEngine(rawValue: e)
            guard let chain = runningChain(engine) else { return error("the \(e) has no plugin chain") }
            let plugin = m.arguments[1].string ?? m.arguments[1].description
            do {
                if m.arguments.count == 3 {
                    guard let v = m.arguments[2].number, v == 0 || v == 1 else { return error(usage) }
                    try session.setPluginBypass(engine, plugin: plugin, v == 1)
                }
                return ok(try chain.isBypassed(plugin) ? "1" : "0")
            } catch let failure {
                return error(failure.description)
            }
        case "/tandem/plugin/mix", "/tandem/plugin/gain":
            // ENGINE [VALUE]: the chain's dry/wet mix (0 dry ... 1 wet) or its output gain in dB; without VALUE, read.
            let isMix = m.path.hasSuffix("mix")
            let usage = "\(m.path) takes ENGINE (recorder, player or a rack name) and optionally "
                + (isMix ? "MIX (0 dry to 1 wet)" : "GAIN (dB, \(Limits.describe(Limits.gainDB, unit: " dB")))")
            guard m.arguments.count == 1 || m.arguments.count == 2 else { return error(usage) }
            let e = m.arguments[0].string ?? m.arguments[0].description
            guard session.hasEngine(e) else { return error("unknown engine '\(e)' (recorder, player or a rack's name)") }
            let engine = ChainEngine(rawValue: e)
            guard let chain = runningChain(engine) else { return error("the \(e) has no plugin chain") }
            if m.arguments.count == 2 {
                guard let v = m.arguments[1].number, v.isFinite else { return error(usage) }
                // Out of range is refused, as a preset's `mix` and `gain` and the command line's are.
                let range = isMix ? Limits.mix : Limits.gainDB
                guard Limits.contains(range, v) else {
                    return error("\(isMix ? "mix" : "gain") \(Limits.number(v)) is out of range ("
                                 + (isMix ? "0 to 1" : Limits.describe(Limits.gainDB, unit: " dB")) + ")")
                }
                if isMix { chain.mix = v } else { chain.gainDB = v }
            }
            return ok("\(isMix ? chain.mix : chain.gainDB)")
        case "/tandem/plugin/save":
            if let e = noArguments() { return error(e) }
            do {
                let dirs = try session.savePlugins()
                return dirs.isEmpty ? error("this session has no plugins") : ok(dirs.joined(separator: " "))
            } catch let failure {
                return error(failure.description)
            }
        case "/tandem/engines":
            if let e = noArguments() { return error(e) }
            return ok(introspectionJSON(session.describeEngines()))
        case "/tandem/takes":
            if let e = noArguments() { return error(e) }
            return ok(introspectionJSON(session.describeTakes()))
        case "/tandem/plugin/list":
            guard m.arguments.count <= 1 else { return error("/tandem/plugin/list takes an optional ENGINE (recorder, player or a rack name)") }
            var engine: ChainEngine?
            if let a = m.arguments.first {
                let name = a.string ?? a.description
                guard session.hasEngine(name) else { return error("unknown engine '\(name)' (recorder, player or a rack's name)") }
                let e = ChainEngine(rawValue: name)
                engine = e
            }
            return ok(introspectionJSON(session.describePlugins(engine)))
        case "/tandem/plugin/preset":
            guard m.arguments.count == 3, let uri = m.arguments[2].string else {
                return error("/tandem/plugin/preset takes ENGINE (recorder, player or a rack name), PLUGIN (its name), PRESET (a URI)")
            }
            let (e, plugin) = (m.arguments[0].string ?? m.arguments[0].description, m.arguments[1].string ?? m.arguments[1].description)
            guard session.hasEngine(e) else { return error("unknown engine '\(e)' (recorder, player or a rack's name)") }
            let engine = ChainEngine(rawValue: e)
            do {
                try session.loadPluginPreset(engine, plugin: plugin, preset: uri)
                return ok("preset loaded: \(uri)")
            } catch let failure {
                return error(failure.description)
            }
        case "/tandem/preset/save":
            guard m.arguments.count == 1, let name = m.arguments[0].string else {
                return error("/tandem/preset/save takes a NAME (the file NAME.toml in the session folder)")
            }
            do {
                return ok(try session.saveRunningPreset(name: name))
            } catch let failure {
                return error(failure.message)
            }
        case "/tandem/subscribe":
            var target = source
            var interval = 0.1
            for a in m.arguments {
                if let s = a.string {
                    guard let addr = UDPSocket.parseLoopbackURL(s) else {
                        return error("subscriber '\(s)' must be a loopback address like osc.udp://127.0.0.1:9000/")
                    }
                    target = addr
                } else if let n = a.number {
                    guard Limits.contains(Limits.meterIntervalSeconds, n) else {
                        return error("meter interval must be \(Limits.describe(Limits.meterIntervalSeconds, unit: " seconds"))")
                    }
                    interval = n
                } else {
                    return error("subscribe takes an address string and a meter interval in seconds")
                }
            }
            guard UDPSocket.isLoopback(target) else { return error("only loopback subscribers are accepted") }
            guard !isOwnAddress(target) else {
                return error("a session cannot subscribe its own control port (port \(socket.port)): it would answer itself forever")
            }
            if subscribers[Self.key(target)] == nil && subscribers.count >= Self.maxSubscribers {
                return error("too many subscribers (\(Self.maxSubscribers))")
            }
            subscribers[Self.key(target)] = Subscriber(address: target, meterInterval: interval, nextMeters: Date())
            return ok("subscribed: replies, events and meters every " + String(format: "%g", interval) + " s")
        case "/tandem/unsubscribe":
            var target = source
            if let s = m.arguments.first?.string {
                guard let addr = UDPSocket.parseLoopbackURL(s) else { return error("'\(s)' is not a loopback address") }
                target = addr
            }
            return subscribers.removeValue(forKey: Self.key(target)) != nil ? ok() : error("not subscribed")
        default:
            let known = Self.commands.keys.sorted().joined(separator: ", ")
            return error("unknown command '\(m.path)' (known: \(known))")
        }
    }

    /// Resolves a remote path: relative to the session directory, symlinks and ".." resolved, and refused unless
    /// it stays inside that directory.
    func inside(_ path: String) -> Result<String, Failure> {
        guard let base = session.preset?.session.directory else {
            return .failure(Failure("no session directory"))
        }
        let root = URL(fileURLWithPath: base).standardizedFileURL.resolvingSymlinksInPath().path
        let candidate = path.hasPrefix("/") ? path : (root as NSString).appendingPathComponent(path)
        let resolved = URL(fileURLWithPath: candidate).standardizedFileURL.resolvingSymlinksInPath().path
        guard resolved == root || resolved.hasPrefix(root + "/") else {
            return .failure(Failure("'\(path)' is outside the session directory '\(root)'"))
        }
        return .success(resolved)
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }

    /// An event as `/tandem/event` carries it: its kind and text.
    public static func describe(_ e: SessionEvent) -> (String, String) {
        switch e {
        case .recorder(.takeStarted(let take, let files)): return ("take-started", "take \(take): \(files.joined(separator: ", "))")
        case .recorder(.chunkStarted(let take, let chunk, _)): return ("chunk-started", "take \(take) chunk \(chunk)")
        case .recorder(.takeFinished(let r, let sidecar)):
            return ("take-finished", "take \(r.take) \(r.ended.rawValue): \(r.frames) frames; report \(sidecar)")
        case .recorder(.diskError(let take, let message)): return ("disk-error", "take \(take): \(message)")
        case .player(.itemStarted(let item, let path)): return ("item-started", "\(item + 1): \(path)")
        case .player(.itemFailed(_, let path, let message)): return ("item-failed", "\(path): \(message)")
        case .player(.queueFinished): return ("queue-finished", "")
        case .connected(let a, let b): return ("connected", "\(a) -> \(b)")
        case .disconnected(let a, let b): return ("disconnected", "\(a) -> \(b)")
        case .manualDisconnect(let a, let b, let repaired): return ("manual-disconnect", "\(a) -> \(b) \(repaired ? "repaired" : "respected")")
        case .serverLost(let why): return ("server-lost", why)
        case .serverBack: return ("server-back", "")
        case .cyclesStopped(let seconds): return ("cycles-stopped", String(format: "%.2f s", seconds))
        case .cyclesBack(let seconds): return ("cycles-back", String(format: "%.2f s", seconds))
        case .refused(let why): return ("refused", why)
        case .pluginProblem(let engine, let plugin, let bypassed, let message):
            return (bypassed ? "plugin-bypassed" : "plugin-ignored", "\(engine) \(plugin): \(message)")
        case .rackDown(let rack, let what): return ("rack-down", "\(rack): \(what)")
        case .rackBack(let rack, let seconds): return ("rack-back", "\(rack): \(String(format: "%.2f", seconds)) s")
        case .controlChanged(let engine, let plugin, let symbol, let value, let source):
            return ("control-changed", "\(engine) \(plugin) \(symbol) \(value) \(source)")
        case .bypassChanged(let engine, let plugin, let bypassed, let source):
            return ("bypass-changed", "\(engine) \(plugin) \(bypassed ? 1 : 0) \(source)")
        case .presetLoaded(let engine, let plugin, let preset, let source):
            return ("preset-loaded", "\(engine) \(plugin) \(preset) \(source)")
        case .mapAdded(let index, let map): return ("map-added", "\(index) \(map)")
        case .mapFailed(let why): return ("map-failed", why)
        case .relayed(let kind, let text): return (kind, text)
        }
    }
}
