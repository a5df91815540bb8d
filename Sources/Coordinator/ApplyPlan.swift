import Engine
import Foundation
import Presets
import Takes

/// Applying a preset, decided before anything is touched: from the configurations of what runs and of what is
/// wanted, the steps that bring the one to the other. Pure, so every rule of "what changes in place, what opens anew"
/// is tested without a server; Session+Apply carries the steps out on JACK in their order.
struct ApplyPlan: Equatable {
    /// What runs now.
    struct Current {
        /// The server of the preset in force (nil: no preset applied yet).
        var server: String??
        var recorder: RecorderConfig?
        var player: PlayerConfig?
        /// In-process racks by name.
        var racks: [String: RackConfig] = [:]
        /// Isolated racks by name: the rack their process runs and the maps it runs with.
        var isolated: [String: (rack: RackSection, maps: [ControlMap])] = [:]
        /// Whether the session's own patch client is open.
        var patchClient = false
    }

    /// One engine's step.
    enum Step<Config: Equatable>: Equatable {
        /// Neither runs nor is wanted, or it stays as it is.
        case keep
        /// The same client: settings, plugins, queue or gain change in place.
        case update(Config)
        /// The client or its ports change: closed, then opened anew.
        case reopen(Config)
        case open(Config)
        case close

        /// What opens (`open` or `reopen`), as `.open`, else `.keep`.
        var opening: Step {
            switch self {
            case .open(let c), .reopen(let c): return .open(c)
            case .keep, .update, .close: return .keep
            }
        }
    }

    /// A rack's step, in the order they are taken.
    enum RackStep: Equatable {
        /// An in-process rack closes (gone, or now isolated).
        case close(String)
        /// An isolated rack's process ends (gone, no longer isolated, or its maps changed: it starts anew below).
        case stop(String)
        /// An isolated rack takes its changed rack (its configuration: the ports it keeps) as a document, in its
        /// process (started anew if it cannot).
        case updateProcess(RackSection, RackConfig)
        /// The session opens a client of its own to watch and patch the graph (isolated racks alone).
        case openPatchClient
        /// An isolated rack's process starts.
        case start(RackSection)
        /// An in-process rack opens, changes in place (re-opened if its side inputs change), or re-opens.
        case open(RackConfig)
        case update(RackConfig)
        case reopen(RackConfig)
    }

    /// The server changes: everything closes first, and opens on the new server.
    var closeAll = false
    var recorder = Step<RecorderConfig>.keep
    var player = Step<PlayerConfig>.keep
    var racks: [RackStep] = []

    /// Whether nothing changes.
    var isEmpty: Bool { !closeAll && recorder == .keep && player == .keep && racks.isEmpty }

    /// The plan that brings `current` to `wanted`, whose recorder and player are `wantRecorder` and `wantPlayer`
    /// (built from its tables with the session's environment).
    init(_ current: Current, wanted: Preset, recorder wantRecorder: RecorderConfig?, player wantPlayer: PlayerConfig?) {
        var current = current
        if let server = current.server, server != wanted.session.server {
            closeAll = true
            current = Current(server: current.server, patchClient: false)
        }
        recorder = Self.step(current.recorder, wantRecorder, sameClient: { $0.sameClient(as: $1) })
        player = Self.step(current.player, wantPlayer, sameClient: { $0.sameClient(as: $1) })
        racks = Self.rackSteps(current, wanted: wanted, alone: wantRecorder == nil && wantPlayer == nil)
    }

    static func step<C: Equatable>(_ current: C?, _ want: C?, sameClient: (C, C) -> Bool) -> Step<C> {
        switch (current, want) {
        case (nil, nil): return .keep
        case (nil, let w?): return .open(w)
        case (_?, nil): return .close
        case (let c?, let w?): return !sameClient(c, w) ? .reopen(w) : c == w ? .keep : .update(w)
        }
    }

    static func rackSteps(_ current: Current, wanted: Preset, alone: Bool) -> [RackStep] {
        var out: [RackStep] = []
        let sections = Dictionary(wanted.racks.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        func isolated(_ name: String) -> Bool { sections[name].map { Session.isolates($0, in: wanted) } ?? false }
        for name in current.racks.keys.sorted() where sections[name] == nil || isolated(name) {
            out.append(.close(name))
        }
        var running = Set<String>()
        for name in current.isolated.keys.sorted() {
            guard let now = current.isolated[name], let section = sections[name], isolated(name),
                  now.maps == Session.mapsRunningIn(section, wanted.maps) else {
                out.append(.stop(name))
                continue
            }
            running.insert(name)
            if now.rack == section { continue }
            let want = RackConfig(section: section, session: wanted.session)
            if RackConfig(section: now.rack, session: wanted.session).sameClient(as: want) {
                out.append(.updateProcess(section, want))
            } else {
                out.append(.stop(name))
                running.remove(name)
            }
        }
        if !current.patchClient && alone && !wanted.racks.isEmpty
            && wanted.racks.allSatisfy({ Session.isolates($0, in: wanted) }) {
            out.append(.openPatchClient)
        }
        for section in wanted.racks {
            if isolated(section.name) {
                if !running.contains(section.name) { out.append(.start(section)) }
                continue
            }
            let want = RackConfig(section: section, session: wanted.session)
            let step = Self.step(current.racks[section.name], want, sameClient: { $0.sameClient(as: $1) })
            switch step {
            case .keep, .close: break
            case .open(let c): out.append(.open(c))
            case .update(let c): out.append(.update(c))
            case .reopen(let c): out.append(.reopen(c))
            }
        }
        return out
    }

    static func == (a: ApplyPlan, b: ApplyPlan) -> Bool {
        a.closeAll == b.closeAll && a.recorder == b.recorder && a.player == b.player && a.racks == b.racks
    }
}
