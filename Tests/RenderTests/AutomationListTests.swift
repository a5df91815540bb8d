import Commands
import Foundation
import Presets
import Render
import Testing

/// Automation files, their checks, and the formats a take's control log shares with them.
@Suite struct AutomationListTests {
    @Test func linesReadAsCommandsAndMIDIAtFramesOrSeconds() {
        let text = """
            # a comment
            0       /tandem/plugin/set fx amp gain -6
            1.5s    /tandem/plugin/bypass fx amp 1   # trailing comment
            250ms   /tandem/plugin/set fx eq type "Low shelf"
            96000   midi 0x90 60 100

            """
        let (entries, problems) = AutomationList.parse(text, file: "auto.txt")
        #expect(problems.isEmpty, "\(problems)")
        #expect(entries.count == 4)
        #expect(entries[0].at == .frame(0) && entries[0].address == "/tandem/plugin/set")
        #expect(entries[0].args == [.text("fx"), .text("amp"), .text("gain"), .number(-6)])
        #expect(entries[1].at == .seconds(1.5) && entries[1].line == 3)
        #expect(entries[2].args.last == .text("Low shelf"))
        #expect(entries[3].midi == [0x90, 60, 100] && entries[3].at == .frame(96000))
        let (events, _) = AutomationList.events(entries, rate: 48000) { "auto.txt:\($0.line ?? 0)" }
        #expect(events.map(\.at) == [0, 12000, 72000, 96000], "sorted by frame, seconds at the rate")
    }

    @Test func badLinesAreEachNamedWithFileAndLine() {
        let text = """
            soon /tandem/plugin/set fx amp gain -6
            100
            100 /tandem/plugin/set "fx
            100 midi 0x90 60
            100 midi 300
            100 play
            """
        let (entries, problems) = AutomationList.parse(text, file: "a.txt")
        #expect(entries.isEmpty)
        #expect(problems.count == 6, "\(problems)")
        #expect(problems[0].hasPrefix("a.txt:1: 'soon' is not a time"))
        #expect(problems[1].hasPrefix("a.txt:2: nothing to do"))
        #expect(problems[2] == "a.txt:3: a quote is not closed")
        #expect(problems[3].contains("takes 3 byte(s), not 2"))
        #expect(problems[4].contains("'300' is not a MIDI byte"))
        #expect(problems[5].contains("neither an address"))
    }

    @Test func aLogEntryIsALineOfAnAutomationFile() throws {
        let entries: [TimedCommand] = [
            .set(4800, engine: "fx", plugin: "amp", symbol: "gain", value: -7.25),
            .bypass(9600, engine: "fx", plugin: "amp", on: true),
            .gain(12000, engine: "recorder", dB: 20 * log10(Double(Float(pow(10, -3.1 / 20))))),
            .preset(14400, engine: "2", plugin: "my amp", uri: "urn:x"),
        ]
        let text = entries.map(\.line).joined(separator: "\n")
        let (parsed, problems) = AutomationList.parse(text, file: "log")
        #expect(problems.isEmpty, "\(problems)")
        for (e, p) in zip(entries, parsed) {
            #expect(p.at == .frame(e.frame) && p.address == e.address)
            let args = p.args.map { a -> CommandValue in
                if case .number(let d) = a { return .number(d) }
                if case .text(let t) = a { return .text(t) }
                return .text("")
            }
            #expect(args == e.args, "\(e.line)")
            #expect(try TimedCommand(frame: e.frame, address: p.address!, args: args).command.get() == e.command.get())
        }
        // A logged gain comes back to the same 32-bit value the chain applied.
        let g = Float(pow(10, -3.1 / 20))
        if case .pluginGain(_, let dB?, _) = try entries[2].command.get() { #expect(Float(pow(10, dB / 20)) == g) }
    }

    @Test func eventsThatARenderCannotApplyAreRefused() {
        let chain = RenderChain(kind: .recorder, engine: "recorder", plugins: [], inputs: 2, outputs: 2)
        func why(_ address: String, _ args: [CommandValue]) -> String? {
            let e = AutomationEvent(at: 0, address: address, args: args, origin: "t:1")
            if case .failure(let f) = e.action(for: chain) { return f.message }
            return nil
        }
        #expect(why("/tandem/plugin/set", [.text("fx"), .text("amp"), .text("gain"), .number(-6)])?
            .contains("acts on 'fx'") == true)
        #expect(why("/tandem/record/start", [])?.contains("not something a render applies") == true)
        #expect(why("/tandem/plugin/mix", [.text("recorder")])?.contains("only reads") == true)
        #expect(why("/tandem/plugin/gain", [.text("recorder"), .number(99)])?.contains("out of range") == true)
        #expect(why("/tandem/plugin/bypass", [.text("recorder"), .text("amp"), .number(1)]) == nil)
        let midi = AutomationEvent(at: 0, address: nil, midi: [0x90, 60, 1], origin: "t:2")
        if case .failure(let f) = midi.action(for: chain) { #expect(f.message.contains("takes none")) } else {
            Issue.record("MIDI into the recorder's chain")
        }
    }

    @Test func sha256OfKnownInputs() {
        var empty = SHA256()
        #expect(empty.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var abc = SHA256()
        abc.update(Array("abc".utf8))
        #expect(abc.hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        var long = SHA256()
        let million = [UInt8](repeating: 0x61, count: 1_000_000)
        long.update(Array(million[0..<333]))
        long.update(Array(million[333...]))
        #expect(long.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func outputTemplates() {
        #expect(RenderTemplate.problem("out/{input}.wav", inputs: 3) == nil)
        #expect(RenderTemplate.problem("out/{take:03}.flac", inputs: 3) == nil)
        #expect(RenderTemplate.problem("out/x.wav", inputs: 2)?.contains("need an output template") == true)
        #expect(RenderTemplate.problem("out/{chunk}.wav", inputs: 1)?.contains("not {chunk}") == true)
        #expect(RenderTemplate.problem("out/{nope}.wav", inputs: 1)?.contains("unknown placeholder") == true)
    }
}
