import Commands
import Engine
import Foundation
import Plugins
import Presets

// A morph between two scenes (docs/PRESETS.md "[[scene]]: scenes"): every value either scene has, set the position's
// way from one to the other in its own scale through the same path as a recall (`applySceneValues`).
extension Session {
    /// The glide a morph's steps take: about a turn of the control loop, so a pedal's steps join into one movement.
    static let morphRampMS = 20.0

    /// Sets the rig `position` of the way from scene `from` to scene `to`: continuous values in their own scale,
    /// discrete ones (bypasses, toggles, enumerations) switching at the middle; a value one scene lacks is the running
    /// rig's.
    public func morphScenes(from: String, to: String, position: Double, context: CommandContext) -> CommandReply {
        let a: Scene, b: Scene
        do {
            a = try sceneState.book.find(from)
            b = try sceneState.book.find(to)
        } catch {
            return .refused(error.description, .notFound)
        }
        guard position.isFinite, (0...1).contains(position) else {
            return .refused("position \(Limits.number(position)) is out of range (allowed: 0 to 1)", .badValue)
        }
        var values: [SceneValue] = [], missing: [String] = []
        sceneState.unanswered = []
        for path in SceneBook.union(a, b) {
            guard let va = a.value(path) ?? currentSceneValue(path), let vb = b.value(path) ?? currentSceneValue(path) else {
                missing.append("'\(path)': the rig has no value there")
                continue
            }
            switch (morphNumber(path, va), morphNumber(path, vb)) {
            case (.some(let x), .some(let y)):
                let scale = morphScale(path)
                let v = scale.map { SceneBook.morph(from: x, to: y, x: position, scale: $0) }
                    ?? SceneBook.pick(from: x, to: y, x: position)
                values.append(SceneValue(path: path, value: .number(v)))
            default:
                values.append(SceneValue(path: path, value: SceneBook.pick(from: va, to: vb, x: position)))
            }
        }
        let (applied, refused, _) = applySceneValues(values, rampMS: Self.morphRampMS, context: context)
        missing += refused
        sceneState.current = position == 0 ? from : position == 1 ? to : nil
        sceneState.morph = (from, to, position)
        events.append(.sceneMorphed(from: from, to: to, position: position, source: context.source))
        return .done("\(applied) value(s) \(Limits.number(position)) of the way from '\(from)' to '\(to)'"
                     + (missing.isEmpty ? "" : "; not applied: " + missing.joined(separator: "; ")))
    }

    /// A scene value as a number in its path's own scale (a control in words read with the plugin's units); nil
    /// when it cannot be told here (an isolated rack's control in words).
    func morphNumber(_ path: ScenePath, _ value: SceneNumber) -> Double? {
        let v = SceneValue(path: path, value: value)
        if let d = v.fixedNumber { return d }
        guard case .control(let symbol) = path.target, let plugin = path.plugin, case .text(let t) = value else { return nil }
        let engine = ChainEngine(rawValue: path.engine)
        if let c = chain(engine) { return try? c.number(plugin, symbol, from: t) }
        // An isolated rack's control: read with its plugin's data, as its process would.
        guard let spec = chainSpecs(engine).first(where: { $0.name == plugin }),
              let port = PluginHost.shared.plugin(spec.uri)?.ports.first(where: {
                  $0.kind == .control && $0.isInput && $0.symbol == symbol }),
              case .success(let d) = ControlUnits.parse(t, port: port.at(sampleRate: patchClient?.sampleRate ?? 48000))
        else { return nil }
        return d
    }

    /// How a path morphs: nil for a discrete one (it switches at the middle).
    func morphScale(_ path: ScenePath) -> MorphScale? {
        switch path.target {
        case .bypass: return nil
        case .mix, .gain, .playerGain: return .linear
        case .control(let symbol):
            guard let plugin = path.plugin else { return .linear }
            let engine = ChainEngine(rawValue: path.engine)
            let scale: String
            if let c = chain(engine) {
                guard let s = try? c.scale(plugin, symbol) else { return .linear }
                scale = s
            } else {
                // An isolated rack's plugin: its port as the plugin's data describes it.
                guard let spec = chainSpecs(engine).first(where: { $0.name == plugin }),
                      let port = PluginHost.shared.plugin(spec.uri)?.ports.first(where: {
                          $0.kind == .control && $0.isInput && $0.symbol == symbol }) else { return .linear }
                scale = PluginChain.scale(of: port)
            }
            switch scale {
            case "discrete": return nil
            case "logarithmic": return .logarithmic
            default: return .linear
            }
        }
    }
}
