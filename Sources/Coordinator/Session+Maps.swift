import Commands
import Engine
import Foundation
import Jack
import Plugins
import Presets
import Realtime

// Control maps (docs/PRESETS.md "Control maps"): the racks' process callbacks queue the channel-voice messages maps
// use (CC, pitch bend, program change, note-on) into a small ring each (`RackMIDI.controls`); every pass of the
// control loop drains them here, in frame order, and applies each map through the same paths as the control
// protocol (`setPluginControl`, `setPluginBypass`, `loadPluginPreset`, `apply`, `mark`), so every value reaches
// subscribers as a `controlChanged` event. A value so set reaches the plugin at the next cycle after the pass (at
// most one pass, 20 ms, plus a period after the message); a marker lands on the message's own frame.
extension Session {
    /// Replaces the maps (a preset applied). Control thread.
    func setMaps(_ list: [ControlMap]) {
        guard list != maps else { return }
        maps = list
        mapState.pressed = [:]
        mapState.failures = []
    }

    /// Waits for the next CC on any in-process rack's MIDI inputs and binds it (its channel and that rack) to
    /// `target`'s control, over `minimum...maximum` (nil: the port's range) on `curve`. A learn already waiting is
    /// replaced.
    public func learn(_ target: ControlMap) {
        mapState.learning = target
    }

    /// The map a learn waits to complete, if any.
    public var learning: ControlMap? { mapState.learning }

    /// Cancels a waiting learn; returns whether one was waiting.
    @discardableResult
    public func cancelLearn() -> Bool {
        defer { mapState.learning = nil }
        return mapState.learning != nil
    }

    /// Adds a map (over OSC); returns its index.
    @discardableResult
    public func addMap(_ map: ControlMap) -> Int {
        maps.append(map)
        events.append(.mapAdded(index: maps.count - 1, map: map.description))
        return maps.count - 1
    }

    /// Removes the map at `index` (nil: every map and a waiting learn); false when there is no such map.
    @discardableResult
    public func clearMaps(_ index: Int? = nil) -> Bool {
        guard let index else {
            maps.removeAll()
            mapState = MapState()
            return true
        }
        guard maps.indices.contains(index) else { return false }
        maps.remove(at: index)
        mapState.pressed = [:]
        return true
    }

    /// Drains every in-process rack's map messages and applies them in frame order. Racks queue nothing while the
    /// session has no map and no learn waiting.
    func tickMaps() {
        let listen = !maps.isEmpty || mapState.learning != nil
        var messages: [(message: MIDIRingEvent, rack: String)] = []
        for name in racks.keys.sorted() {
            guard let rack = racks[name] else { continue }
            rack.listenForMaps(listen)
            let ring = rack.mapMessages
            while let e = ring.peek() {
                ring.drop()
                messages.append((e, name))
            }
        }
        guard !messages.isEmpty else { return }
        // Frame times wrap: ordered by their distance from the first.
        let base = UInt32(truncatingIfNeeded: messages[0].message.position)
        let ordered = messages.enumerated().sorted { a, b in
            let da = Int32(bitPattern: UInt32(truncatingIfNeeded: a.element.message.position) &- base)
            let db = Int32(bitPattern: UInt32(truncatingIfNeeded: b.element.message.position) &- base)
            return da != db ? da < db : a.offset < b.offset
        }
        var presetFile: String?
        // One source patched into several racks: the maps that hear every rack take each message once.
        var heard = Set<[Int]>()
        for (_, m) in ordered {
            let key = [Int(m.message.position)] + m.message.bytes.map(Int.init)
            let again = !heard.insert(key).inserted
            if let file = handleMapMessage(m.message, rack: m.rack, again: again) { presetFile = file }
        }
        // A preset file last: applying it may replace the racks the messages came from.
        if let presetFile { applyPresetFile(presetFile) }
    }

