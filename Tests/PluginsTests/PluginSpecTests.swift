import Foundation
import Presets
import Testing

@Suite struct PluginSpecTests {
    @Test func commandLineFormRoundTrips() throws {
        let spec = try PluginSpec.parse("http://plugin.org.uk/swh-plugins/amp,gain=-6,name=lead").get()
        #expect(spec.uri == "http://plugin.org.uk/swh-plugins/amp")
        #expect(spec.name == "lead")
        #expect(spec.controls == [.init(symbol: "gain", value: -6)])
        #expect(try PluginSpec.parse(spec.commandLine).get() == spec)
        #expect(PluginSpec(uri: "http://gareus.org/oss/lv2/zeroconvolv#Mono").name == "mono")
        // `bypass` is a bare word: never a control, whatever the plugin's symbols.
        let off = try PluginSpec.parse("http://plugin.org.uk/swh-plugins/amp,bypass,gain=1").get()
        #expect(off.bypass && off.controls == [.init(symbol: "gain", value: 1)])
        #expect(try PluginSpec.parse(off.commandLine).get() == off)
        // A report written before `bypass` existed reads as not bypassed.
        let old = #"{"uri":"urn:x","name":"x","controls":[]}"#
        #expect(try JSONDecoder().decode(PluginSpec.self, from: Data(old.utf8)).bypass == false)
    }

    @Test func badCommandLineFormsAreExplained() {
        for (text, words) in [("amp", "plugin URI"), ("http://x/amp,gain", "KEY=VALUE"),
                              ("http://x/amp,gain=loud", "not a number"), ("http://x/amp,name=a b", "bad plugin name")] {
            guard case .failure(let e) = PluginSpec.parse(text) else {
                Issue.record("'\(text)' was accepted")
                continue
            }
            #expect(e.description.contains(words), "\(e)")
        }
    }

    @Test func namesAreMadeUnique() {
        let specs = PluginSpec.uniqueNames([PluginSpec(uri: "http://x/amp"), PluginSpec(uri: "http://y/amp")])
        #expect(specs.map(\.name) == ["amp", "amp-2"])
    }
}
