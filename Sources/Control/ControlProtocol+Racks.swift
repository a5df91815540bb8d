import Commands
import Coordinator
import Engine
import Foundation

/// Plugin messages for an isolated rack: its chain runs in the rack's own process (see `RackSupervisor`), which
/// answers the same messages on its own control port. The session relays them there, in an envelope naming the
/// surface they came from (`relayedAddress`), and hands back the child's reply, so a controller addresses every rack
/// by its name on the session's port alike (and the HTTP API, by the same relay from its own threads, and the session
/// itself through `sessionRelay`). What the child acknowledged the session keeps (`Session.acknowledgeRelayed`); what
/// it sets it also saves in the session folder (at most once a second), and a restarted child restores it.
extension ControlProtocol {
    /// The messages that name an engine first and act on its plugin chain.
    public static let rackRelayed: Set<String> = [
        "/tandem/plugin/set", "/tandem/plugin/get", "/tandem/plugin/bypass", "/tandem/plugin/mix",
        "/tandem/plugin/gain", "/tandem/plugin/preset", "/tandem/plugin/list",
    ]
    /// How long the control loop waits for the child's reply (the child answers within one pass of its loop).
    public static let rackReplySeconds = 1.0
    /// The envelope a relayed message travels in: `/tandem/relayed ,ss… SOURCE ADDRESS ARGS…`, so the rack's process
    /// carries it out with the surface it came from (its `control-changed` events say `http`, `midi`, `restore`).
    public static let relayedAddress = "/tandem/relayed"
    /// The sources an envelope may name.
    /// (`schedule` and `marker`: a scene recalled at its time or by a cue; `scene`: a scene reading the rig.)
    static let relaySources: Set<String> = ["osc", "http", "midi", "restore", "schedule", "marker", "scene"]

    /// The child's reply to `m` when it is a plugin command (`command`) for an isolated rack of this session; nil
    /// when it is not (the session carries it out). Control thread; blocks at most `rackReplySeconds`.
    func relayToIsolatedRack(_ m: OSCMessage, command: Command, source: String) -> [OSCValue]? {
        guard Self.rackRelayed.contains(m.path), let name = command.engine else { return nil }
        guard let target = IsolatedRackTarget(session, name) else { return nil }
        let reply = Self.relay(m, to: target, source: source)
        session.acknowledgeRelayed(command, reply: Self.commandReply(reply))
        return reply
    }

    /// The relay the session uses itself (maps, a plugin save, values given again after a server loss): `command`
    /// sent to the rack's process on `port` and its reply. Install it as `Session.rackRelay`.
    public static func sessionRelay(_ command: Command, rack: String, port: Int?, source: String) -> CommandReply {
        commandReply(relay(message(command), to: IsolatedRackTarget(name: rack, port: port), source: source))
    }

    /// `command` as an OSC message.
    public static func message(_ command: Command) -> OSCMessage {
        OSCMessage(command.address, command.values.map { v in
            switch v {
            case .text(let t): return .string(t)
            case .number(let d): return .double(d)
            }
        })
    }

    /// A reply's arguments (`ok`/`error`, address, detail, kind) as the command model's reply.
    public static func commandReply(_ reply: [OSCValue]) -> CommandReply {
        let strings = reply.map { $0.string ?? "" }
        let detail = strings.count > 2 ? strings[2] : ""
        return strings.first == "ok" ? .done(detail) : .refused(detail, refusal(strings.count > 3 ? strings[3] : nil))
    }

    /// The message inside a relay envelope and its source; nil when `m` is not a well-formed one.
    static func unwrapRelayed(_ m: OSCMessage) -> (message: OSCMessage, source: String)? {
        guard m.path == relayedAddress, m.arguments.count >= 2, let source = m.arguments[0].string,
              relaySources.contains(source), let path = m.arguments[1].string, path != relayedAddress else { return nil }
        return (OSCMessage(path, Array(m.arguments.dropFirst(2))), source)
    }

    /// Sends `m` to an isolated rack's process, in the envelope naming `source`, and waits for its reply (at most
    /// `rackReplySeconds`): the reply's arguments, or an error reply saying why there is none. Any thread (it blocks).
    public static func relay(_ m: OSCMessage, to target: IsolatedRackTarget, source: String) -> [OSCValue] {
        func error(_ why: String) -> [OSCValue] { [.string("error"), .string(m.path), .string(why), .string("conflict")] }
        guard let port = target.port else {
            return error("rack '\(target.name)' is restarting (its process is down); nothing was changed, try again")
        }
        guard let socket = try? UDPSocket(port: 0) else { return error("no socket to reach rack '\(target.name)'") }
        let child = UDPSocket.loopback(port: port)
        let envelope = OSCMessage(relayedAddress, [.string(source), .string(m.path)] + m.arguments)
        guard socket.send(envelope.encode(), to: child) else {
            return error("rack '\(target.name)' could not be reached on port \(port) (errno \(socket.lastError))")
        }
        let deadline = Date().addingTimeInterval(rackReplySeconds)
        while case let left = deadline.timeIntervalSinceNow, left > 0, socket.wait(seconds: left) {
            while let d = socket.receive(limit: 65507) {   // a plugin list can be a large datagram
                guard d.source.sin_port == child.sin_port, case .success(let reply) = OSCMessage.decode(bytes: d.bytes),
                      reply.path == "/tandem/reply" else { continue }
                return reply.arguments
            }
        }
        return error("rack '\(target.name)' did not answer within \(rackReplySeconds) s (its process may be hung)")
    }
}

/// Where the plugin commands for an isolated rack go: its process's control port (nil while it is down).
public struct IsolatedRackTarget: Sendable {
    public let name: String
    public let port: Int?

    init(name: String, port: Int?) {
        self.name = name
        self.port = port
    }

    /// The target for `name` when it is an isolated rack of `session` (nil: it is not). Control thread.
    public init?(_ session: Session, _ name: String) {
        guard session.racks[name] == nil, let rack = session.supervisors[name] else { return nil }
        self.name = name
        port = rack.isRunning && rack.ready ? rack.controlPort : nil
    }

    /// Every isolated rack of `session`. Control thread.
    public static func all(_ session: Session) -> [IsolatedRackTarget] {
        session.supervisors.keys.sorted().compactMap { IsolatedRackTarget(session, $0) }
    }
}
