import Foundation

/// A preset as a session manager runs it, and back.
///
/// Under NSM every JACK client a program registers carries the `client_id` the server gave it, followed by "/"
/// (API 1.1: programs with several JACK clients prepend `client_id/`): the recorder `tandem-rec` of client
/// `tandem.nABCD` is `tandem.nABCD/tandem-rec`. The project's file keeps the plain names, so a project copied into
/// another session (another `client_id`) or run by hand still reads; the prefix is added when it is opened and
/// taken off when it is saved. Connection rules that name one of the session's own clients (exact names and globs
/// starting with `CLIENT:`) follow the rename; regex rules are left as written.
///
/// Threads: pure; any thread.
public extension Preset {
    /// The preset run as NSM client `clientID` in the project folder `directory`: takes and plugin state go there,
    /// the clients carry the prefix.
    func underSessionManager(clientID: String, directory: String) -> Preset {
        var p = self
        p.session.directory = directory
        p.session.createDirectory = false
        p.renameClients { "\(clientID)/\($0)" }
        return p
    }

    /// The running preset as the project's file (in the project folder) holds it: the prefix taken off again, the
    /// directory "." and queued files and maps' preset files inside the project folder written relative to it (the
    /// loader resolves them against the file's folder), so a copied or renamed session folder still finds them.
    func outsideSessionManager(clientID: String) -> Preset {
        var p = self
        let prefix = "\(clientID)/"
        p.renameClients { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : $0 }
        let base = (p.session.directory as NSString).standardizingPath + "/"
        if var player = p.player {
            player.queue = player.queue.map { $0.hasPrefix(base) ? String($0.dropFirst(base.count)) : $0 }
            p.player = player
        }
        for (i, map) in p.maps.enumerated() {
            if case .presetFile(let files) = map.target {
                p.maps[i].target = .presetFile(files.map { $0.hasPrefix(base) ? String($0.dropFirst(base.count)) : $0 })
            }
        }
        p.session.directory = "."
        return p
    }

    private mutating func renameClients(_ rename: (String) -> String) {
        var names: [String: String] = [:]
        if let r = recorder {
            names[r.client] = rename(r.client)
            recorder?.client = rename(r.client)
        }
        if let pl = player {
            names[pl.client] = rename(pl.client)
            player?.client = rename(pl.client)
        }
        func renamed(_ pattern: PortPattern) -> PortPattern {
            switch pattern {
            case .exact(let s), .glob(let s):
                guard let colon = s.firstIndex(of: ":"), let new = names[String(s[..<colon])] else { return pattern }
                let text = new + s[colon...]
                if case .exact = pattern { return .exact(text) }
                return .glob(text)
            case .regex:
                return pattern
            }
        }
        connections = connections.map { rule in
            var r = rule
            r.from = renamed(rule.from)
            r.to = renamed(rule.to)
            return r
        }
    }
}
