import Presets

/// How the plugins of a chain sit on its path: how many instances of each, which audio ports take the path and
/// which are side inputs, and how many channels the path has before and after each plugin.
///
/// The rule (docs/PRESETS.md, "Channel shapes"), for a plugin with `a` main audio inputs and `b` audio outputs on a
/// path of `w` channels:
/// 1. `a == b` and `a` divides `w`: `w / a` instances side by side, each on its own `a` channels; the path keeps
///    `w` channels (a mono plugin on a stereo path runs twice).
/// 2. otherwise `a == w`: one instance takes the whole path and the path continues with `b` channels (mono→stereo,
///    stereo→mono, 4→2).
/// 3. `a == 0` and `b > 0` (an instrument: a synth, a sampler): one instance, sounding from MIDI, starts the path
///    anew with `b` channels (what came before it is its dry signal when bypassed; a rack without audio inputs starts
///    with one).
/// 4. no audio port at all but MIDI or CV (a MIDI effect: eg-fifths, x42 midifilter; a CV module: blop's envelopes
///    and sequencers): one instance; the path goes past it unchanged.
/// 5. anything else cannot be mapped and is refused with the plugin, its ports and both channel counts named.
///
/// Side inputs are audio inputs flagged lv2:isSideChain or in a pg:sideChainOf group, and optional
/// (lv2:connectionOptional) audio inputs, unless making them side inputs would leave the plugin without a main
/// input. They never take the path: each becomes an extra input of the chain named `<plugin>_<port symbol>`
/// (`comp_sidechain`), shared by every instance of that plugin, silent while nothing feeds it.
///
/// CV ports (lv2:CVPort: control signals at audio rate) never take the path either: a CV input is a side input of
/// its own (`vco_freq`), a CV output an extra output of the chain (`adsr_out`; with several instances
/// `adsr_out_2` and on for the second and later), which a rack gives JACK audio ports, as jalv, mod-host and Ingen
/// do.
///
/// Pure: no lilv, no allocation beyond the plan; unit-testable.
public struct ChainLayout: Sendable, Equatable {
    /// One plugin's place on the path.
    public struct Stage: Sendable, Equatable {
        /// Port indices, per instance: the main audio inputs, the side inputs, the audio outputs.
        public var mainInputs: [Int]
        public var sideInputs: [Int]
        public var outputs: [Int]
        /// CV outputs, per instance (see above).
        public var sideOutputs: [Int] = []
        public var instances: Int
        /// Channels of the path before and after the plugin.
        public var widthIn: Int
        public var widthOut: Int
    }

    /// Plans one plugin on a path of `width` channels, or says why it cannot be mapped.
    public static func plan(_ spec: PluginSpec, _ info: PluginInfo, width: Int) -> Result<Stage, PluginError> {
        let audioIn = info.ports.filter { $0.kind == .audio && $0.isInput }
        let audioOut = info.ports.filter { $0.kind == .audio && !$0.isInput }
        var side = audioIn.filter { $0.isSideChain || $0.isOptional }
        if side.count == audioIn.count && !side.isEmpty {
            side = audioIn.filter(\.isSideChain)   // optional inputs are its main inputs after all
        }
        let main = audioIn.filter { p in !side.contains { $0.index == p.index } }
        let cvIn = info.ports.filter { $0.kind == .cv && $0.isInput }
        let cvOut = info.ports.filter { $0.kind == .cv && !$0.isInput }
        let a = main.count, b = audioOut.count
        let stage: (Int, Int) -> Stage = { instances, widthOut in
            Stage(mainInputs: main.map(\.index), sideInputs: (side + cvIn).map(\.index), outputs: audioOut.map(\.index),
                  sideOutputs: cvOut.map(\.index), instances: instances, widthIn: width, widthOut: widthOut)
        }
        if a > 0, a == b, width % a == 0 { return .success(stage(width / a, width)) }
        if a == 0, b > 0 { return .success(stage(1, b)) }
        if a == 0, b == 0, (side.isEmpty && info.ports.contains(where: { $0.kind == .atom && $0.supportsMIDI }))
            || !cvIn.isEmpty || !cvOut.isEmpty {
            return .success(stage(1, width))
        }
        if a == width, b > 0 { return .success(stage(1, b)) }
        func names(_ ports: [PluginPortInfo]) -> String {
            ports.isEmpty ? "none" : ports.map(\.symbol).joined(separator: ", ")
        }
        var ports = "inputs (\(names(main)))"
        if !side.isEmpty { ports += ", side inputs (\(names(side)))" }
        ports += " and outputs (\(names(audioOut)))"
        if a == 0 && b == 0 && !side.isEmpty { ports += "; a plugin whose only audio ports are side inputs is no insert" }
        let why: String
        if b == 0 {
            why = "it has no audio output to continue the path with"
        } else {
            why = "a plugin fits when its \(a) input(s) take all \(width) channel(s), or when it has as many outputs as"
                + " inputs and \(a) divides \(width)"
        }
        return .failure(PluginError(.channels, plugin: spec.name, "<\(spec.uri)> has audio \(ports): \(a) → \(b)"
                                    + " channel(s) cannot follow a \(width)-channel path; \(why)"))
    }

