import Commands
import Coordinator
import Engine
import Foundation
import Loudness
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
    /// The largest reply sent: a UDP datagram over IPv4 carries 65,507 bytes of payload.
    public static let maxReplyBytes = 65_000

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

    /// Every address the protocol answers and its OSC type notation: the command model's (`CommandSpec.all`) and
    /// the subscription messages, which belong to this transport.
    public static let commands: [String: String] = Dictionary(uniqueKeysWithValues: CommandSpec.all.map {
        ($0.address, $0.signature)
    }).merging(["/tandem/subscribe": "[s][f]", "/tandem/unsubscribe": "[s]"]) { a, _ in a }

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
    public func poll(events: [SequencedEvent]) -> Bool {
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
            var message = OSCMessage("/tandem/reply", reply).encode()
            if message.count > Self.maxReplyBytes {
                // A reply no datagram carries would vanish: say so, and where the whole answer is.
                let address = reply.count > 1 ? (reply[1].string ?? "?") : "?"
                message = OSCMessage("/tandem/reply", [.string("error"), .string(address), .string(
                    "the reply has \(message.count) bytes, more than one datagram carries (\(Self.maxReplyBytes)); ask the"
                    + " HTTP API for it (docs/HTTP.md)"), .string("conflict")]).encode()
            }
            socket.send(message, to: d.source)
            for key in subscribers.keys where !Self.same(subscribers[key]?.address, d.source) { sendToSubscriber(key, message) }
        }
        guard !subscribers.isEmpty else { return handled > 0 }
        for e in events {
            let (kind, text) = Self.describe(e.event)
            // The event's number in the session's stream: a subscriber that sees a gap knows it missed some.
            let m = OSCMessage("/tandem/event", [.string(kind), .string(text), .long(Int64(e.sequence))]).encode()
            for key in subscribers.keys { sendToSubscriber(key, m) }
        }
        let now = Date()
        let meters = session.meters
        let loudness = session.loudness
        for (key, var s) in subscribers where s.meterInterval > 0 && now >= s.nextMeters {
            s.nextMeters = now.addingTimeInterval(s.meterInterval)
            subscribers[key] = s
            var args: [OSCValue] = []
            for m in meters { args += [.float(Float(m.peakDB)), .float(Float(m.rmsDB))] }
            sendToSubscriber(key, OSCMessage("/tandem/meters", args).encode())
            // Per programme: its channels, then momentary, short-term, integrated (LUFS), range (LU), true peak
            // (dBTP); -inf where the meter has no value yet.
            var loud: [OSCValue] = []
            for p in loudness {
                loud.append(.string(p.channels.joined(separator: "+")))
                for v in [p.momentary, p.shortTerm, p.integrated, p.range, p.truePeak] {
                    loud.append(.float(v.map(Float.init) ?? -Float.infinity))
                }
            }
            if !loud.isEmpty { sendToSubscriber(key, OSCMessage("/tandem/loudness", loud).encode()) }
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

    /// Carries out one message and returns the reply's arguments: a subscription here, a plugin message for an
    /// isolated rack relayed to its process, anything else parsed into the command model and carried out by the
    /// session (`Session.execute`). `origin`: the surface the command came from (a relay envelope names another's).
    func handle(_ m: OSCMessage, from source: sockaddr_in, origin: String = "osc") -> [OSCValue] {
        func ok(_ detail: String = "") -> [OSCValue] { [.string("ok"), .string(m.path), .string(detail)] }
        func error(_ why: String) -> [OSCValue] { [.string("error"), .string(m.path), .string(why)] }
        if m.path == Self.relayedAddress {
            // A session relaying a command to this rack's process, with the surface it came from.
            guard origin == "osc", let (inner, from) = Self.unwrapRelayed(m) else {
                return error("a relay envelope is SOURCE (\(Self.relaySources.sorted().joined(separator: ", "))), an"
                             + " address and its arguments") + [.string("bad-value")]
            }
            return handle(inner, from: source, origin: from)
        }
        switch m.path {
        case "/tandem/subscribe": return subscribe(m, from: source)
        case "/tandem/unsubscribe":
            var target = source
            if let s = m.arguments.first?.string {
                guard let addr = UDPSocket.parseLoopbackURL(s) else { return error("'\(s)' is not a loopback address") }
                target = addr
            }
            return subscribers.removeValue(forKey: Self.key(target)) != nil ? ok() : error("not subscribed")
        default: break
        }
        let command: Command
        switch Command.parse(address: m.path, values: m.arguments.map(Self.commandValue)) {
        case .failure(let e):
            if CommandSpec.named[m.path] == nil {
                return error(e.message + ", /tandem/subscribe, /tandem/unsubscribe") + [.string("not-found")]
            }
            return error(e.message) + [.string("bad-value")]
        case .success(let c): command = c
        }
        if let relayed = relayToIsolatedRack(m, command: command, source: origin) { return relayed }
        let reply = session.execute(command, context: CommandContext(source: origin, arrival: arrival))
        return reply.ok ? ok(reply.detail) : error(reply.detail) + [.string(Self.word(reply.refusal ?? .conflict))]
    }

    /// A refusal's kind as an error reply's fourth string (what a surface with status codes turns into one).
    static func word(_ refusal: CommandReply.Refusal) -> String {
        switch refusal {
        case .notFound: "not-found"
        case .badValue: "bad-value"
        case .conflict: "conflict"
        }
    }

    /// The kind an error reply's fourth string names (conflict when it names none).
    public static func refusal(_ word: String?) -> CommandReply.Refusal {
        switch word {
        case "not-found": .notFound
        case "bad-value": .badValue
        default: .conflict
        }
    }

    /// An OSC argument as the command model takes it: strings as text, every number type as a number.
    static func commandValue(_ v: OSCValue) -> CommandValue {
        if let s = v.string { return .text(s) }
        if let d = v.number { return .number(d) }
        return .text(v.description)
    }

    /// `/tandem/subscribe [URL] [INTERVAL]`.
    private func subscribe(_ m: OSCMessage, from source: sockaddr_in) -> [OSCValue] {
        func ok(_ detail: String = "") -> [OSCValue] { [.string("ok"), .string(m.path), .string(detail)] }
        func error(_ why: String) -> [OSCValue] { [.string("error"), .string(m.path), .string(why)] }
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
    }

    /// An event as `/tandem/event` carries it: its kind and text.
    public static func describe(_ e: SessionEvent) -> (String, String) {
        switch e {
        case .recorder(.takeStarted(let take, let files)): return ("take-started", "take \(take): \(files.joined(separator: ", "))")
        case .recorder(.chunkStarted(let take, let chunk, _)): return ("chunk-started", "take \(take) chunk \(chunk)")
        case .recorder(.takeFinished(let r, let sidecar)):
            return ("take-finished", "take \(r.take) \(r.ended.rawValue): \(r.frames) frames; "
                    + (sidecar.isEmpty ? "no report (it could not be written)" : "report \(sidecar)"))
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
        case .chainEdited(let engine, let detail, let source): return ("chain-edited", "\(engine) \(detail) \(source)")
        case .chainLevelChanged(let engine, let mix, let gainDB, let source):
            return ("chain-level-changed", "\(engine) \(mix) \(gainDB) \(source)")
        case .favouritesChanged(let source): return ("favourites-changed", source)
        case .markerAdded(let take, let seconds, let label, let source):
            return ("marker-added", "\(take) \(String(format: "%.3f", seconds)) \(source) \(label)")
        case .mapAdded(let index, let map): return ("map-added", "\(index) \(map)")
        case .mapFailed(let why): return ("map-failed", why)
        case .sceneRecalled(let name, let ramp, let applied, let missing, let lag, let source):
            return ("scene-recalled", "\(CommandValue.text(name).word) \(Limits.number(ramp)) \(applied) \(source)"
                    + (lag.map { " lag \(String(format: "%.2f", $0)) ms" } ?? "")
                    + (missing.isEmpty ? "" : "; not applied: " + missing.joined(separator: "; ")))
        case .sceneMorphed(let from, let to, let position, let source):
            return ("scene-morphed", "\(CommandValue.text(from).word) \(CommandValue.text(to).word) \(Limits.number(position)) \(source)")
        case .scenesChanged(let detail, let source): return ("scenes-changed", "\(detail) \(source)")
        case .relayed(let kind, let text): return (kind, text)
        }
    }
}
