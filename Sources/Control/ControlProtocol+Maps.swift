import Engine
import Foundation
import Presets

/// Control maps over OSC (docs/CONTROL.md): learn the next CC, add a map in its text form, list and clear them. The
/// maps run in the session (see `Session+Maps`), on the MIDI of its in-process racks; an isolated rack's maps come
/// from the preset and run in its own process.
extension ControlProtocol {
    static let mapCommands: [String: String] = [
        "/tandem/map/learn": "[sss] [f f] [s]", "/tandem/map/add": "s", "/tandem/map/list": "", "/tandem/map/clear": "[f]",
    ]

    /// The reply to a `/tandem/map/...` message, or nil for another address.
    func handleMap(_ m: OSCMessage) -> [OSCValue]? {
        func ok(_ detail: String = "") -> [OSCValue] { [.string("ok"), .string(m.path), .string(detail)] }
        func error(_ why: String) -> [OSCValue] { [.string("error"), .string(m.path), .string(why)] }
        switch m.path {
        case "/tandem/map/learn":
            // ENGINE PLUGIN SYMBOL [MIN MAX] [CURVE]; none: cancel a waiting learn.
            let usage = "/tandem/map/learn takes ENGINE PLUGIN SYMBOL, optionally MIN MAX (numbers) and a CURVE "
                + "(linear, log, exp); without arguments it cancels a waiting learn"
            if m.arguments.isEmpty {
                return session.cancelLearn() ? ok("learn cancelled") : error("no learn is waiting")
            }
            guard [3, 4, 5, 6].contains(m.arguments.count) else { return error(usage) }
            let names = m.arguments.prefix(3).map { $0.string ?? $0.description }
            var map = ControlMap(source: .cc(0), target: .control(engine: names[0], plugin: names[1], symbol: names[2]))
            var rest = Array(m.arguments.dropFirst(3))
            if let last = rest.last, let word = last.string {
                guard let curve = ControlMap.Curve(rawValue: word) else { return error(usage) }
                map.curve = curve
                rest.removeLast()
            }
            if !rest.isEmpty {
                guard rest.count == 2, let lo = rest[0].number, let hi = rest[1].number,
                      ControlMap.values.contains(lo), ControlMap.values.contains(hi) else {
                    return error(usage + "; MIN and MAX from -1e9 to 1e9")
                }
                (map.minimum, map.maximum) = (lo, hi)
            }
            if let why = map.problem ?? targetProblem(map) { return error(why) }
            session.learn(map)
            return ok("waiting for the next CC on a rack's MIDI input for \(names.joined(separator: " "))")
        case "/tandem/map/add":
            guard m.arguments.count == 1, let text = m.arguments[0].string else {
                return error("/tandem/map/add takes one map in its text form, e.g. \"cc 1 7 -> rack:amp:gain -40..0\"")
            }
            switch ControlMap.parse(text) {
            case .failure(let why): return error(why.description)
            case .success(var map):
                if case .presetFile(let files) = map.target {
                    var resolved: [String] = []
                    for f in files {
                        switch inside(f) {
                        case .success(let p): resolved.append(p)
                        case .failure(let why): return error(why.description)
                        }
                    }
                    map.target = .presetFile(resolved)
                }
                if let why = targetProblem(map) { return error(why) }
                return ok("map \(session.addMap(map)): \(map)")
            }
        case "/tandem/map/list":
            guard m.arguments.isEmpty else { return error("/tandem/map/list takes no arguments") }
            return ok(introspectionJSON(MapList(maps: session.maps.enumerated().map { .init(index: $0, map: $1.description) },
                                                learning: session.learning?.description)))
        case "/tandem/map/clear":
            guard m.arguments.count <= 1 else { return error("/tandem/map/clear takes an optional INDEX (see /tandem/map/list)") }
            guard let a = m.arguments.first else {
                let n = session.maps.count
                session.clearMaps()
                return ok("\(n) map(s) cleared")
            }
            guard let v = a.number, v.isFinite, v >= 0, v < Double(session.maps.count), v == v.rounded() else {
                return error("no map \(a.description) (there are \(session.maps.count); see /tandem/map/list)")
            }
            session.clearMaps(Int(v))
            return ok("map \(Int(v)) cleared")
        default:
            return nil
        }
    }

    /// What the session cannot reach for a map's target (nil: it can): an unknown engine, a rack running isolated,
    /// a plugin or control not in the chain, a rack named as the source that is not in this process.
    func targetProblem(_ map: ControlMap) -> String? {
        if let r = map.rack, session.racks[r] == nil {
            return session.supervisors[r] != nil
                ? "rack '\(r)' runs isolated: its MIDI is heard in its own process (maps for it go in the preset's [[map]])"
                : "no rack '\(r)' in this session"
        }
        if session.racks.isEmpty { return "this session has no rack in this process: maps listen to a rack's MIDI inputs" }
        if case .marker = map.target, session.recorder == nil { return "this session has no recorder (a marker goes into a take)" }
        guard let (e, plugin) = map.plugin else { return nil }
        guard session.hasEngine(e) else { return "unknown engine '\(e)' (recorder, player or a rack's name)" }
        if session.supervisors[e] != nil && session.racks[e] == nil {
            return "rack '\(e)' runs isolated: its controls are set in its own process (maps for it go in the preset's [[map]])"
        }
        guard let chain = session.chain(ChainEngine(rawValue: e)) else { return "the \(e) has no plugin chain" }
        do {
            if case .control(_, _, let symbol) = map.target { _ = try chain.value(plugin, symbol) } else {
                _ = try chain.isBypassed(plugin)
            }
        } catch {
            return "\(error)"
        }
        return nil
    }
}

/// The reply to `/tandem/map/list`.
struct MapList: Encodable {
    struct Entry: Encodable {
        let index: Int
        let map: String
    }
    let maps: [Entry]
    /// The map a learn waits to complete (its source is filled in by the CC that comes).
    let learning: String?
}