    /// One message through the learn and the maps; returns a preset file a map asks for (applied after the pass).
    /// `again`: the same message at the same frame came from another rack already (maps of every rack skip it).
    func handleMapMessage(_ e: MIDIRingEvent, rack: String, again: Bool = false) -> String? {
        let (learned, hits) = mapState.route(e.bytes, rack: rack, again: again, maps: maps)
        if let learned {
            addMap(learned)
            handIsolatedRacksTheirMaps()
        }
        let current = maps
        var presetFile: String?
        for h in hits where !firesInItsOwnProcess(current[h.index], from: rack) {
            if let file = fire(current[h.index], x: h.x, high: h.high, press: h.press, isCC: h.isCC, program: h.program,
                                frameTime: UInt32(truncatingIfNeeded: e.position)) {
                presetFile = file
            }
        }
        return presetFile
    }

    /// Whether `map` drives an isolated rack's plugins and runs in that rack's process too (`mapsRunningIn`: no
    /// `rack` key, or that rack's), and the MIDI that reached in-process rack `rack` reaches that rack as well (one
    /// source patched into both): its process fires it then, and the session does not fire it a second time (a
    /// toggle would flip back).
    func firesInItsOwnProcess(_ map: ControlMap, from rack: String) -> Bool {
        guard let e = map.plugin?.engine, racks[e] == nil, let s = supervisors[e],
              Self.mapsRunningIn(s.rack, maps).contains(map), let c = patchClient, let here = racks[rack] else { return false }
        let sources = Set(here.midiInputNames.flatMap { c.connections(of: $0) })
        guard !sources.isEmpty else { return false }
        let theirs = c.ports(matching: "^" + NSRegularExpression.escapedPattern(for: s.rack.client) + ":", direction: .input,
                             type: .midi)
        return theirs.contains { c.connections(of: $0).contains(where: sources.contains) }
    }

    /// Does what one map says for one message (`x`: the value over its range, the program number for program
    /// change), as a command of the command model (`execute`, the same path as OSC and HTTP; the value is clamped to
    /// the control's range, as a map's scaling may take it a hair past an end). Returns a preset file to apply.
    private func fire(_ map: ControlMap, x: Double, high: Bool, press: Bool, isCC: Bool, program: Int,
                       frameTime: UInt32) -> String? {
        let context = CommandContext(source: "midi", clamp: true, frameTime: frameTime)
        var command: Command?
        switch map.target {
        case .control(let e, let plugin, let symbol):
            let range = controlRange(ChainEngine(rawValue: e), plugin: plugin, symbol: symbol)
            let value = map.value(x, lo: map.minimum ?? range.lowerBound, hi: map.maximum ?? range.upperBound)
            command = .pluginSet(engine: e, plugin: plugin, symbol: symbol, value: .number(value))
        case .bypass(let e, let plugin, let toggle):
            if toggle || !isCC {
                guard press else { break }
                // As the chain has it now (an isolated rack's process is asked).
                let now = execute(.pluginBypass(engine: e, plugin: plugin, on: nil), context: context)
                guard now.ok else {
                    failOnce(map, now.detail)
                    break
                }
                command = .pluginBypass(engine: e, plugin: plugin, on: now.detail != "1")
            } else {
                command = .pluginBypass(engine: e, plugin: plugin, on: high)
            }
        case .pluginPreset(let e, let plugin, let presets):
            let list = presets.isEmpty ? pluginPresets(ChainEngine(rawValue: e), plugin: plugin) : presets
            guard list.indices.contains(program) else {
                events.append(.mapFailed("\(map): program \(program) has no preset (\(list.count) listed, programs 0 to "
                                         + "\(max(0, list.count - 1)))"))
                break
            }
            let reply = execute(.pluginPreset(engine: e, plugin: plugin, uri: list[program]), context: context)
            if !reply.ok { events.append(.mapFailed("\(map): \(reply.detail)")) }
        case .presetFile(let files):
            guard files.indices.contains(program) else {
                events.append(.mapFailed("\(map): program \(program) has no preset file (\(files.count) listed)"))
                break
            }
            return files[program]
        case .marker(let label):
            guard press else { break }
            if recorder == nil, let relay = markRelay {
                relay(label, frameTime)   // an isolated rack's process: the session's recorder marks it
                break
            }
            let reply = execute(.recordMark(label: label), context: context)
            if !reply.ok { events.append(.mapFailed("\(map): \(reply.detail)")) }
        case .scene(let names):
            // Program N: the N-th listed (or, none listed, the N-th of the session's); a press: the first listed.
            let list = names.isEmpty ? sceneState.book.names : names
            if map.source == .program {
                let index = program
                guard list.indices.contains(index) else {
                    events.append(.mapFailed("\(map): program \(program) has no scene (\(list.count) listed, programs 0 to "
                                             + "\(max(0, list.count - 1)))"))
                    break
                }
                command = .sceneRecall(name: list[index], rampMS: nil)
            } else if press, let first = list.first {
                command = .sceneRecall(name: first, rampMS: nil)
            }
        case .morph(let from, let to):
            command = .sceneMorph(from: from, to: to, position: min(1, max(0, x.isFinite ? x : 0)))
        }
        if let command {
            let reply = execute(command, context: context)
            if !reply.ok { failOnce(map, reply.detail) }
        }
        return nil
    }

