import Commands
import Engine
import Foundation
import Plugins
import Presets
import Realtime

/// The routing of MIDI onto the control maps, as a value: which maps a message fires and with what, what a learn
/// takes, and what the maps remember between messages (presses). The session fires the hits (Session+Maps). Control
/// thread only.
struct MapState {
    /// One map a message fires: the map (by index in the list), `x` (the value over its range; the program number
    /// for program change), whether the value is high (64 or above), whether it is a press (a note-on, or a CC that
    /// rose to 64 or above), whether it came from a CC, and the program number.
    struct Hit: Equatable {
        var index: Int
        var x: Double
        var high: Bool
        var press: Bool
        var isCC: Bool
        var program: Int
    }

    /// A learn waiting for the next CC (see `learn`).
    var learning: ControlMap?
    /// Per map (by index): whether its CC was at 64 or above at its last message (for presses: toggles, markers).
    var pressed: [Int: Bool] = [:]
    /// Failures already announced (a map whose target is gone fails at every message of a moving controller).
    var failures: Set<String> = []
    /// The last markers maps added (frame time and label): the same message heard by several racks, some of them
    /// isolated (their processes relay their markers), adds one marker.
    var recentMarks: [String] = []

    /// Routes one MIDI message (`bytes`) from `rack`'s inputs through the learn and the maps. `again`: the same
    /// message at the same frame came from another rack already (maps of every rack skip it). Returns the map a
    /// waiting learn made of it (to add after `maps`: it fires on this message too) and the maps it fires, in order,
    /// by their index in `maps` followed by the learned one.
    mutating func route(_ bytes: [UInt8], rack: String, again: Bool, maps: [ControlMap]) -> (learned: ControlMap?,
                                                                                               hits: [Hit]) {
        guard bytes.count >= 2 else { return (nil, []) }
        let status = bytes[0] & 0xF0, channel = Int(bytes[0] & 0x0F) + 1
        let data1 = Int(bytes[1]), data2 = bytes.count > 2 ? Int(bytes[2]) : 0
        var learned: ControlMap?
        if status == 0xB0, !again, var map = learning {
            map.source = .cc(data1)
            map.channel = channel
            map.rack = rack
            learning = nil
            learned = map
        }
        var hits: [Hit] = []
        for (index, map) in (maps + (learned.map { [$0] } ?? [])).enumerated() {
            if let c = map.channel, c != channel { continue }
            if let r = map.rack, r != rack { continue }
            if map.rack == nil && again { continue }
            let x: Double
            switch (map.source, status) {
            case (.cc(let n), 0xB0) where n == data1: x = Double(data2) / 127
            case (.note(let n), 0x90) where n == data1: x = Double(data2) / 127
            case (.pitchBend, 0xE0): x = Double(data1 | data2 << 7) / 16383
            case (.program, 0xC0): x = Double(data1)
            default: continue
            }
            let isCC = status == 0xB0
            let high = data2 >= 64
            let press = !isCC || (high && pressed[index] != true)
            if isCC { pressed[index] = high }
            hits.append(Hit(index: index, x: x, high: high, press: press, isCC: isCC, program: data1))
        }
        return (learned, hits)
    }
}
