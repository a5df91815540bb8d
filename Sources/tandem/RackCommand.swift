import ArgumentParser
import Control
import Coordinator
import Engine
import Foundation
import Jack
import Plugins
import Presets

/// `tandem rack`: the jalv of chains. One rack (a JACK client running an LV2 chain from its inputs to its outputs in
/// the same cycle), run through the same session loop as `run`, `record` and `play`.
struct RackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rack",
        abstract: "Run an LV2 plugin chain live between JACK input and output ports, until stopped.",
        discussion: """
            Ports in_1..in_N and out_1..out_M (default: the channel counts the chain needs; no audio input when the \
            chain starts with an instrument), and MIDI ports midi_in (when a plugin takes MIDI) and midi_out (when \
            one writes MIDI) unless --midi-input/--midi-output name them. SIGINT/SIGTERM stop cleanly (exit 0).
            """)

    @OptionGroup var server: ServerOptions

    @OptionGroup var plugins: PluginOptions

    @Option(name: .long, help: "The rack's name (in OSC messages and the status).")
    var name = "rack"

    @Option(name: .long, help: "JACK client name (default: the rack's name).")
    var client: String?

    @Option(name: .long, help: "Number of input ports (in_1..in_N; 0 for an instrument rack).")
    var inputs: Int?

    @Option(name: .long, help: "Number of output ports (out_1..out_M).")
    var outputs: Int?

    @Option(name: .long, help: "Input port short name, in channel order (repeatable; instead of --inputs).")
    var input: [String] = []

    @Option(name: .long, help: "Output port short name, in channel order (repeatable; instead of --outputs).")
    var output: [String] = []

    @Option(name: .long, help: "Source port (exact name or regular expression) for the inputs, in order (repeatable).")
    var connectIn: [String] = []

    @Option(name: .long, help: "Destination port (exact name or regular expression) for the outputs, in order (repeatable).")
    var connectOut: [String] = []

    @Option(name: .long, help: "MIDI input port short name (repeatable; default midi_in when a plugin takes MIDI).")
    var midiInput: [String] = []

    @Option(name: .long, help: "MIDI output port short name (repeatable; default midi_out when a plugin writes MIDI).")
    var midiOutput: [String] = []

    @Flag(name: .long, help: "No MIDI input port, even when a plugin takes MIDI.")
    var noMidiInput = false

    @Flag(name: .long, help: "No MIDI output port, even when a plugin writes MIDI.")
    var noMidiOutput = false

    @Option(name: .long, help: "Source MIDI port (exact name or regular expression) for the MIDI inputs, in order (repeatable).")
    var connectMidiIn: [String] = []

    @Option(name: .long, help: "Destination MIDI port (exact name or regular expression) for the MIDI outputs, in order (repeatable).")
    var connectMidiOut: [String] = []

    @Option(name: .long, help: "Tempo in beats per minute: the rack offers to be JACK's timebase master (bars and beats from frame 0).")
    var tempo: Double?

    @Option(name: .long, help: "Meter with --tempo, beats/unit (default 4/4).")
    var meter = "4/4"

    @Option(name: .long, help: "Output gain in dB (negative values as --gain=-6).")
    var gain: Double = 0

    @Option(name: .long, help: "Dry/wet mix: 0 the input alone, 1 the chain's output alone.")
    var mix: Double = 1

    @Flag(name: .long, help: "Measure the outputs' EBU R128 loudness, shown in the status.")
    var loudness = false

    @Option(name: .long, help: "When the JACK server goes away: stop (exit 3) or resume (wait for it, then run again).")
    var onServerLoss = "stop"

    @Option(name: .long, help: ArgumentHelp(
        "A control map (repeatable): MIDI on the rack's inputs onto a control, a bypass or an LV2 preset, e.g. "
            + "\"cc 1 7 -> amp:gain -40..0 linear\", \"cc 64 -> amp bypass\", \"program -> amp presets\" (docs/CLI.md).",
        valueName: "MAP"))
    var map: [String] = []

    @OptionGroup var controlOptions: ControlOptions

    @Flag(name: .long, help: .hidden)
    var child = false

    @Option(name: .long, help: .hidden)
    var heartbeatFd: Int32?

    @Option(name: .long, help: .hidden)
    var documentFd: Int32?

    func validate() throws {
        // A supervised child takes its whole configuration from its session's first document (`childPreset`).
        if child && documentFd != nil { return }
        if plugins.plugin.isEmpty { throw ValidationError("give at least one --plugin") }
        if inputs != nil && !input.isEmpty { throw ValidationError("give either --inputs or --input") }
        if outputs != nil && !output.isEmpty { throw ValidationError("give either --outputs or --output") }
        if let n = inputs, n != 0, !Limits.channels.contains(n) {
            throw ValidationError("--inputs must be 0 to \(Limits.channels.upperBound)")
        }
        if let n = outputs, !Limits.channels.contains(n) {
            throw ValidationError("--outputs must be 1 to \(Limits.channels.upperBound)")
        }
        if let tempo, !SessionSection.tempos.contains(tempo) {
            throw ValidationError("--tempo must be 1 to 999 beats per minute")
        }
        if SessionSection.Meter(meter) == nil { throw ValidationError("--meter '\(meter)' is not a meter (e.g. 4/4, 6/8)") }
        if noMidiInput && !midiInput.isEmpty { throw ValidationError("give either --midi-input or --no-midi-input") }
        if noMidiOutput && !midiOutput.isEmpty { throw ValidationError("give either --midi-output or --no-midi-output") }
        let all = input + output + midiInput + midiOutput
        if Set(all).count != all.count { throw ValidationError("two ports of the rack have the same name") }
        for p in input + output + midiInput + midiOutput where p.isEmpty || p.contains(":") || p.utf8.count > 200 {
            throw ValidationError("bad port name '\(p)' (empty, too long, or contains ':')")
        }
        if !Limits.contains(Limits.gainDB, gain) { throw ValidationError("--gain must be \(Limits.describe(Limits.gainDB, unit: " dB"))") }
        if !Limits.contains(Limits.mix, mix) { throw ValidationError("--mix must be 0 to 1") }
        if let why = Limits.nameProblem(name, what: "--name", bytes: Limits.clientNameBytes) { throw ValidationError(why) }
        if let client, let why = Limits.nameProblem(client, what: "--client", bytes: Limits.clientNameBytes) {
            throw ValidationError(why)
        }
        if ServerLossPolicy(rawValue: onServerLoss) == nil {
            throw ValidationError("unknown --on-server-loss '\(onServerLoss)' (stop, resume)")
        }
        _ = try maps()
    }

    /// The `--map` options as maps onto this rack's plugins.
    func maps() throws -> [ControlMap] {
        let names = PluginSpec.uniqueNames(plugins.specs).map(\.name)
        return try map.map { text in
            let m: ControlMap
            switch ControlMap.parse(text, defaultEngine: name) {
            case .failure(let why): throw ValidationError("--map \(why)")
            case .success(let parsed): m = parsed
            }
            if child, case .marker = m.target { return m }   // relayed to the session that records
            guard let (engine, plugin) = m.plugin else {
                throw ValidationError("--map '\(text)': a rack's maps drive its own plugins (controls, bypass, presets); "
                                      + "markers and preset files go in a preset's [[map]]")
            }
            guard engine == name else { throw ValidationError("--map '\(text)': this rack is '\(name)', not '\(engine)'") }
            guard names.contains(plugin) else {
                throw ValidationError("--map '\(text)': no plugin '\(plugin)' in the rack (plugins: \(names.joined(separator: ", ")))")
            }
            if let r = m.rack, r != name { throw ValidationError("--map '\(text)': this rack is '\(name)', not '\(r)'") }
            return m
        }
    }

    /// `preset` with this rack's plugins, gain, mix and maps as a document from the session has them; nil (and a line on
    /// stderr, which is this process's log) when the document does not hold this rack or does not load.
    func takeDocument(_ text: String, into preset: Preset) -> Preset? {
        let base = "/"   // the session's documents hold absolute paths (`Session.rackDocument`)
        let (loaded, problems) = PresetLoader.parse(text, file: "rack document", baseDirectory: base)
        guard let rack = loaded?.racks.first(where: { $0.name == name }), !preset.racks.isEmpty else {
            let why = problems.isEmpty ? "it holds no rack '\(name)'" : problems.map { "\($0)" }.joined(separator: "; ")
            Console.err("tandem: rack \(name): the session's document was not taken: \(why)\n")
            return nil
        }
        var next = preset
        next.racks[0].plugins = rack.plugins
        next.racks[0].gainDB = rack.gainDB
        next.racks[0].mix = rack.mix
        // Maps added or cleared in the session at run time (its marker maps come on the command line).
        next.maps = (loaded?.maps ?? []) + ((try? maps()) ?? [])
        return next
    }

    /// A supervised child's session: the rack, its maps and the session's server, folder, name, tempo and meter, all
    /// from the first document its session sends on `reader`'s channel (`Session.rackDocument`), read by the loader
    /// that reads presets, with its checks. Exits 2 with the loader's words when it does not load.
    func childPreset(_ reader: RackDocumentReader) -> Preset {
        guard let text = reader.first(within: 10) else {
            fail(.badInput, "rack \(name): no configuration from the session on fd \(documentFd ?? -1) within 10 s")
        }
        let (loaded, problems) = PresetLoader.parse(text, file: "rack document", baseDirectory: "/")
        guard let document = loaded, var rack = document.racks.first(where: { $0.name == name }) else {
            let why = problems.isEmpty ? "it holds no rack '\(name)'" : problems.map { "\($0)" }.joined(separator: "; ")
            fail(.badInput, "rack \(name): the session's configuration does not load: \(why)")
        }
        var p = Preset()
        // Its chain's state is kept in the session folder, so a restart brings it back.
        p.session = SessionRunner.oneShotSession(name: document.session.name, server: document.session.server,
                                                 directory: document.session.directory, onServerLoss: onServerLoss,
                                                 strictPlugins: false, controlPort: controlOptions.controlPort,
                                                 keepsPluginState: true)
        p.session.tempo = document.session.tempo
        p.session.meter = document.session.meter
        p.session.loudness = document.session.loudness
        // Marker maps come on the command line: a preset without a recorder cannot hold them.
        p.maps = document.maps + ((try? maps()) ?? [])
        rack.isolate = false
        // Maps listen to the rack's MIDI input: it has one (midi_in) even when no plugin takes MIDI.
        if rack.midiInputs == nil && !p.maps.isEmpty { rack.midiInputs = ["midi_in"] }
        p.racks = [rack]
        return p
    }

    /// The session this command runs: a preset with one rack, in this process.
    func makePreset() -> Preset {
        var p = Preset()
        // A supervised child keeps its chain's state in the session folder, so a restart brings it back; a rack run
        // by hand writes nothing.
        p.session = SessionRunner.oneShotSession(name: name, server: server.server,
                                                 directory: FileManager.default.currentDirectoryPath,
                                                 onServerLoss: onServerLoss, strictPlugins: plugins.strict,
                                                 controlPort: controlOptions.controlPort, keepsPluginState: child)
        p.session.tempo = tempo
        p.session.meter = SessionSection.Meter(meter) ?? SessionSection.Meter()
        var r = RackSection()
        r.name = name
        r.client = client ?? name
        r.inputs = !input.isEmpty ? input : inputs.map { n in (0..<n).map { "in_\($0 + 1)" } }
        // Maps listen to the rack's MIDI input: it has one (midi_in) even when no plugin takes MIDI.
        r.midiInputs = noMidiInput ? [] : !midiInput.isEmpty ? midiInput : map.isEmpty ? nil : ["midi_in"]
        r.midiOutputs = noMidiOutput ? [] : midiOutput.isEmpty ? nil : midiOutput
        r.outputs = !output.isEmpty ? output : outputs.map { n in (1...n).map { "out_\($0)" } }
        r.gainDB = gain
        r.mix = mix
        r.isolate = false
        r.plugins = plugins.specs
        r.loudness = loudness
        p.racks = [r]
        p.maps = (try? maps()) ?? []
        return p
    }

    func run() throws {
        if child {
            // A rack process ends with the session that started it, however that ends (even SIGKILL): its client
            // must not outlive the session's.
            if !ChildProcess.endWithParent() { fail(.failure, "the session that started this rack is gone") }
        }
        let runner = SessionRunner(server: server, json: controlOptions.json, noView: controlOptions.noView,
                                   liveViewOnPipes: false)
        // The session's documents: the first is a supervised child's configuration, the later ones the rack as its
        // re-applied preset has it (see `RackDocuments`).
        let documents = documentFd.map { RackDocumentReader(fd: $0, wake: runner.signals.wakeup) }
        var preset = child ? documents.map(childPreset) ?? makePreset() : makePreset()
        if !child {
            // What a map names must be there, as `preset check` requires of a preset's maps.
            let problems = preset.maps.flatMap { m -> [String] in
                var one = preset
                one.maps = [m]
                return PresetPluginCheck.mapProblems(one, file: "--map").map { "--map '\(m.description)': \($0.message)" }
            }
            if !problems.isEmpty {
                for p in problems { Console.err("tandem: \(p)\n") }
                fail(.badInput, "\(problems.count) problem(s) with --map; nothing started")
            }
        }
        runner.checkHTTP(controlOptions.httpAddress)
        runner.start(preset)
        guard let rack = runner.session.racks[name] else { fail(.failure, "the rack did not start") }
        if connectIn.isEmpty && connectOut.isEmpty && !child {
            Console.err("tandem: note: rack \(rack.client.name) has \(rack.inputs.count) input(s) and \(rack.outputs.count) "
                        + "output(s), not connected: a patchbay or jack_connect connects them (or give --connect-in/--connect-out)\n")
        }
        if !connectIn.isEmpty || !connectOut.isEmpty || !connectMidiIn.isEmpty || !connectMidiOut.isEmpty {
            let owner = "rack \(rack.client.name)"
            preset.connections = runner.rules(connectIn, ports: rack.inputs, towardUs: true, option: "--connect-in",
                                              owner: owner, widen: "--inputs")
                + runner.rules(connectOut, ports: rack.outputs, towardUs: false, option: "--connect-out", owner: owner,
                               widen: "--outputs")
                + runner.rules(connectMidiIn, names: rack.midiInputNames, towardUs: true, type: .midi,
                               option: "--connect-midi-in", owner: owner)
                + runner.rules(connectMidiOut, names: rack.midiOutputNames, towardUs: false, type: .midi,
                               option: "--connect-midi-out", owner: owner)
            runner.reapply(preset)
        }
        runner.openControl(explicit: controlOptions.controlPort, fallback: nil)
        runner.openHTTP(controlOptions.httpAddress)
        if let fd = heartbeatFd {
            var heart = RackHeartbeat(fd: fd)
            // A marker map's marker goes to the session, whose recorder adds it at the message's frame.
            let teller = heart
            runner.session.markRelay = { label, frameTime in teller.tell(kind: "mark", text: "\(frameTime) \(label)") }
            runner.session.controlRelay = { entry, frameTime in
                teller.tell(kind: "control", text: Session.controlRelayText(entry, frameTime: frameTime))
            }
            runner.tick = { session, events in
                for text in documents?.take() ?? [] {
                    if let next = takeDocument(text, into: preset) {
                        preset = next
                        runner.reapply(preset)
                    }
                }
                let rack = session.racks.first?.value
                heart.beat(cycles: rack?.cycles ?? 0, ready: true)
                heart.loudness(rack?.loudness ?? [])
                // The cycle's frame time: it stands still while the server is stopped (SIGSTOP, a debugger), where
                // `frameTime`, extrapolated from the clock, moved and got the rack killed as hung.
                if let rack, let seconds = heart.stalled(cycles: rack.cycles, frameTime: rack.client.cycleFrameTime) {
                    // A plugin hung in the process thread: this process goes, the session starts it again.
                    Console.err("tandem: rack \(rack.client.name): its process thread hung for "
                                + "\(String(format: "%.1f", seconds)) s; ending this process\n")
                    heart.hung(seconds: seconds)
                    kill(getpid(), SIGKILL)
                }
                // What changed here reaches the session's subscribers (a map's value, a relayed OSC set).
                for e in events {
                    switch e {
                    case .controlChanged, .bypassChanged, .chainLevelChanged, .presetLoaded, .mapAdded, .mapFailed,
                         .pluginProblem:
                        let (kind, text) = ControlProtocol.describe(e)
                        heart.tell(kind: kind, text: text)
                    default: break
                    }
                }
            }
        }
        runner.exit(runner.loop())
    }
}
