// The whole preset: which tables it has, and the checks that span them (names, starts, exits).
extension Validator {
    mutating func preset(_ root: TOMLTable) -> Preset {
        unknownKeys(root, ["session", "recorder", "player", "rack", "connect", "scene", "map", "render"], section: "")
        var p = Preset()
        if let v = root["session"] {
            if case .table(let t) = v { p.session = session(t) } else {
                problem("session", v.line, "expected a table [session], found \(v.typeName)")
            }
        }
        if let v = root["recorder"] {
            if case .table(let t) = v { p.recorder = recorder(t) } else {
                problem("recorder", v.line, "expected a table [recorder], found \(v.typeName)")
            }
        }
        if let v = root["player"] {
            if case .table(let t) = v { p.player = player(t) } else {
                problem("player", v.line, "expected a table [player], found \(v.typeName)")
            }
        }
        if let v = root["rack"] {
            if case .array(let items, _) = v {
                for item in items {
                    guard case .table(let t) = item else {
                        problem("rack", item.line, "expected [[rack]] tables, found \(item.typeName)")
                        continue
                    }
                    p.racks.append(rack(t, index: p.racks.count))
                }
            } else {
                problem("rack", v.line, "expected [[rack]] tables (an array of tables), found \(v.typeName)")
            }
        }
        if let v = root["connect"] {
            if case .array(let items, _) = v {
                for item in items {
                    guard case .table(let t) = item else {
                        problem("connect", item.line, "expected [[connect]] tables, found \(item.typeName)")
                        continue
                    }
                    if let rule = connection(t) { p.connections.append(rule) }
                }
            } else {
                problem("connect", v.line, "expected [[connect]] tables (an array of tables), found \(v.typeName)")
            }
        }
        if p.recorder == nil && p.player == nil && p.racks.isEmpty && root["recorder"] == nil && root["player"] == nil
            && root["rack"] == nil {
            problem("", nil, "a preset needs a [recorder] table, a [player] table or a [[rack]] table")
        }
        checkEngineNames(p)
        if let v = root["scene"] { p.scenes = scenes(v, preset: p) }
        if let v = root["map"] {
            p.maps = maps(v, preset: p)
            p.giveMappedRacksMIDIInputs()
        }
        if let v = root["render"] {
            if case .table(let t) = v { p.render = render(t, preset: p) } else {
                problem("render", v.line, "expected a table [render], found \(v.typeName)")
            }
        }
        if let r = p.recorder, let why = FileNameTemplate(r.template).lengthProblem(session: p.session.name, channels: r.ports) {
            problem("recorder.template", nil, why)
        }
        if let r = p.recorder, let pl = p.player, r.client == pl.client {
            problem("player.client", nil, "the recorder and the player need different client names (both '\(r.client)')")
        }
        if p.session.exitAfter == .take && p.recorder == nil {
            problem("session.exit_after", nil, "'take' needs a [recorder] table")
        }
        if p.session.exitAfter == .playback && p.player == nil {
            problem("session.exit_after", nil, "'playback' needs a [player] table")
        }
        if p.player?.start == .withRecorder {
            if let r = p.recorder {
                // A level-triggered take begins before the moment it is decided (its pre-roll), and a scheduled
                // one at a window's frame the session does not start the player on: no player can start with them.
                if r.start == .level {
                    problem("player.start", nil, "'with-recorder' cannot follow a recorder with start = \"level\" (a"
                            + " take begins its pre-roll before the trigger decides it); use start = \"immediately\","
                            + " \"armed\" or \"transport\" for the recorder, or another start for the player")
                } else if r.schedule != nil {
                    problem("player.start", nil, "'with-recorder' cannot follow a recorder with a schedule; use"
                            + " another start for the player")
                }
            } else {
                problem("player.start", nil, "'with-recorder' needs a [recorder] table")
            }
        }
        return p
    }

    /// Client and rack names must differ across the engines (each is its own JACK client).
    mutating func checkEngineNames(_ p: Preset) {
        var clients: [String: String] = [:]
        if let r = p.recorder { clients[r.client] = "the recorder" }
        if let pl = p.player, clients[pl.client] == nil { clients[pl.client] = "the player" }
        var names = Set<String>()
        for rack in p.racks {
            if !names.insert(rack.name).inserted {
                problem("rack.name", rack.line, "two racks are named '\(rack.name)'")
            }
            if let other = clients[rack.client] {
                problem("rack.client", rack.line, "rack '\(rack.name)' and \(other) need different client names (both '\(rack.client)')")
            } else {
                clients[rack.client] = "rack '\(rack.name)'"
            }
        }
    }
}