    /// Plans a whole chain from `inputs` channels. `outputs`: the channel count the chain must end with (an engine
    /// with fixed ports), or nil to end with whatever the plugins make. Plugins that cannot be mapped are left out
    /// (their problem says why); when the chain would end with the wrong channel count, every plugin that changes
    /// the count is left out too and the rest planned again.
    public static func plan(_ plugins: [(PluginSpec, PluginInfo)], inputs: Int, outputs: Int?, label: String)
        -> (stages: [Stage?], problems: [PluginError]) {
        var problems: [PluginError] = []
        var excluded = Set<Int>()
        for attempt in 0..<2 {
            var stages: [Stage?] = []
            var width = inputs
            var pass: [PluginError] = []
            for (k, (spec, info)) in plugins.enumerated() {
                if excluded.contains(k) {
                    stages.append(nil)
                    continue
                }
                switch plan(spec, info, width: width) {
                case .success(let s):
                    stages.append(s)
                    width = s.widthOut
                case .failure(let e):
                    stages.append(nil)
                    pass.append(e)
                }
            }
            guard let outputs, width != outputs, attempt == 0 else { return (stages, problems + pass) }
            for (k, s) in stages.enumerated() {
                guard let s, s.widthIn != s.widthOut else { continue }
                excluded.insert(k)
                let (spec, _) = plugins[k]
                problems.append(PluginError(.channels, plugin: spec.name, "<\(spec.uri)> turns \(s.widthIn) channel(s)"
                                            + " into \(s.widthOut), and the \(label) chain would end with \(width) where"
                                            + " its \(outputs) port(s) need \(outputs); left out"))
            }
        }
        return ([], problems)   // not reached: the second attempt always returns
    }
}

extension ChainLayout {
    /// The main inputs and outputs of a through path (a rack) for a chain, where the preset does not give them:
    /// inputs, what the first plugin takes (none for an instrument first; 2 when it cannot be looked up); outputs,
    /// what the chain gives from them (mono→stereo, stereo→mono, N instances of a mono plugin). What a live rack's
    /// ports and a render of that rack share. Control thread.
    public static func throughShape(_ specs: [PluginSpec], inputs: Int?, outputs: Int?, label: String,
                                    host: PluginHost = .shared) -> (inputs: Int, outputs: Int) {
        let named = PluginSpec.uniqueNames(specs)
        let infos = named.compactMap { spec in host.plugin(spec.uri).map { (spec, $0) } }
        let firstMain = infos.first.map { _, info in
            info.ports.filter { $0.kind == .audio && $0.isInput && !$0.isSideChain && !$0.isOptional }.count
        }
        let ins = inputs ?? (firstMain == 0 ? 0 : max(1, firstMain ?? 2))
        let plan = plan(infos, inputs: ins, outputs: outputs, label: label)
        return (ins, outputs ?? plan.stages.compactMap { $0 }.last?.widthOut ?? ins)
    }
}
