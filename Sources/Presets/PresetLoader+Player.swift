import Foundation
import SoundFile

// `[player]` (docs/PRESETS.md).
extension Validator {
    mutating func player(_ t: TOMLTable) -> PlayerSection {
        let s = "player"
        unknownKeys(t, ["client", "channels", "ports", "queue", "loop", "gain", "map", "quality", "seek", "seek_frame",
                        "start", "start_at", "tail", "ring", "plugins", "midi_ports", "loudness", "scene_markers"],
                    section: s)
        var p = PlayerSection()
        p.client = client(t, s, default: p.client)
        p.ports = ports(t, s, prefix: "out", default: p.ports)
        p.midiPorts = midiPorts(t, s, audio: p.ports)
        if let (files, line) = strings(t, "queue", s) {
            p.queue = files.map { path($0) }
            for f in p.queue {
                var isDir: ObjCBool = false
                if !FileManager.default.fileExists(atPath: f, isDirectory: &isDir) {
                    problem("player.queue", line, "missing file '\(f)'")
                } else if isDir.boolValue {
                    problem("player.queue", line, "'\(f)' is a directory, not an audio file")
                }
            }
        }
        p.loop = choice(t, "loop", s, LoopMode.self) ?? .none
        p.gainDB = number(t, "gain", s, Limits.gainDB, unit: " dB") ?? 0
        if let v = t["map"] {
            if case .array(let items, let line) = v {
                var map: [Int] = []
                for item in items {
                    if case .integer(let i, _) = item, (0...256).contains(i) { map.append(i) } else {
                        problem("player.map", item.line, "map entries are file channels 1 to 256, or 0 for silence")
                    }
                }
                if map.count == items.count {
                    if map.count != p.ports.count {
                        problem("player.map", line, "\(map.count) entries for \(p.ports.count) ports (one per port)")
                    }
                    p.channelMap = map
                }
            } else {
                problem("player.map", v.line, "expected an array of integers, found \(v.typeName)")
            }
        }
        p.quality = choice(t, "quality", s, ResampleQuality.self) ?? .high
        p.seekSeconds = number(t, "seek", s, Limits.seekSeconds, unit: " seconds") ?? 0
        p.seekFrame = integer(t, "seek_frame", s, Limits.seekFrames)
        if t["seek"] != nil && t["seek_frame"] != nil {
            problem("player.seek_frame", t.keyLines["seek_frame"], "give either seek or seek_frame")
        }
        p.start = choice(t, "start", s, PlayerStart.self) ?? .immediately
        if let (at, line) = string(t, "start_at", s) {
            if Self.clock(at) == nil { problem("player.start_at", line, "'\(at)' is not a time of day (HH:MM or HH:MM:SS)") }
            if p.start != .immediately {
                problem("player.start_at", line, "a start time needs start = \"immediately\" (the player is cued until then)")
            }
            p.startAt = at
        }
        p.tailSeconds = number(t, "tail", s, Limits.tailSeconds, unit: " seconds") ?? 2
        p.ringSeconds = number(t, "ring", s, Limits.playerRingSeconds, unit: " seconds") ?? 2
        (p.plugins, p.pluginSources) = plugins(t, s)
        switch bool(t, "loudness", s) {
        case true?: p.loudness = true
        case false?: p.loudnessOff = true
        case nil: break
        }
        p.sceneMarkers = bool(t, "scene_markers", s) ?? false
        return p
    }
}
