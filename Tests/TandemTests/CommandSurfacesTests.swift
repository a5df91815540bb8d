import Testing
import Foundation
import Commands
import Control
import Engine
import TestSupport

/// Every command of the model, through every surface of a running session: OSC sent as datagrams, and `tandem ctl`
/// with its words. Two identical sessions get the same sequence, one over each surface, so the answers can be held
/// against each other: each command is accepted (or refused) alike, with the same words; every out-of-range number
/// is refused alike; and a control map's range outside its control's is refused in the very words `plugin set` uses.
@Suite(.serialized) struct CommandSurfacesTests {
    static func preset(_ dir: URL, name: String, port: Int, audio: String) throws -> String {
        let path = dir.appendingPathComponent("\(name).toml").path
        try """
            [session]
            name = "\(name)"
            directory = "\(dir.path)"
            control_port = \(port)
            [recorder]
            client = "\(name)-rec"
            channels = 1
            start = "armed"
            [player]
            client = "\(name)-play"
            channels = 1
            queue = ["\(audio)"]
            start = "command"
            [[rack]]
            name = "fx"
            client = "\(name)-fx"
            isolate = false
            inputs = 1
            [[rack.plugins]]
            uri = "\(RackTests.amp)"
            name = "amp"
            controls = { gain = -6 }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Arguments for each command that this session can take (an engine, plugin and control it has, files in its
    /// folder), so that an accepted command is carried out, not refused for a name.
    static func arguments(_ spec: CommandSpec, audio: String, preset: String) -> [CommandValue] {
        switch spec.address {
        case "/tandem/record/mark": return [.text("cue")]
        case "/tandem/play/seek": return [.number(0.25)]
        case "/tandem/play/gain": return [.number(-3)]
        case "/tandem/play/load": return [.text((audio as NSString).lastPathComponent)]
        case "/tandem/preset/apply": return [.text((preset as NSString).lastPathComponent)]
        case "/tandem/preset/save": return [.text("snapshot-\((preset as NSString).lastPathComponent)")]
        case "/tandem/plugin/set": return [.text("fx"), .text("amp"), .text("gain"), .number(-12)]
        case "/tandem/plugin/get": return [.text("fx"), .text("amp"), .text("gain")]
        case "/tandem/plugin/bypass": return [.text("fx"), .text("amp"), .number(1)]
        case "/tandem/plugin/mix": return [.text("fx"), .number(0.5)]
        case "/tandem/plugin/gain": return [.text("fx"), .number(-2)]
        case "/tandem/plugin/preset": return [.text("fx"), .text("amp"), .text("urn:tandem:none")]
        case "/tandem/plugin/list": return [.text("fx")]
        case "/tandem/plugin/add": return [.text("fx"), .text(RackTests.amp)]
        case "/tandem/plugin/remove": return [.text("fx"), .text("amp-2")]
        case "/tandem/plugin/move": return [.text("fx"), .text("amp"), .number(0)]
        case "/tandem/map/learn": return [.text("fx"), .text("amp"), .text("gain"), .number(-40), .number(0)]
        case "/tandem/map/add": return [.text("cc 1 7 -> fx:amp:gain -40..0")]
        case "/tandem/map/clear": return [.number(0)]
        default: return []
        }
    }

    /// One OSC request, answered: ok or error, and the detail.
    static func osc(_ port: Int, _ address: String, _ values: [CommandValue]) throws -> (ok: Bool, detail: String) {
        let socket = try UDPSocket(port: 0)
        let args: [OSCValue] = values.map { v in
            switch v {
            case .text(let s): return .string(s)
            case .number(let d): return .double(d)
            }
        }
        socket.send(OSCMessage(address, args).encode(), to: UDPSocket.loopback(port: port))
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, socket.wait(seconds: deadline.timeIntervalSinceNow) {
            while let d = socket.receive(limit: 1 << 20) {
                guard let m = try? OSCMessage.decode(bytes: d.bytes).get(), m.path == "/tandem/reply" else { continue }
                return (m.arguments.first?.string == "ok", m.arguments.count > 2 ? m.arguments[2].string ?? "" : "")
            }
        }
        return (false, "no reply")
    }

    /// The same through `tandem ctl WORDS…`.
    static func ctl(_ port: Int, _ spec: CommandSpec, _ values: [CommandValue]) throws -> (ok: Bool, detail: String) {
        let words = spec.words.split(separator: " ").map(String.init) + values.map(\.name)
        let r = try TestEnvironment.run([TestEnvironment.product("tandem"), "ctl", "--port", "\(port)"] + words, timeout: 20)
        let line = r.output.split(separator: "\n").last.map(String.init) ?? ""
        if r.code == 0 { return (true, line.hasPrefix("ok: ") ? String(line.dropFirst(4)) : "") }
        return (false, line.hasPrefix("tandem: ") ? String(line.dropFirst(8)) : line)
    }

    @Test(.enabled(if: RackTests.hasSWH))
    func everyCommandIsTheSameOnEverySurface() throws {
        let server = try TestEnvironment.server("surfaces")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("surfaces")
        let audio = dir.appendingPathComponent("tone.wav").path
        try TestEnvironment.writeWAV(Signals.noise(frames: 48000, channels: 1), channels: 1, path: audio)
        let base = 46000 + Int(getpid() % 15000)
        let ports = [base, base + 1]
        var runs: [TandemProcess] = []
        var presets: [String] = []
        for (k, name) in ["sa", "sb"].enumerated() {
            let p = try Self.preset(dir, name: name, port: ports[k], audio: audio)
            presets.append(p)
            let run = try TandemProcess(["run", "--no-view", p], server: server, log: dir.appendingPathComponent("\(name).log").path)
            runs.append(run)
            #expect(run.waitFor("control protocol listening"), "\(run.output)")
        }
        defer { for r in runs { r.process.signal(SIGTERM); _ = r.process.wait(timeout: 15) } }
        var compared = 0
        for spec in CommandSpec.all {
            // Each session names its own preset (to apply, and to save under).
            let values = Self.arguments(spec, audio: audio, preset: presets[0])
            let a = try Self.osc(ports[0], spec.address, values)
            let b = try Self.ctl(ports[1], spec, Self.arguments(spec, audio: audio, preset: presets[1]))
            #expect(a.ok == b.ok, "\(spec.address): OSC \(a), ctl \(b)")
            // What a query answers, or a name the session made (a preset file), differs between two sessions; a
            // refusal's words must not.
            if !a.ok { #expect(a.detail == b.detail, "\(spec.address): OSC '\(a.detail)', ctl '\(b.detail)'") }
            compared += 1
            // Every number out of its range, refused alike.
            for (i, p) in spec.parameters.enumerated() where i < values.count {
                guard case .number(let range, _) = p.kind else { continue }
                var bad = values
                bad[i] = .number(range.upperBound + 1)
                let oa = try Self.osc(ports[0], spec.address, bad), ob = try Self.ctl(ports[1], spec, bad)
                #expect(!oa.ok && !ob.ok && oa.detail == ob.detail && oa.detail.contains("is out of range"),
                        "\(spec.address) out of range: OSC \(oa), ctl \(ob)")
                compared += 1
            }
        }
        // A plugin control out of its range: plugin set, and a map over it, refused in one set of words.
        let set = try Self.osc(ports[0], "/tandem/plugin/set", [.text("fx"), .text("amp"), .text("gain"), .number(-500)])
        let map = try Self.osc(ports[0], "/tandem/map/add", [.text("cc 1 7 -> fx:amp:gain -500..0")])
        #expect(!set.ok && !map.ok && set.detail.contains("control 'gain' = -500.0 is outside its range -70.0 to 70.0")
                && map.detail.contains("control 'gain' = -500.0 is outside its range -70.0 to 70.0"), "set \(set), map \(map)")
        print("command surfaces: \(CommandSpec.all.count) commands, \(compared) comparisons, OSC and ctl alike")
    }
}
