import Commands
import Control
import Coordinator
import Engine
import Foundation
import HTTPTypes
import Hummingbird

// Carrying out: a command through the gateway (or relayed to an isolated rack), its reply as a response.
extension Routes {
    /// The command, carried out by the session; its reply as JSON or an error status.
    func act(_ command: Command) async throws -> Response {
        let r = try await run(command)
        return r.ok ? JSONResponse.encode(Reply(ok: true, detail: r.detail)) : failure(r)
    }

    /// A query: the session's JSON as it is.
    func query(_ command: Command) async throws -> Response {
        let r = try await run(command)
        return r.ok ? JSONResponse.json(r.detail) : failure(r)
    }

    func run(_ command: Command) async throws -> CommandReply {
        // Every text one printable line of bounded length (routes build some commands from bodies themselves).
        if let problem = command.textProblem { throw HTTPError(.badRequest, message: problem.message) }
        do {
            // A plugin command for an isolated rack goes to the rack's process, from this task: the session's loop
            // only says where (the relay never waits on the loop's thread).
            if ControlProtocol.rackRelayed.contains(command.address), let engine = command.engine,
               let target = try await server.gateway.run({ session in IsolatedRackTarget(session, engine) }) {
                let reply = await Self.relay(command, to: target)
                // The session keeps what the process acknowledged before the client hears it.
                if reply.ok { try await server.gateway.run { session in session.acknowledgeRelayed(command, reply: reply) } }
                return reply
            }
            if command == .pluginList(engine: nil) { return try await allPlugins() }
            return try await server.gateway.run { session in session.execute(command, context: CommandContext(source: "http")) }
        } catch let busy as SessionGateway.Busy {
            throw HTTPError(.serviceUnavailable, message: busy.description)
        }
    }

    /// `command` carried out by an isolated rack's process (its changes said with the source `http`), its reply as
    /// the session's would be.
    static func relay(_ command: Command, to target: IsolatedRackTarget) async -> CommandReply {
        let reply = await withCheckedContinuation { (c: CheckedContinuation<[OSCValue], Never>) in
            DispatchQueue.global().async {
                c.resume(returning: ControlProtocol.relay(ControlProtocol.message(command), to: target, source: "http"))
            }
        }
        return ControlProtocol.commandReply(reply)
    }

    /// Every chain's plugins: the session's own, and each isolated rack's from its process.
    func allPlugins() async throws -> CommandReply {
        let (local, racks) = try await server.gateway.run { session in
            (session.execute(.pluginList(engine: nil), context: CommandContext(source: "http")), IsolatedRackTarget.all(session))
        }
        guard local.ok, var all = try? JSONSerialization.jsonObject(with: Data(local.detail.utf8)) as? [Any] else { return local }
        for rack in racks {
            let r = await Self.relay(.pluginList(engine: rack.name), to: rack)
            if r.ok, let list = try? JSONSerialization.jsonObject(with: Data(r.detail.utf8)) as? [Any] { all += list }
        }
        let data = (try? JSONSerialization.data(withJSONObject: all, options: [.sortedKeys])) ?? Data("[]".utf8)
        return .done(String(decoding: data, as: UTF8.self))
    }

    /// A command from values, checked by the model (its words for a bad value: 400).
    func parsed(_ address: String, _ values: [CommandValue]) throws -> Command {
        switch Command.parse(address: address, values: values) {
        case .success(let c): return c
        case .failure(let e): throw HTTPError(.badRequest, message: e.message)
        }
    }

    /// A refusal's status, from the kind the session gave it: 404 for a name it does not have, 400 for a value it
    /// does not take, 409 when it is not in a state to do it.
    func failure(_ r: CommandReply) -> Response {
        let status: HTTPResponse.Status
        switch r.refusal ?? .conflict {
        case .notFound: status = .notFound
        case .badValue: status = .badRequest
        case .conflict: status = .conflict
        }
        return JSONResponse.error(status, r.detail)
    }
}
