import ArgumentParser
import Engine
import Foundation
import Jack
import Logging
import Plugins
import Presets
import SoundFile

struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play files back to back into JACK output ports, resampled to the server's rate when needed.",
        discussion: """
            Exits 0 when the queue has played out (never with --loop), 2 if a file could not be played (the others \
            still play). SIGINT/SIGTERM stop at once; SIGUSR1 plays, SIGUSR2 pauses.
            """)

    @OptionGroup var server: ServerOptions

    @Argument(help: "Files to play, in order.")
    var files: [String]

    @Option(name: .long, help: "JACK client name.")
    var client = "tandem-play"

    @Option(name: [.short, .long], help: "Number of output ports (out_1..out_N). Default: the first file's channels.")
    var channels: Int?

    @Option(name: .long, help: "Output port short name, once per port, in channel order (repeatable).")
    var port: [String] = []

    @Option(name: .long, help: "MIDI output port short name (repeatable). Default: midi_out when a file to play is a MIDI file.")
    var midiPort: [String] = []

    @Option(name: .long, help: "Destination port (exact name or regular expression) for the outputs, in order (repeatable).")
    var connect: [String] = []

    @Option(name: .long, help: "Loop: none, item (the current file), all (the whole queue).")
    var loop = "none"

    @Option(name: .long, help: "Gain in dB (negative values as --gain=-6).")
    var gain: Double = 0

    @Option(name: .long, help: "For each output port, the file channel it plays (1-based, 0 = silence), e.g. 1,1 or 2,1.")
    var map: String?

    @Option(name: .long, help: "Resampling quality: low, medium, high, very-high.")
    var quality = "high"

    @Option(name: .long, help: "Start this many seconds into the first file.")
    var seek: Double?

    @Option(name: .long, help: "Start at this frame of the first file.")
    var seekFrame: Int?

    @Flag(name: .long, help: "Cue the queue but wait for SIGUSR1 before playing.")
    var wait = false

    @Option(name: .long, help: "Start playing at this local time, HH:MM or HH:MM:SS (cued until then).")
    var startAt: String?

    @Option(name: .long, help: "Playback ring size in seconds.")
    var ring: Double = 2

    @Flag(name: .long, help: "Measure the outputs' EBU R128 loudness (after the chain and the gain), shown in the status.")
    var loudness = false

    @OptionGroup var plugins: PluginOptions

    @Option(name: .long, help: "When the JACK server goes away: stop (exit 3) or resume (wait for it, then go on where playback was).")
    var onServerLoss = "stop"

    @OptionGroup var controlOptions: ControlOptions

    @Option(name: .long, help: "With --plugin: after the queue has played, keep the chain running this many seconds past its reported latency, so a delay's or reverb's tail rings out before the exit.")
    var tail: Double = 2

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one file to play") }
        if let channels, !Limits.channels.contains(channels) { throw ValidationError("--channels must be 1 to \(Limits.channels.upperBound)") }
        if channels != nil && !port.isEmpty { throw ValidationError("give either --channels or --port, not both") }
        if LoopMode(rawValue: loop) == nil { throw ValidationError("unknown --loop '\(loop)' (none, item, all)") }
        if ResampleQuality(rawValue: quality) == nil {
            throw ValidationError("unknown --quality '\(quality)' (low, medium, high, very-high)")
        }
        if let map, parseMap(map) == nil { throw ValidationError("--map '\(map)' is not a list like 1,2 or 1,1") }
        if seek != nil && seekFrame != nil { throw ValidationError("give either --seek or --seek-frame") }
        if let seek, !Limits.contains(Limits.seekSeconds, seek) {
            throw ValidationError("--seek must be \(Limits.describe(Limits.seekSeconds, unit: " seconds"))")
        }
        if let seekFrame, !Limits.seekFrames.contains(seekFrame) {
            throw ValidationError("--seek-frame must be 0 to \(Limits.seekFrames.upperBound)")
        }
        if !Limits.contains(Limits.gainDB, gain) { throw ValidationError("--gain must be \(Limits.describe(Limits.gainDB, unit: " dB"))") }
        if !Limits.contains(Limits.playerRingSeconds, ring) {
            throw ValidationError("--ring must be \(Limits.describe(Limits.playerRingSeconds, unit: " seconds"))")
        }
        if let startAt, Preset.secondsOfDay(startAt) == nil {
            throw ValidationError("--start-at '\(startAt)' is not a time of day (HH:MM or HH:MM:SS)")
        }
        if startAt != nil && wait { throw ValidationError("give either --wait or --start-at") }
        if ServerLossPolicy(rawValue: onServerLoss) == nil {
            throw ValidationError("unknown --on-server-loss '\(onServerLoss)' (stop, resume)")
        }
        if !(tail >= 0 && tail <= 600) { throw ValidationError("--tail must be 0 to 600 seconds") }
    }

    func parseMap(_ s: String) -> [Int]? {
        let fields = s.split(separator: ",", omittingEmptySubsequences: false)
        let parts = fields.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return parts.isEmpty || parts.count != fields.count ? nil : parts
    }

    /// The session this command runs: a preset with one player, built from the options (what `run` would read
    /// from a file saying the same).
    func makePreset() -> Preset {
        var p = Preset()
        p.session = SessionRunner.oneShotSession(name: "play", server: server.server, onServerLoss: onServerLoss,
                                                 strictPlugins: plugins.strict, controlPort: controlOptions.controlPort)
        p.session.exitAfter = .playback
        var pl = PlayerSection()
        pl.client = client
        let count = channels ?? files.first.flatMap { try? SoundFileReader(path: $0).channels } ?? 2
        pl.ports = !port.isEmpty ? port : (1...max(1, count)).map { "out_\($0)" }
        pl.queue = files
        pl.midiPorts = midiPort.isEmpty ? nil : midiPort
        pl.loop = LoopMode(rawValue: loop) ?? .none
        pl.gainDB = gain
        pl.channelMap = map.flatMap(parseMap)
        pl.quality = ResampleQuality(rawValue: quality) ?? .high
        pl.seekSeconds = seek ?? 0
        pl.seekFrame = seekFrame
        pl.start = wait ? .command : .immediately
        pl.startAt = startAt
        pl.tailSeconds = tail
        pl.ringSeconds = ring
        pl.plugins = plugins.specs
        pl.loudness = loudness
        p.player = pl
        return p
    }

    func run() throws {
        let runner = SessionRunner(server: server, json: controlOptions.json, noView: controlOptions.noView,
                                   liveViewOnPipes: false, printer: EventPrinter(playStyle: true))
        var preset = makePreset()
        // The checks the session's player would make, before anything opens.
        let problems = PlayerConfig(section: preset.player ?? PlayerSection(), session: preset.session).problems()
        if !problems.isEmpty { fail(.badInput, problems.joined(separator: "; ")) }
        // Connected before anything plays, so nothing is played into the void: cued by the first apply, started
        // after the second.
        let start = preset.player?.start
        preset.player?.start = connect.isEmpty ? start ?? .immediately : .command
        runner.checkHTTP(controlOptions.httpAddress)
        runner.start(preset)
        guard let player = runner.session.player else { fail(.failure, "the player did not start") }
        if connect.isEmpty {
            Console.err("tandem: note: \(player.ports.count) output port(s) \(player.client.name):\(player.ports.first?.shortName ?? "")... "
                        + "are not connected: the sound goes nowhere until a patchbay or jack_connect connects them "
                        + "(or give --connect 'system:playback_.*')\n")
        } else {
            // A pattern that names no audio input but a MIDI input (a synth's `midi_in`) is for the MIDI ports.
            let audioNames = player.ports.map(\.name), midiNames = player.midiOutputNames
            let fits = { (p: String, names: [String], type: PortType) in
                (try? runner.session.orderedRules([p], ports: names, towardUs: false, type: type)) != nil
            }
            let midi = connect.filter { !midiNames.isEmpty && !fits($0, audioNames, .audio) && fits($0, midiNames, .midi) }
            let audio = connect.filter { !midi.contains($0) }
            let owner = "the player \(player.client.name)"
            preset.connections = runner.rules(audio, ports: player.ports, towardUs: false, option: "--connect", owner: owner,
                                              widen: port.isEmpty ? "-c" : nil)
                + runner.rules(midi, names: midiNames, towardUs: false, type: .midi, option: "--connect", owner: owner)
            preset.player?.start = start ?? .immediately
            runner.reapply(preset)
            if start == .immediately && startAt == nil { runner.session.play() }
        }
        runner.openControl(explicit: controlOptions.controlPort, fallback: nil)
        runner.openHTTP(controlOptions.httpAddress)
        let end = runner.loop()
        if case .playbackComplete = end, let p = runner.session.player {
            let ringOut = runner.session.playbackRingOut ?? 0
            say("finished: \(p.playedFrames) frames played, \(p.underrunFrames) underrun frames, "
                + "\(p.missedFrames) frames of skipped cycles, \(p.xruns) xruns"
                + (p.plugins.chain.map { $0.isEmpty } ?? true ? "" : ", \(ringOut) frames of plugin latency and tail rung out"))
        }
        runner.exit(end, failedItems: runner.session.failedItems)
    }
}
