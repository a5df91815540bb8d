import Testing
import Commands
import Presets

/// The command model, without a session: every command parses the same from OSC-style values and from a command
/// line's words, goes back to the values it came from, and every out-of-range number is refused in one set of words.
@Suite struct CommandModelTests {
    /// A valid argument list for a spec: names, numbers in range, flags, indexes.
    static func sample(_ spec: CommandSpec) -> [CommandValue] {
        if spec.address == "/tandem/map/learn" { return [.text("fx"), .text("amp"), .text("gain"), .number(-40), .number(0), .text("log")] }
        if spec.address == "/tandem/scene/save" { return [.text("verse"), .text("fx/amp/gain"), .text("fx/@mix")] }
        return spec.parameters.map { p -> CommandValue in
            switch p.kind {
            case .name: return .text(p.name.lowercased())
            case .number(let r, _): return .number(max(r.lowerBound, min(r.upperBound, 0.5)))
            case .value: return .number(-6)
            case .flag: return .number(1)
            case .index: return .number(0)
            }
        }
    }

    @Test func everyCommandParsesAlikeFromValuesAndWordsAndGoesBack() throws {
        #expect(CommandSpec.all.count == Set(CommandSpec.all.map(\.address)).count, "one spec per address")
        for spec in CommandSpec.all {
            for values in [Self.sample(spec), Array(Self.sample(spec).prefix(spec.parameters.filter { !$0.optional }.count))] {
                let fromValues = try Command.parse(address: spec.address, values: values).get()
                let words = spec.words.split(separator: " ").map(String.init) + values.map(\.name)
                let fromWords = try Command.parse(words: words).get()
                #expect(fromValues == fromWords, "\(spec.address): \(fromValues) vs \(fromWords)")
                #expect(fromValues.address == spec.address)
                #expect(try Command.parse(address: spec.address, values: fromValues.values).get() == fromValues,
                        "\(spec.address) round trip")
            }
        }
    }

    @Test func anOutOfRangeNumberIsRefusedInOneSetOfWords() throws {
        var checked = 0
        for spec in CommandSpec.all where spec.address != "/tandem/map/learn" {
            for (i, p) in spec.parameters.enumerated() {
                guard case .number(let range, let unit) = p.kind else { continue }
                for bad in [range.upperBound + 1, range.lowerBound - 1, 1e300] {
                    var values = Self.sample(spec)
                    values[i] = .number(bad)
                    let words = spec.words.split(separator: " ").map(String.init) + values.map(\.name)
                    let a = Command.parse(address: spec.address, values: values)
                    let b = Command.parse(words: words)
                    guard case .failure(let ea) = a, case .failure(let eb) = b else {
                        Issue.record("\(spec.address) \(bad) accepted")
                        continue
                    }
                    #expect(ea == eb, "\(spec.address): '\(ea)' vs '\(eb)'")
                    #expect(ea.message == "\(p.name.lowercased()) \(Limits.number(bad)) is out of range (\(Limits.describe(range, unit: unit)))",
                            "\(ea)")
                    checked += 1
                }
                for junk: CommandValue in [.number(.nan), .number(.infinity), .text("soon")] {
                    var values = Self.sample(spec)
                    values[i] = junk
                    guard case .failure(let e) = Command.parse(address: spec.address, values: values) else {
                        Issue.record("\(spec.address) \(junk) accepted")
                        continue
                    }
                    #expect(e.message.hasPrefix(spec.usage), "\(e)")
                }
            }
        }
        #expect(checked >= 12)
    }

    @Test func countsFlagsIndexesAndUnknownCommands() throws {
        let refuse: [(String, [CommandValue], String)] = [
            ("/tandem/record/start", [.number(1)], "/tandem/record/start takes no arguments; got 1"),
            ("/tandem/plugin/set", [.text("fx"), .text("amp")], "/tandem/plugin/set takes ENGINE (recorder, player or a rack name), PLUGIN"),
            ("/tandem/plugin/set", [.text("fx"), .text("amp"), .text("gain"), .number(.nan)], "VALUE (in the control's range, a number"),
            ("/tandem/plugin/bypass", [.text("fx"), .text("amp"), .number(2)], "ON (1 or 0)"),
            ("/tandem/map/clear", [.number(1.5)], "index 1.5 is not a whole number from 0"),
            ("/tandem/play/load", [], "PATH (in the session folder) (one or more)"),
            ("/tandem/map/learn", [.text("fx"), .text("amp"), .text("gain"), .number(1)], "MIN and MAX from -1e9 to 1e9"),
            ("/tandem/nope", [], "unknown command '/tandem/nope'"),
        ]
        for (address, values, fragment) in refuse {
            guard case .failure(let e) = Command.parse(address: address, values: values) else {
                Issue.record("\(address) \(values) accepted")
                continue
            }
            #expect(e.message.contains(fragment), "\(address): \(e)")
        }
        #expect(try Command.parse(words: ["plugin", "set", "fx", "2", "gain", "-6"]).get()
                == .pluginSet(engine: "fx", plugin: "2", symbol: "gain", value: .number(-6)), "a number where a name goes is its text")
        #expect(try Command.parse(words: ["plugin", "set", "fx", "amp", "gain", "-7.5 dB"]).get()
                == .pluginSet(engine: "fx", plugin: "amp", symbol: "gain", value: .text("-7.5 dB")), "a value in its unit")
        #expect(try Command.parse(words: ["/tandem/plugin/bypass", "fx", "amp"]).get() == .pluginBypass(engine: "fx", plugin: "amp", on: nil))
        if case .failure(let e) = Command.parse(words: ["frobnicate"]) { #expect(e.message.contains("known: ping, status")) }
    }
}
