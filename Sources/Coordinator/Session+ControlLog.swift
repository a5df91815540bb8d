import Commands
import Engine
import Foundation
import Plugins
import Takes

// The take's control log (TakeReport.controlLog): every change a chain of this session applied while a take runs,
// as the command that makes it, at the input frame of the cycle that applied it. The process threads note each change
// at the cycle that applies it (`ChainState.changes`, exact to the cycle whatever the surface: OSC, HTTP, MIDI maps,
// presets); the loop reads them here every turn and hands them to the recorder, which maps the cycle's JACK frame time
// to the take's frames as it maps markers. An isolated rack's process relays its own (`controlRelay`).
extension Session {
    /// Reads what every chain in this process applied since the last turn and enters it in the running take's log.
    /// Control thread, every turn (cheap: an atomic load per chain when nothing changed).
    func tickControlLog() {
        for engine in chainEngines {
            guard let c = chain(engine) else { continue }
            let id = ObjectIdentifier(c)
            for change in c.drainChanges() {
                guard let entry = controlEntry(change, engine: engine.rawValue, chain: id, sampleRate: c.sampleRate)
                else { continue }
                deliverControl(entry, frameTime: UInt32(truncatingIfNeeded: change.clock))
            }
            let dropped = c.changesDropped
            if dropped > controlLog.dropped[id] ?? 0 {
                recorder?.logControlDropped(dropped - (controlLog.dropped[id] ?? 0))
                controlLog.dropped[id] = dropped
            }
        }
        if controlLog.presets.count > 16 || controlLog.dropped.count > 64 {
            // Chains that are gone never start or drop again.
            let live = Set(chainEngines.compactMap { chain($0).map(ObjectIdentifier.init) })
            controlLog.presets = controlLog.presets.filter { live.contains($0.key) }
            controlLog.dropped = controlLog.dropped.filter { live.contains($0.key) }
        }
    }

    /// The command that makes `change` on `engine`'s chain (nil: nothing to log: a chain's first cycle that no
    /// preset load waits for).
    func controlEntry(_ change: ChainChange, engine: String, chain: ObjectIdentifier, sampleRate: Int) -> TimedCommand? {
        let sources = controlLog.sources
        let ramp = PluginChain.rampMS(frames: change.rampFrames, sampleRate: sampleRate)
        switch change.what {
        case .control(let plugin, let symbol, let value):
            return .set(0, engine: engine, plugin: plugin, symbol: symbol, value: value, rampMS: ramp,
                        source: sources[ControlLogState.key(engine, plugin, symbol)])
        case .bypass(let plugin, let on):
            return .bypass(0, engine: engine, plugin: plugin, on: on, rampMS: ramp,
                           source: sources[ControlLogState.key(engine, plugin, "bypass")])
        case .mix(let m):
            return .mix(0, engine: engine, mix: m, rampMS: ramp, source: sources[ControlLogState.key(engine, "mix")])
        case .gain(let dB):
            return .gain(0, engine: engine, dB: dB, rampMS: ramp, source: sources[ControlLogState.key(engine, "gain")])
        case .started:
            return controlLog.presets.removeValue(forKey: chain)
        }
    }

    /// Every chain of this process as it stands now (what a take's control log starts from).
    func chainSnapshot() -> [String: ControlLog.ChainStart] {
        var out: [String: ControlLog.ChainStart] = [:]
        for engine in chainEngines {
            guard let c = chain(engine), !c.isEmpty else { continue }
            out[engine.rawValue] = .init(plugins: c.currentSpecs, mix: c.mix, gainDB: c.gainDB)
        }
        return out
    }

    /// Into the running take's log, or (in an isolated rack's process) to the session that records.
    func deliverControl(_ entry: TimedCommand, frameTime: UInt32) {
        if let r = recorder {
            r.logControl(entry, frameTime: frameTime)
        } else if let relay = controlRelay {
            relay(entry, frameTime)
        }
    }

    /// A control change relayed by an isolated rack's process: "FRAMETIME SOURCE ADDRESS ARGS..." (see
    /// `controlRelayText`).
    func relayedControl(_ text: String) {
        guard let words = CommandValue.words(text), words.count >= 3,
              case .number(let t) = words[0], t >= 0, t < 4_294_967_296 else { return }
        let source = words[1].name
        let entry = TimedCommand(frame: 0, address: words[2].name, args: Array(words.dropFirst(3)),
                                 source: source == "-" ? nil : source)
        recorder?.logControl(entry, frameTime: UInt32(t))
    }

    /// How an isolated rack's process relays a control change (read back by `relayedControl`).
    public static func controlRelayText(_ entry: TimedCommand, frameTime: UInt32) -> String {
        ([String(frameTime), CommandValue.text(entry.source ?? "-").word, entry.address] + entry.args.map(\.word))
            .joined(separator: " ")
    }
}
