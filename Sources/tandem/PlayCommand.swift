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

    @OptionGroup var plugins: PluginOptions

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
        if !(tail >= 0 && tail <= 600) { throw ValidationError("--tail must be 0 to 600 seconds") }
    }

    func parseMap(_ s: String) -> [Int]? {
        let fields = s.split(separator: ",", omittingEmptySubsequences: false)
        let parts = fields.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return parts.isEmpty || parts.count != fields.count ? nil : parts
    }

    func makeConfig() -> PlayerConfig {
        var c = PlayerConfig()
        c.clientName = client
        let count = channels ?? (try? SoundFileReader(path: files[0]).channels) ?? 2
        c.ports = !port.isEmpty ? port : (1...max(1, count)).map { "out_\($0)" }
        c.queue = files
        c.loop = LoopMode(rawValue: loop) ?? .none
        c.gainDB = gain
        c.channelMap = map.flatMap(parseMap)
        c.resampleQuality = ResampleQuality(rawValue: quality) ?? .high
        c.ringSeconds = ring
        c.startImmediately = false
        c.plugins = plugins.specs
        return c
    }

    func run() throws {
        let signals = SignalWatcher.install()
        server.bootstrapLogging()
        let config = makeConfig()
        let problems = config.problems()
        if !problems.isEmpty { fail(.badInput, problems.joined(separator: "; ")) }
        let player: Player
        do {
            player = try Player(config: config, server: server.server, logger: Logger(label: "tandem.play"),
                                notify: signals.wakeup, strictPlugins: plugins.strict)
        } catch {
            fail(error.code == .jack ? .jackUnavailable : .badInput, error.message)
        }
        PluginOptions.announce(player.plugins.chain, engine: "player")
        do {
            try Patching.connectDestinations(connect, from: player.ports.map(\.name), client: player.client)
        } catch {
            player.close()
            fail(.badInput, "\(error)")
        }
        if connect.isEmpty {
            Console.err("tandem: note: \(player.ports.count) output port(s) \(player.client.name):\(config.ports.first ?? "")... "
                        + "are not connected: the sound goes nowhere until a patchbay or jack_connect connects them "
                        + "(or give --connect 'system:playback_.*')\n")
        }
        var startFrame = seekFrame ?? 0
        if let seek, let r = try? SoundFileReader(path: files[0]) {
            startFrame = Limits.frames(seconds: seek, rate: Double(r.sampleRate)) ?? 0
        }
        if startFrame > 0 { player.seek(item: 0, frame: startFrame) }
        player.waitForFill(seconds: 5)
        var startDeadline = startAt.flatMap(Preset.secondsOfDay).map { Preset.nextOccurrence(ofSecondsOfDay: $0) }
        if !wait && startDeadline == nil { player.play() }

        var failed = false
        loop: while true {
            // Signals and the player's events post the wakeup; the timeout is for a scheduled start and for noticing
            // the server going away.
            signals.wakeup.wait(seconds: startDeadline.map { $0.timeIntervalSinceNow < 1 ? 0.02 : 0.25 } ?? 0.25)
            if signals.take(SIGINT) > 0 || signals.take(SIGTERM) > 0 { break }
            if signals.take(SIGUSR1) > 0 { player.play() }
            if let deadline = startDeadline, Date().addingTimeInterval(0.1) >= deadline {
                // Sample-accurate: the JACK frame that corresponds to the requested moment.
                let ahead = max(0, deadline.timeIntervalSinceNow)
                player.play(atFrameTime: player.client.frameTime &+ UInt32(ahead * Double(player.sampleRate)))
                startDeadline = nil
            }
            if signals.take(SIGUSR2) > 0 { player.pause() }
            if player.client.wasShutDown {
                player.close()
                fail(.jackUnavailable, "the JACK server shut the player down")
            }
            for event in player.drainEvents() {
                switch event {
                case .itemStarted(let item, let path):
                    let p = player.position
                    say("playing \(item + 1)/\(files.count): \(path) (\(String(format: "%.3f", p.duration)) s)")
                case .itemFailed(_, let path, let message):
                    failed = true
                    Console.err("tandem: cannot play '\(path)': \(message)\n")
                case .queueFinished:
                    // The last frames went out in the cycle that consumed them, and the clients after us read them
                    // in that graph run. Two more of our cycles mean the run is over (JACK starts the next one
                    // when it is); a fixed pause lost the end when the machine was late.
                    // With plugins, the chain keeps running on silence for its latency plus the tail time, so the
                    // output of the last frames (and a reverb's or delay's tail) goes out before the exit.
                    let chain = player.plugins.chain.flatMap { $0.isEmpty ? nil : $0 }
                    let ringOut = chain.map { $0.latency + Int((tail * Double(player.sampleRate)).rounded()) } ?? 0
                    let period = max(1, player.client.bufferSize)
                    let after = player.cycles + 2 + (ringOut + period - 1) / period
                    let pause = UInt32(period * 1_000_000 / max(1, player.sampleRate))
                    let deadline = Date().addingTimeInterval(1 + Double(ringOut) / Double(max(1, player.sampleRate)))
                    while player.cycles < after && Date() < deadline {
                        if signals.take(SIGINT) > 0 || signals.take(SIGTERM) > 0 { break }
                        usleep(pause)
                    }
                    say("finished: \(player.playedFrames) frames played, \(player.underrunFrames) underrun frames, "
                        + "\(player.missedFrames) frames of skipped cycles, \(player.xruns) xruns"
                        + (chain == nil ? "" : ", \(ringOut) frames of plugin latency and tail rung out"))
                    break loop
                }
            }
        }
        let (cost, period, rate) = (player.cycleCost, player.client.bufferSize, player.sampleRate)
        player.close()
        say(cycleCostLine(cost, period: period, rate: rate))
        if failed { Foundation.exit(ExitStatus.badInput.rawValue) }
    }
}