    /// A marker a map asks for at JACK frame time `frameTime`, here or relayed from an isolated rack's process; the
    /// same one twice (one message heard by several racks) is added once. False when no take runs.
    @discardableResult
    public func markFromMap(label: String, frameTime: UInt32) -> Bool {
        let key = "\(frameTime) \(label)"
        if mapState.recentMarks.contains(key) { return true }
        guard let r = recorder, r.mark(label: label, source: "midi", frameTime: frameTime) != nil else { return false }
        mapState.recentMarks = Array((mapState.recentMarks + [key]).suffix(64))
        return true
    }

    /// A control's range, from the plugin's description (0...1 when it says none).
    func controlRange(_ engine: ChainEngine, plugin: String, symbol: String) -> ClosedRange<Double> {
        guard let uri = chainSpecs(engine).first(where: { $0.name == plugin })?.uri,
              let port = PluginHost.shared.plugin(uri)?.ports.first(where: {
                  $0.kind == .control && $0.isInput && $0.symbol == symbol
              }) else { return 0...1 }
        let lo = Double(port.minimum ?? 0), hi = Double(port.maximum ?? 1)
        return lo <= hi ? lo...hi : hi...lo
    }

    /// A plugin's LV2 presets in the order `/tandem/plugin/list` shows them.
    func pluginPresets(_ engine: ChainEngine, plugin: String) -> [String] {
        guard let uri = chainSpecs(engine).first(where: { $0.name == plugin })?.uri else { return [] }
        return (PluginHost.shared.plugin(uri)?.presets ?? []).map(\.uri)
    }

    /// A map whose target is missing (an engine or plugin gone since): said once per map and reason, not at every
    /// message of a moving controller.
    private func failOnce(_ map: ControlMap, _ why: String) {
        let text = "\(map): \(why)"
        guard mapState.failures.insert(text).inserted else { return }
        events.append(.mapFailed(text))
    }

    /// Applies a Tandem preset file by difference, as `/tandem/preset/apply` does; its maps replace the session's
    /// only when it has some.
    func applyPresetFile(_ path: String) {
        let (loaded, problems) = PresetLoader.load(path: path)
        guard var p = loaded else {
            events.append(.mapFailed("preset file \(path): " + problems.map(\.description).joined(separator: "; ")))
            return
        }
        p.session.server = preset?.session.server ?? p.session.server
        do {
            let report = try apply(p, keepingMaps: true)
            logger.info("preset applied by a control map", metadata: ["preset": "\(path)", "changes": "\(report)"])
        } catch {
            events.append(.mapFailed("preset file \(path): \(error.message)"))
        }
    }
}
