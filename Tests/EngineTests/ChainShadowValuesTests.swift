import Commands
import Engine
import Presets
import Testing

/// What an isolated rack acknowledged, as the session keeps it to give a restarted process again (issue 43, item D):
/// the replies to relayed commands and the relayed mix and gain, turned back into the commands that restore them.
struct ChainShadowValuesTests {
    @Test func acknowledgedValuesBecomeTheCommandsThatRestoreThem() {
        var shadow = ChainShadow()
        #expect(shadow.isEmpty && shadow.commands(rack: "fx").isEmpty)
        // The reply's value is the one kept (a value clamped by the plugin is what runs).
        shadow.record(.pluginSet(engine: "fx", plugin: "amp", symbol: "gain", value: .text("-12 dB")), detail: "-12.0")
        shadow.record(.pluginSet(engine: "fx", plugin: "amp", symbol: "gain", value: .number(99)), detail: "24.0")
        shadow.record(.pluginBypass(engine: "fx", plugin: "amp2", on: true), detail: "1")
        shadow.record(.pluginBypass(engine: "fx", plugin: "amp2", on: nil), detail: "1")   // a read changes nothing
        shadow.record(.pluginMix(engine: "fx", mix: 0.5), detail: "0.5")
        shadow.record(.pluginGain(engine: "fx", dB: nil), detail: "0.0")                  // a read
        shadow.observe(kind: "chain-level-changed", text: "fx 0.5 -6.0 midi", rack: "fx")
        shadow.observe(kind: "chain-level-changed", text: "other 1.0 3.0 midi", rack: "fx")  // another rack's
        #expect(!shadow.isEmpty && shadow.mix == 0.5 && shadow.gainDB == -6)
        #expect(shadow.commands(rack: "fx") == [
            .pluginSet(engine: "fx", plugin: "amp", symbol: "gain", value: .number(24)),
            .pluginBypass(engine: "fx", plugin: "amp2", on: true),
            .pluginMix(engine: "fx", mix: 0.5),
            .pluginGain(engine: "fx", dB: -6),
        ])
    }

    @Test func aChainsValuesAreEveryControlItsBypassMixAndGain() {
        let specs = [PluginSpec(uri: "urn:a", name: "amp", controls: [.init(symbol: "gain", value: -6)], bypass: true)]
        let shadow = ChainShadow(specs: specs, mix: 0.75, gainDB: -2)
        #expect(shadow.commands(rack: "r") == [
            .pluginSet(engine: "r", plugin: "amp", symbol: "gain", value: .number(-6)),
            .pluginBypass(engine: "r", plugin: "amp", on: true),
            .pluginMix(engine: "r", mix: 0.75),
            .pluginGain(engine: "r", dB: -2),
        ])
    }
}
