import ArgumentParser
import Engine
import Foundation
import Jack
import Logging
import SoundFile

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play a test signal through the player into the recorder over real JACK connections, then verify the take.",
        discussion: """
            Uses the running JACK server if there is one (and says so); otherwise starts a private dummy server \
            that it owns and stops. Takes about 10 s. Exit 0 when the take matches the source bit for bit.
            """)

    @OptionGroup var server: ServerOptions

    @Option(name: [.short, .long], help: "Where the signal, the take and its report go (default: a new folder under $TMPDIR).")
    var dir: String?

    @Option(name: .long, help: "Length of the test signal in seconds.")
    var seconds: Double = 8

    func validate() throws {
        if !(seconds >= 1 && seconds <= 600) { throw ValidationError("--seconds must be 1 to 600") }
    }

    func run() throws {
        let signals = SignalWatcher.install()
        server.bootstrapLogging()
        let logger = Logger(label: "tandem.demo")

        // 1. A server: the one running, or a private one we own.
        var owned: JackServer?
        let name: String
        let requested = server.server ?? ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"] ?? "default"
        if JackServer.probe(requested) {
            name = requested
            say("using the running JACK server '\(name)'")
        } else {
            name = JackServer.uniqueName("tandem-demo")
            do {
                owned = try JackServer(name: name)
            } catch {
                fail(.jackUnavailable, "no JACK server is running and a private one could not be started: \(error)")
            }
            say("no JACK server running: started a private dummy server '\(name)' (48000 Hz, 256 frames)")
        }
        defer {
            if let owned {
                owned.stop()
                say("stopped the private server '\(name)'")
            }
        }

        // 2. The signal, the recorder and the player.
        let folder = dir ?? (NSTemporaryDirectory() as NSString).appendingPathComponent(
            "tandem-demo-\(Int(Date().timeIntervalSince1970))-\(getpid())")
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var recorderConfig = RecorderConfig()
        recorderConfig.clientName = "tandem-demo-rec"
        recorderConfig.ports = ["in_1", "in_2"]
        recorderConfig.directory = folder
        recorderConfig.session = "demo"
        let recorder: Recorder
        do { recorder = try Recorder(config: recorderConfig, server: name, logger: Logger(label: "tandem.rec")) } catch {
            fail(error.code == .jack ? .jackUnavailable : .badInput, error.message)
        }
        let sourcePath = (folder as NSString).appendingPathComponent("demo-signal.wav")
        let source: [Float]
        do {
            source = try TestSignal.write(to: sourcePath, seconds: seconds, sampleRate: recorder.sampleRate)
        } catch {
            recorder.close()
            fail(.failure, "cannot write the test signal: \(error)")
        }
        var playerConfig = PlayerConfig()
        playerConfig.clientName = "tandem-demo-play"
        playerConfig.queue = [sourcePath]
        playerConfig.startImmediately = false
        let player: Player
        do { player = try Player(config: playerConfig, server: name, logger: Logger(label: "tandem.play")) } catch {
            recorder.close()
            fail(.jackUnavailable, error.message)
        }
        do {
            for c in 1...2 { try player.client.connect("tandem-demo-play:out_\(c)", "tandem-demo-rec:in_\(c)") }
        } catch {
            player.close()
            recorder.close()
            fail(.jackUnavailable, "\(error)")
        }
        say("playing \(sourcePath) (\(String(format: "%.1f", seconds)) s) through tandem-demo-play:out_1,2 "
            + "into tandem-demo-rec:in_1,2")

        // 3. Record while playing, with a line of meters and progress twice a second.
        recorder.startTake()
        player.waitForFill(seconds: 5)
        player.play()
        var lastLine = Date.distantPast
        var interrupted = false
        while !player.isFinished {
            signals.wakeup.wait(seconds: 0.05)
            if signals.take(SIGINT) > 0 || signals.take(SIGTERM) > 0 {
                interrupted = true
                break
            }
            _ = player.drainEvents()
            if Date().timeIntervalSince(lastLine) >= 0.5 {
                lastLine = Date()
                let m = recorder.readMeters() ?? []
                let p = player.position
                let levels = m.map { String(format: "%6.1f dB peak %6.1f dB rms", MeterReading.decibels($0.peak),
                                            MeterReading.decibels($0.rms)) }
                say(String(format: "  %5.1f / %.1f s  ", p.seconds, p.duration) + levels.joined(separator: "  |  "))
            }
        }
        usleep(200_000)
        recorder.stopTake()
        player.close()
        recorder.close()
        var report: (TakeReport, String)?
        for event in recorder.drainEvents() {
            if case .takeFinished(let r, let path) = event { report = (r, path) }
        }
        guard let (take, sidecar) = report, let file = take.chunks.first?.files.first else {
            fail(.failure, "the demo take was not written")
        }
        if interrupted { say("interrupted") }

        // 4. Verify the take against the source, bit for bit.
        let recorded = (try? SoundFileReader(path: file).readAll()) ?? []
        let (matched, total) = TestSignal.verify(source: source, recorded: recorded, channels: 2)
        say("take:   \(file)")
        say("report: \(sidecar)")
        say("verified: \(matched) of \(total) source frames arrived bit for bit "
            + "(\(take.droppedFrames) dropped, \(take.xruns) xruns, \(player.underrunFrames) underrun frames)")
        logger.debug("demo done", metadata: ["folder": "\(folder)"])
        if matched != total && !interrupted {
            owned?.stop()
            fail(.failure, "the take does not match the source")
        }
    }
}
