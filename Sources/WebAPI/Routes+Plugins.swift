import Commands
import Control
import Coordinator
import Engine
import Foundation
import Hummingbird
import Plugins

extension Routes {
    /// Plugins of the running chains.
    func pluginRoutes(_ api: RouterGroup<BasicRequestContext>) {
        route(api, "/api", .get, "plugins") { request, _ in
            try await query(.pluginList(engine: request.uri.queryParameters.get("engine")))
        }
        route(api, "/api", .get, "engines/:engine/plugins") { _, context in
            try await query(.pluginList(engine: try param(context, "engine")))
        }
        route(api, "/api", .get, "engines/:engine/plugins/:plugin/controls/:symbol") { _, context in
            let (e, p, s) = try names(context)
            return try await control(e, p, s)
        }
        route(api, "/api", .put, "engines/:engine/plugins/:plugin/controls/:symbol") { request, context in
            let (e, p, s) = try names(context)
            let b = try await body(request, context, ControlBody.self)
            let setting: ControlSetting
            switch b.value {
            case .number(let d): setting = .number(d)
            case .text(let t): setting = .text(t)
            }
            let r = try await run(.pluginSet(engine: e, plugin: p, symbol: s, value: setting))
            guard r.ok else { return failure(r) }
            return try await control(e, p, s)
        }
        route(api, "/api", .put, "engines/:engine/plugins/:plugin/bypass") { request, context in
            let b = try await body(request, context, BypassBody.self)
            return try await act(.pluginBypass(engine: try param(context, "engine"),
                                               plugin: try param(context, "plugin"), on: b.bypassed))
        }
        route(api, "/api", .put, "engines/:engine/mix") { request, context in
            let b = try await body(request, context, MixBody.self)
            return try await act(try parsed("/tandem/plugin/mix", [.text(try param(context, "engine")), .number(b.mix)]))
        }
        route(api, "/api", .put, "engines/:engine/gain") { request, context in
            let b = try await body(request, context, GainBody.self)
            return try await act(try parsed("/tandem/plugin/gain", [.text(try param(context, "engine")), .number(b.gain)]))
        }
        route(api, "/api", .post, "engines/:engine/plugins/:plugin/preset") { request, context in
            let b = try await body(request, context, PresetBody.self)
            return try await act(.pluginPreset(engine: try param(context, "engine"),
                                               plugin: try param(context, "plugin"), uri: b.preset))
        }
        route(api, "/api", .post, "plugins/save") { _, _ in try await act(.pluginSave) }
        route(api, "/api", .post, "engines/:engine/plugins") { request, context in
            let b = try await body(request, context, AddBody.self)
            if let at = b.at, at < 0 { throw HTTPError(.badRequest, message: "'at' \(at) is not a position (0 first)") }
            guard !b.uri.contains(","), b.name?.contains(",") != true else {
                throw HTTPError(.badRequest, message: "a plugin URI or name with a comma cannot be added")
            }
            return try await act(.pluginAdd(engine: try param(context, "engine"), spec: b.uri + (b.name.map { ",name=\($0)" } ?? ""),
                                            at: b.at))
        }
        route(api, "/api", .delete, "engines/:engine/plugins/:plugin") { _, context in
            try await act(.pluginRemove(engine: try param(context, "engine"),
                                        plugin: try param(context, "plugin")))
        }
        route(api, "/api", .post, "engines/:engine/plugins/:plugin/move") { request, context in
            let b = try await body(request, context, MoveBody.self)
            guard b.to >= 0 else { throw HTTPError(.badRequest, message: "'to' \(b.to) is not a position (0 first)") }
            return try await act(.pluginMove(engine: try param(context, "engine"),
                                             plugin: try param(context, "plugin"), to: b.to))
        }
    }

    /// Installed plugins (read here: lilv has its own lock; a long list never holds the session's loop).
    func installedPluginRoutes(_ api: RouterGroup<BasicRequestContext>) {
        route(api, "/api", .get, "installed-plugins") { request, _ in
            let filter = request.uri.queryParameters.get("filter")?.lowercased().trimmingCharacters(in: .whitespaces)
            let all = await InstalledPlugins.shared.all()
            guard let filter, !filter.isEmpty else { return JSONResponse.encode(all) }
            return JSONResponse.encode(all.filter { $0.uri.lowercased().contains(filter) || $0.name.lowercased().contains(filter) })
        }
        route(api, "/api", .get, "installed-plugins/:uri") { _, context in
            let uri = try param(context, "uri")
            guard let info = await InstalledPlugins.shared.all().first(where: { $0.uri == uri }) else {
                throw HTTPError(.notFound, message: "no plugin <\(uri)> is installed")
            }
            return JSONResponse.encode(info)
        }
    }

    /// A control as the API shows it: its number, and in its unit.
    func control(_ engine: String, _ plugin: String, _ symbol: String) async throws -> Response {
        if let target = try await server.gateway.run({ session in IsolatedRackTarget(session, engine) }) {
            // From the rack's own process: its plugin list holds the value and its text.
            let r = await Self.relay(.pluginList(engine: engine), to: target)
            guard r.ok else { return failure(r) }
            let list = (try? JSONSerialization.jsonObject(with: Data(r.detail.utf8)) as? [[String: Any]]) ?? []
            guard let p = list.first(where: { $0["name"] as? String == plugin }) else {
                return failure(.refused("the \(engine) has no plugin '\(plugin)'", .notFound))
            }
            guard let c = (p["controls"] as? [[String: Any]])?.first(where: { $0["symbol"] as? String == symbol }),
                  let value = c["value"] as? Double else {
                return failure(.refused("plugin \(plugin) has no control '\(symbol)'", .notFound))
            }
            return JSONResponse.encode(ControlValue(engine: engine, plugin: plugin, symbol: symbol, value: value,
                                                    text: c["text"] as? String ?? "\(value)"))
        }
        let result = try await server.gateway.run { session -> Result<ControlValue, PluginError> in
            guard session.hasEngine(engine) else {
                return .failure(PluginError(.unknownPlugin, plugin: plugin, "unknown engine '\(engine)' (recorder, player or a rack's name)"))
            }
            guard let chain = session.chain(ChainEngine(rawValue: engine)) else {
                return .failure(PluginError(.unknownPlugin, plugin: plugin, "the \(engine) has no plugin chain"))
            }
            do throws(PluginError) {
                let v = try chain.value(plugin, symbol)
                return .success(ControlValue(engine: engine, plugin: plugin, symbol: symbol, value: Double(v),
                                             text: try chain.formatted(plugin, symbol, v)))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let v): return JSONResponse.encode(v)
        case .failure(let e): return failure(.refused(e.description, e.code == .unknownPlugin || e.code == .unknownControl ? .notFound : .badValue))
        }
    }

    func names(_ context: BasicRequestContext) throws -> (String, String, String) {
        (try param(context, "engine"), try param(context, "plugin"), try param(context, "symbol"))
    }
}
