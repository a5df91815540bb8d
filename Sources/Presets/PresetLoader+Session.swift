import Foundation

// `[session]` (docs/PRESETS.md).
extension Validator {
    mutating func session(_ t: TOMLTable) -> SessionSection {
        let s = "session"
        unknownKeys(t, ["name", "server", "directory", "create_directory", "on_server_loss", "on_disk_error", "on_manual_disconnect",
                        "control_port", "metrics_port", "http", "http_origins", "restore_plugins", "save_plugins", "server_wait", "on_plugin_error",
                        "exit_after", "tempo", "meter", "loudness"], section: s)
        var out = SessionSection()
        out.loudness = bool(t, "loudness", s) ?? false
        out.tempo = number(t, "tempo", s, SessionSection.tempos, unit: " beats per minute")
        if let (text, line) = string(t, "meter", s) {
            if let m = SessionSection.Meter(text) { out.meter = m } else {
                problem("session.meter", line, "'\(text)' is not a meter (beats/unit, e.g. \"4/4\", \"6/8\")")
            }
        }
        if let (name, line) = string(t, "name", s) {
            if let why = Limits.nameProblem(name, what: "the session name", bytes: Limits.sessionNameBytes) {
                problem("session.name", line, why)
            }
            out.name = name
        }
        if let (server, line) = string(t, "server", s) {
            if server.isEmpty { problem("session.server", line, "must not be empty (leave it out for the default server)") }
            else if let why = Limits.nameProblem(server, what: "the server name", bytes: Limits.serverNameBytes) {
                problem("session.server", line, why)
            }
            out.server = server
        }
        out.createDirectory = bool(t, "create_directory", s) ?? false
        if let (dir, line) = string(t, "directory", s) {
            let resolved = path(dir)
            var isDir: ObjCBool = false
            if !FileManager.default.fileExists(atPath: resolved, isDirectory: &isDir) {
                if out.createDirectory {
                    var ancestor = (resolved as NSString).deletingLastPathComponent
                    while !ancestor.isEmpty && ancestor != "/" && !FileManager.default.fileExists(atPath: ancestor) {
                        ancestor = (ancestor as NSString).deletingLastPathComponent
                    }
                    if let why = Self.cannotWrite(in: ancestor.isEmpty ? "/" : ancestor) {
                        problem("session.directory", line, "'\(resolved)' cannot be created in '\(ancestor)': \(why)")
                    }
                } else {
                    problem("session.directory", line, "'\(resolved)' does not exist (create it, or set create_directory = true)")
                }
            } else if !isDir.boolValue {
                problem("session.directory", line, "'\(resolved)' is not a directory")
            } else if let why = Self.cannotWrite(in: resolved) {
                problem("session.directory", line, "'\(resolved)' cannot hold takes: \(why)")
            }
            out.directory = resolved
        } else {
            out.directory = base
        }
        out.onServerLoss = choice(t, "on_server_loss", s, ServerLossPolicy.self) ?? .resume
        out.onDiskError = choice(t, "on_disk_error", s, DiskErrorPolicy.self) ?? .stop
        out.onManualDisconnect = choice(t, "on_manual_disconnect", s, DisconnectPolicy.self) ?? .respect
        if case .string("auto", _)? = t["control_port"] {
            out.controlPortAuto = true
        } else {
            out.controlPort = integer(t, "control_port", s, Limits.controlPort)
        }
        out.metricsPort = integer(t, "metrics_port", s, Limits.controlPort)
        if let (text, line) = string(t, "http", s) {
            if let address = HTTPAddress(text) { out.http = address } else {
                problem("session.http", line, "'\(text)' is not \(HTTPAddress.form)")
            }
        }
        if let (origins, line) = strings(t, "http_origins", s) {
            for o in origins where !HTTPAddress.isOrigin(o) {
                problem("session.http_origins", line, "'\(o)' is not an origin (scheme://host[:port], e.g. \"http://studio.local:8080\")")
            }
            if out.http == nil && problems.allSatisfy({ $0.key != "session.http" }) {
                problem("session.http_origins", line, "origins need the HTTP API: set session.http too")
            }
            out.httpOrigins = origins
        }
        out.restorePlugins = bool(t, "restore_plugins", s) ?? true
        out.savePlugins = bool(t, "save_plugins", s) ?? true
        out.serverWaitSeconds = number(t, "server_wait", s, Limits.serverWaitSeconds, unit: " seconds") ?? 60
        if t["server_wait"] != nil && out.onServerLoss == .stop {
            problem("session.server_wait", t.keyLines["server_wait"], "waiting for the server needs on_server_loss = \"resume\"")
        }
        out.onPluginError = choice(t, "on_plugin_error", s, PluginErrorPolicy.self) ?? .fail
        out.exitAfter = choice(t, "exit_after", s, SessionExit.self)
        return out
    }

    /// Why no file can be made in `directory` (nil: one can): `WritableFolder.problem`.
    static func cannotWrite(in directory: String) -> String? { WritableFolder.problem(directory) }
}
