import ArgumentParser
import Control
import Coordinator
import Engine
import Foundation
import Jack
import Logging
import Presets
import SoundFile
import Takes

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

    @Flag(name: .long, help: "Status as JSON lines instead of the live view.")
    var json = false

    func validate() throws {
        if !(seconds >= 1 && seconds <= 600) { throw ValidationError("--seconds must be 1 to 600") }
    }

    func run() throws {
        let signals = SignalWatcher.install()
        let view = LiveView(json: json)
        server.bootstrapLogging(quieter: view.mode != .plain)
        let logger = Logger(label: "tandem.demo")

        // 0. The folder, before anything starts: one that cannot be made or takes no files is exit 2.
        let folder = dir ?? (NSTemporaryDirectory() as NSString).appendingPathComponent(
            "tandem-demo-\(Int(Date().timeIntervalSince1970))-\(getpid())")
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            fail(.badInput, "-d \(folder): the folder cannot be made: \(error.localizedDescription)")
        }
        if let why = WritableFolder.problem(folder) { fail(.badInput, "-d \(folder): the folder takes no files: \(why)") }

        // 1. A server: the one running, or a private one we own.
        var owned: JackServer?
        let name: String
        let requested = JackServer.effectiveName(server.server)
        if JackServer.probe(requested) {
            name = requested
            say("using the running JACK server '\(name)'")
        } else {
            name = JackServer.uniqueName("tandem-demo")
            do {
                owned = try JackServer(name: name, realtime: JackServer.realtimeAllowed)
            } catch {
                fail(.jackUnavailable, "no JACK server is running and a private one could not be started: \(error)")
            }
            say("no JACK server running: started a private dummy server '\(name)' (48000 Hz, 256 frames"
                + (JackServer.realtimeAllowed ? ", real-time)" : ")"))
        }
        defer {
            if let owned {
                owned.stop()
                say("stopped the private server '\(name)'")
            }
        }

        // 2. The signal, and a built-in preset: a player feeding a recorder, both starting on the same frame.
        let rate: Int
        do {
            let probe = try JackClient(name: "tandem-demo-probe", server: name)
            rate = probe.sampleRate
            probe.close()
        } catch {
            fail(.jackUnavailable, error.description)
        }
        let sourcePath = (folder as NSString).appendingPathComponent("demo-signal.wav")
        let source: [Float]
        do {
            source = try TestSignal.write(to: sourcePath, seconds: seconds, sampleRate: rate)
        } catch {
            fail(.failure, "cannot write the test signal: \(error)")
        }
        var preset = Preset()
        preset.session.name = "demo"
        preset.session.server = name
        preset.session.directory = folder
        var rec = RecorderSection()
        rec.client = "tandem-demo-rec"
        rec.maxDurationSeconds = seconds + 0.5
        preset.recorder = rec
        var play = PlayerSection()
        play.client = "tandem-demo-play"
        play.queue = [sourcePath]
        play.start = .withRecorder
        preset.player = play
        preset.connections = [ConnectionRule(from: PortPattern("tandem-demo-play:out_*"),
                                             to: PortPattern("tandem-demo-rec:in_*"))]
        say("playing \(sourcePath) (\(String(format: "%.1f", seconds)) s) through tandem-demo-play:out_1,2 "
            + "into tandem-demo-rec:in_1,2")

        // 3. Record while playing, with the live view.
        let session = Session(logger: logger)
        do { try session.apply(preset) } catch {
            session.close()
            fail(error.code == .jack ? .jackUnavailable : .failure, error.message)
        }
        let printer = EventPrinter()
        var report: (TakeReport, String)?
        var interrupted = false
        var lastMeters = Date.distantPast
        while report == nil {
            signals.wakeup.wait(seconds: 0.02)
            if signals.take(SIGINT) > 0 || signals.take(SIGTERM) > 0 {
                interrupted = true
                session.stopTake()
            }
            let outcome = session.poll()
            if Date().timeIntervalSince(lastMeters) >= 0.05 {
                session.sampleMeters()
                lastMeters = Date()
            }
            let events = session.drainEvents()
            for case .recorder(.takeFinished(let r, let path)) in events { report = (r, path) }
            view.update(session.status(), events: printer.lines(events))
            if case .finished = outcome, report == nil, session.recorder == nil { break }
        }
        view.finish()
        let underruns = session.player?.underrunFrames ?? 0
        let playerMissed = session.player?.missedFrames ?? 0
        session.close()
        guard let (take, sidecar) = report, let file = take.chunks.first?.files.first else {
            fail(.failure, "the demo take was not written")
        }
        if interrupted { say("interrupted") }

        // 4. Verify the take against the source, bit for bit.
        let recorded = (try? SoundFileReader(path: file).readAll()) ?? []
        let (matched, total, firstMismatch) = TestSignal.verify(source: source, recorded: recorded, channels: 2)
        say("take:   \(file)")
        say("report: \(sidecar)")
        say("verified: \(matched) of \(total) source frames arrived bit for bit "
            + "(\(take.droppedFrames) dropped, \(take.missedFrames ?? 0) missed, \(take.xruns) xruns, \(underruns) underrun frames, "
            + "\(playerMissed) frames of cycles skipped for the player)")
        if matched != total && !interrupted {
            owned?.stop()
            let losses = take.xruns + take.droppedFrames + (take.missedFrames ?? 0) + underruns + abs(playerMissed)
            fail(.failure, "the take does not match the source from source frame \(firstMismatch ?? 0) on"
                 + (losses > 0 ? " (the report above counts what the server or the machine lost)" : ""))
        }
    }
}
