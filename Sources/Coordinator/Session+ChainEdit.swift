import Commands
import Engine
import Foundation
import Plugins
import Presets

// Editing a running chain (a plugin added, removed or moved, from the page or OSC): the running setup with the
// chain changed, checked as `preset check` checks a file, then applied by difference like any preset (an isolated
// rack gets its new document; the other chains keep running untouched).
extension Session {
    /// Carries out `pluginAdd`, `pluginRemove` and `pluginMove` (`command` is one of them).
    func editChain(_ command: Command, context: CommandContext) -> CommandReply {
        guard let e = command.engine else { return .refused("not a chain edit") }
        guard hasEngine(e) else { return .refused(Self.unknownEngine(e), .notFound) }
        guard var next = runningPreset() else { return .refused("no setup is running") }
        var specs: [PluginSpec]
        if e == "recorder", let r = next.recorder { specs = r.plugins }
        else if e == "player", let p = next.player { specs = p.plugins }
        else if let i = next.racks.firstIndex(where: { $0.name == e }) { specs = next.racks[i].plugins }
        else { return .refused(Self.unknownEngine(e), .notFound) }

        let done: String
        switch command {
        case .pluginAdd(_, let text, let at):
            var spec: PluginSpec
            switch PluginSpec.parse(text) {
            case .success(let s): spec = s
            case .failure(let why): return .refused(why.description, .badValue)
            }
            let uri = spec.uri
            guard specs.count < Limits.pluginsPerChain else {
                return .refused("the \(e)'s chain has \(specs.count) plugins, the most a chain may have", .badValue)
            }
            if let why = PluginHost.shared.whyUnavailable(uri) {
                return .refused(why + " (/tandem/plugin/list shows the chains, `tandem plugins` what is installed)", .badValue)
            }
            let position = at ?? specs.count
            guard position <= specs.count else {
                return .refused("position \(position) is past the end of the \(e)'s chain (it has \(specs.count) plugin(s))", .badValue)
            }
            let taken = Set(specs.map(\.name))
            if text.contains(",name=") || text.contains(",name =") {
                guard !taken.contains(spec.name) else {
                    return .refused("the \(e)'s chain already has a plugin named '\(spec.name)'", .badValue)
                }
            } else {
                var n = 2
                let base = spec.name
                while taken.contains(spec.name) {
                    spec.name = "\(base)-\(n)"
                    n += 1
                }
            }
            specs.insert(spec, at: position)
            done = "\(spec.name) added at \(position)"
        case .pluginRemove(_, let plugin):
            guard let i = specs.firstIndex(where: { $0.name == plugin }) else {
                return .refused("the \(e) has no plugin '\(plugin)'", .notFound)
            }
            specs.remove(at: i)
            done = "\(plugin) removed"
        case .pluginMove(_, let plugin, let to):
            guard let i = specs.firstIndex(where: { $0.name == plugin }) else {
                return .refused("the \(e) has no plugin '\(plugin)'", .notFound)
            }
            guard to < specs.count else {
                return .refused("position \(to) is past the end of the \(e)'s chain (positions 0 to \(specs.count - 1))", .badValue)
            }
            let spec = specs.remove(at: i)
            specs.insert(spec, at: to)
            done = "\(plugin) moved to \(to)"
        default:
            return .refused("not a chain edit")
        }

        if e == "recorder" { next.recorder?.plugins = specs; next.recorder?.pluginSources = [] }
        else if e == "player" { next.player?.plugins = specs; next.player?.pluginSources = [] }
        else if let i = next.racks.firstIndex(where: { $0.name == e }) { next.racks[i].plugins = specs; next.racks[i].pluginSources = [] }
        // Checked as `preset check` checks a file: the added plugin, and the chain's shape. The other plugins run
        // already; their values are what they are.
        var check = next
        let added: String? = if case .pluginAdd = command { done.components(separatedBy: " added").first } else { nil }
        let bare = specs.map { s -> PluginSpec in
            var b = s
            if s.name != added { b.controls = [] }
            return b
        }
        if e == "recorder" { check.recorder?.plugins = bare }
        else if e == "player" { check.player?.plugins = bare }
        else if let i = check.racks.firstIndex(where: { $0.name == e }) { check.racks[i].plugins = bare }
        if let why = pluginProblems(check) { return .refused(why, .badValue) }
        do {
            _ = try apply(next)
        } catch {
            return .refused(error.message)
        }
        events.append(.chainEdited(engine: e, detail: done, source: context.source))
        // A running take's control log names the edit (at the frame it was made, to a period): a render of the take
        // refuses it in words rather than rendering the chain as it stood before.
        if let r = recorder {
            r.logControl(TimedCommand(frame: 0, command: command, source: context.source), frameTime: r.client.frameTime)
        }
        return .done(done)
    }

    /// What the plugin check (`preset check`'s) finds wrong with `preset`, in one line; nil when nothing.
    func pluginProblems(_ preset: Preset) -> String? {
        guard case .checked(let problems) = PresetPluginCheck.check(preset), !problems.isEmpty else { return nil }
        return problems.map(\.message).joined(separator: "; ")
    }
}
