import Commands
import Presets
import Testing

/// The scene commands (issue 48) in the command model, without a session: their addresses, `tandem ctl`'s words,
/// the values they go back to, and every refusal in the words each surface gives.
@Suite struct SceneCommandTests {
    @Test func sceneCommandsParseFromValuesAndWords() throws {
        let cases: [([String], Command)] = [
            (["scene", "recall", "verse"], .sceneRecall(name: "verse", rampMS: nil)),
            (["scene", "recall", "verse", "250"], .sceneRecall(name: "verse", rampMS: 250)),
            (["scene", "recall", "big chorus", "0"], .sceneRecall(name: "big chorus", rampMS: 0)),
            (["scene", "save", "verse"], .sceneSave(name: "verse", paths: [])),
            (["scene", "save", "verse", "fx/amp/gain", "fx/amp/@bypass", "fx/@mix", "player/@player_gain"],
             .sceneSave(name: "verse", paths: ["fx/amp/gain", "fx/amp/@bypass", "fx/@mix", "player/@player_gain"])),
            (["scene", "list"], .sceneList),
            (["scene", "rename", "verse", "Verse 2"], .sceneRename(from: "verse", to: "Verse 2")),
            (["scene", "delete", "verse"], .sceneDelete(name: "verse")),
            (["scene", "morph", "verse", "chorus", "0.25"], .sceneMorph(from: "verse", to: "chorus", position: 0.25)),
            (["scene", "morph", "verse", "chorus", "1"], .sceneMorph(from: "verse", to: "chorus", position: 1)),
            (["/tandem/scene/recall", "verse", "30"], .sceneRecall(name: "verse", rampMS: 30)),
        ]
        for (words, command) in cases {
            let fromWords = try Command.parse(words: words).get()
            #expect(fromWords == command, "\(words) → \(fromWords)")
            #expect(try Command.parse(address: command.address, values: command.values).get() == command)
            #expect(command.spec.address == command.address && command.engine == nil)
        }
        #expect(Command.sceneList.spec.kind == .query && Command.sceneDelete(name: "x").spec.kind == .action)
        #expect(CommandSpec.named["/tandem/scene/recall"]?.words == "scene recall")
        #expect(CommandSpec.named["/tandem/scene/recall"]?.signature == "s[f]")
        #expect(CommandSpec.named["/tandem/scene/save"]?.signature == "ss...")
        #expect(CommandSpec.named["/tandem/scene/morph"]?.signature == "ssf")
        // A scene named by a number is its text.
        #expect(try Command.parse(words: ["scene", "recall", "2"]).get() == .sceneRecall(name: "2", rampMS: nil))
    }

    @Test func badSceneCommandsAreRefusedAlikeOnEverySurface() {
        let forms = "expected ENGINE/PLUGIN/SYMBOL, ENGINE/PLUGIN/@bypass, ENGINE/@mix, ENGINE/@gain or player/@player_gain"
        let refuse: [(String, [CommandValue], String)] = [
            ("/tandem/scene/recall", [], "/tandem/scene/recall takes NAME (a scene's name) and optionally RAMP_MS "
             + "(default the scene's own, 0 to 10000 ms); got nothing"),
            ("/tandem/scene/recall", [.text("verse"), .number(10_001)], "ramp_ms 10001 is out of range (0 to 10000 ms)"),
            ("/tandem/scene/recall", [.text("verse"), .number(-1)], "ramp_ms -1 is out of range (0 to 10000 ms)"),
            ("/tandem/scene/recall", [.text("verse"), .number(.nan)], "/tandem/scene/recall takes NAME"),
            ("/tandem/scene/recall", [.text("verse"), .number(.infinity)], "/tandem/scene/recall takes NAME"),
            ("/tandem/scene/recall", [.text("verse"), .text("slow")], "/tandem/scene/recall takes NAME"),
            ("/tandem/scene/recall", [.text("ver\nse")], "NAME holds the control character U+000A"),
            ("/tandem/scene/save", [], "/tandem/scene/save takes NAME (a scene's name) and optionally PATH (ENGINE/PLUGIN/SYMBOL"),
            ("/tandem/scene/save", [.text("-verse")], "the scene name '-verse' starts with '-' (it would read as an option)"),
            ("/tandem/scene/save", [.text(String(repeating: "v", count: 65))], "has 65 characters; at most 64"),
            ("/tandem/scene/save", [.text("verse"), .text("fx/amp")], "'fx/amp': a control needs its plugin and symbol; \(forms)"),
            ("/tandem/scene/save", [.text("verse"), .text("fx/@volume")], "'fx/@volume': unknown '@volume' (known: @bypass, @mix, @gain, @player_gain)"),
            ("/tandem/scene/save", [.text("verse"), .text("fx/@player_gain")], "@player_gain is the player's own gain: player/@player_gain"),
            ("/tandem/scene/save", [.text("verse"), .text("fx/@mix"), .text("fx/@mix")], "'fx/@mix' is named twice"),
            ("/tandem/scene/list", [.text("x")], "/tandem/scene/list takes no arguments; got 'x'"),
            ("/tandem/scene/rename", [.text("verse")], "/tandem/scene/rename takes OLD (a scene's name), NEW (its new name); got 'verse'"),
            ("/tandem/scene/rename", [.text("verse"), .text(" v")], "the scene name ' v' starts or ends with a space"),
            ("/tandem/scene/delete", [.text("a"), .text("b")], "/tandem/scene/delete takes NAME (a scene's name); got 'a', 'b'"),
            ("/tandem/scene/morph", [.text("a"), .text("b"), .number(1.5)], "x 1.5 is out of range (0 to 1)"),
            ("/tandem/scene/morph", [.text("a"), .text("b"), .number(-0.1)], "x -0.1 is out of range (0 to 1)"),
            ("/tandem/scene/morph", [.text("a"), .text("b"), .number(.nan)], "/tandem/scene/morph takes FROM (a scene's name), TO"),
            ("/tandem/scene/morph", [.text("a"), .text("b"), .number(-.infinity)], "/tandem/scene/morph takes FROM"),
            ("/tandem/scene/morph", [.text("a"), .text("b")], "X (0 FROM to 1 TO, 0 to 1); got 'a', 'b'"),
            ("/tandem/scene/morph", [.text("a"), .text("a"), .number(0.5)], "a morph goes between two different scenes (both 'a')"),
        ]
        for (address, values, fragment) in refuse {
            guard case .failure(let e) = Command.parse(address: address, values: values) else {
                Issue.record("\(address) \(values) accepted")
                continue
            }
            #expect(e.message.contains(fragment), "\(address) \(values): \(e)")
            // The command line's words say the same (where a word can carry the value).
            if values.allSatisfy({ if case .text(let t) = $0 { !t.contains("\n") && !t.hasPrefix(" ") } else { $0.number?.isFinite == true } }) {
                let words = address.split(separator: "/").dropFirst().map(String.init) + values.map(\.name)
                guard case .failure(let w) = Command.parse(words: words) else {
                    Issue.record("\(words) accepted")
                    continue
                }
                #expect(w == e, "\(words): '\(w)' vs '\(e)'")
            }
        }
    }
}
