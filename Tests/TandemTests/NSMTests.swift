import Testing
import Foundation
import Control
import Jack
import NSMServerFixture
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `tandem run` as a Non Session Manager client, driven by `NSMServerFixture` (the server side of API 1.1 written
/// from the published text) the way nsmd drives its clients.
@Suite(.serialized) struct NSMTests {
    static let amp = "http://plugin.org.uk/swh-plugins/amp"

    func writeTemplate(_ dir: URL) throws -> String {
        let path = dir.appendingPathComponent("template.toml").path
        try """
            [session]
            name = "nsmtest"
            [recorder]
            channels = 2
            start = "armed"
            [[recorder.plugins]]
            uri = "\(Self.amp)"
            name = "level"
            controls = { gain = 0 }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func files(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
    }

    /// Sends one control message to Tandem's control port and returns the reply.
    func control(_ port: Int, _ m: OSCMessage) throws -> OSCMessage? {
        let socket = try UDPSocket(port: 0)
        socket.send(m.encode(), to: UDPSocket.loopback(port: port))
        guard socket.wait(seconds: 5), let d = socket.receive(limit: 65536),
              case .success(let reply) = OSCMessage.decode(bytes: d.bytes) else { return nil }
        return reply
    }

    /// new → add Tandem → open → record 2 s → save → switch to a second session → record → save → close: each
    /// project folder holds its preset, takes and plugin state; the JACK clients carry the client id; every message
    /// came from the announcing socket; dirty and clean are reported.
    @Test func openRecordSaveSwitchClose() throws {
        let server = try TestEnvironment.server("nsm")
        defer { server.stop() }
        let root = TestEnvironment.temporaryDirectory("nsm")
        let template = try writeTemplate(root)
        let nsm = try NSMServerFixture()
        let port = Int.random(in: 20000...40000)
        // "add": the server starts the client with NSM_URL set (nsmd passes no arguments; here a template).
        let tandem = try TandemProcess(["run", template, "--no-view", "--control-port", "\(port)"], server: server,
                                       extraEnvironment: ["NSM_URL": nsm.url],
                                       log: root.appendingPathComponent("run.log").path)
        defer { if tandem.process.isRunning { _ = tandem.process.stop(SIGKILL) } }
        let observer = try JackClient(name: "nsm-observer", server: server.name)
        defer { observer.close() }

        let announce = try #require(nsm.waitForAnnounce(timeout: 15), "no announce: \(tandem.output)")
        #expect(announce.applicationName == "Tandem")
        for cap in [":switch:", ":dirty:", ":message:", ":progress:"] { #expect(announce.capabilities.contains(cap)) }
        #expect(announce.apiMajor == 1 && announce.apiMinor == 1)
        #expect(announce.pid == tandem.process.pid)
        // Nothing registers with JACK before open.
        usleep(300_000)
        #expect(observer.ports(matching: "tandem-rec").isEmpty, "a JACK client before open")

        // open: a new project.
        let first = root.appendingPathComponent("Session A/Tandem.nAAAA").path
        let opened = try #require(nsm.open(path: first, displayName: "Session A", clientID: "Tandem.nAAAA"), "\(tandem.output)")
        #expect(opened.message.path == "/reply", "\(opened)")
        #expect(observer.ports(matching: "^Tandem\\.nAAAA/tandem-rec:").sorted() == ["Tandem.nAAAA/tandem-rec:in_1", "Tandem.nAAAA/tandem-rec:in_2"])
        #expect(nsm.waitFor("/nsm/client/is_clean", timeout: 5) != nil)

        // A control change makes it dirty.
        #expect(tandem.waitFor("control protocol listening"))
        let set = try control(port, OSCMessage("/tandem/plugin/set", [.string("recorder"), .string("level"), .string("gain"), .float(-6)]))
        #expect(set?.arguments.first?.string == "ok", "\(String(describing: set))")
        let mark = nsm.received.count
        #expect(nsm.waitFor("/nsm/client/is_dirty", after: mark, timeout: 5) != nil, "\(nsm.received)")

        // Record 2 s.
        tandem.process.signal(SIGUSR1)
        #expect(tandem.waitFor("take 1 recording"), "\(tandem.output)")
        usleep(2_000_000)
        tandem.process.signal(SIGUSR2)
        #expect(tandem.waitFor("take 1 stopped"), "\(tandem.output)")

        // save: the preset with the changed control, plugin state; clean again.
        let mark2 = nsm.received.count
        let saved = try #require(nsm.save(), "\(tandem.output)")
        #expect(saved.message.path == "/reply", "\(saved)")
        #expect(nsm.waitFor("/nsm/client/is_clean", after: mark2, timeout: 5) != nil)
        let presetA = try String(contentsOfFile: first + "/tandem.toml", encoding: .utf8)
        #expect(presetA.contains("gain = -6"), "\(presetA)")
        #expect(!presetA.contains("nAAAA"), "the client id went into the project file: \(presetA)")
        #expect(FileManager.default.fileExists(atPath: first + "/nsmtest.plugins/recorder"), "\(files(first))")
        let takesA = files(first).filter { $0.hasSuffix(".wav") }
        #expect(takesA.count == 1, "\(files(first))")

        // switch: another session's project; the clients come back under the new client id.
        let second = root.appendingPathComponent("Session B/Tandem.nBBBB").path
        let switched = try #require(nsm.open(path: second, displayName: "Session B", clientID: "Tandem.nBBBB"), "\(tandem.output)")
        #expect(switched.message.path == "/reply", "\(switched)")
        #expect(observer.ports(matching: "^Tandem\\.nBBBB/tandem-rec:").count == 2)
        #expect(observer.ports(matching: "^Tandem\\.nAAAA/").isEmpty)
        tandem.process.signal(SIGUSR1)
        #expect(tandem.waitFor("take 2 recording"), "\(tandem.output)")
        usleep(2_000_000)
        tandem.process.signal(SIGUSR2)
        #expect(tandem.waitFor("take 2 stopped"), "\(tandem.output)")
        #expect(nsm.save()?.message.path == "/reply")

        // close: save came first; then SIGTERM, exit 0.
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output)")
        nsm.pump(seconds: 0.2)

        for (folder, take) in [(first, 1), (second, 2)] {
            let names = files(folder)
            #expect(names.contains("tandem.toml"), "\(folder): \(names)")
            #expect(FileManager.default.fileExists(atPath: folder + "/nsmtest.plugins/recorder"), "\(folder): \(names)")
            let wavs = names.filter { $0.hasSuffix(".wav") }
            #expect(wavs.count == 1 && wavs[0].contains(String(format: "%03d", take)), "\(folder): \(names)")
            if let wav = wavs.first {
                let audio = try TestEnvironment.readAudio(folder + "/" + wav)
                let seconds = Double(audio.samples.count / audio.channels) / Double(audio.sampleRate)
                print("measured: NSM take \(take) in \(folder): \(String(format: "%.3f", seconds)) s")
                #expect(seconds > 1.8 && seconds < 3, "take \(take): \(seconds) s")
            }
            #expect(names.contains { $0.hasSuffix(".json") }, "\(folder): \(names)")
        }
        #expect(nsm.foreignSources.isEmpty, "messages from another socket than the announce's: \(nsm.foreignSources)")
        #expect(nsm.malformed == 0)
        #expect(nsm.received.contains { $0.message.path == "/nsm/client/message" }, "\(nsm.received)")
        #expect(nsm.received.contains { $0.message.path == "/nsm/client/progress" }, "\(nsm.received)")
        print("measured: NSM messages from Tandem: \(nsm.received.count), all from \(announce.source)")
    }

    /// A malformed message from the server and a server that goes away: a log line each, the session goes on.
    @Test func malformedMessagesAndAVanishingServerLeaveTheSessionRunning() throws {
        let server = try TestEnvironment.server("nsmbad")
        defer { server.stop() }
        let root = TestEnvironment.temporaryDirectory("nsmbad")
        let template = try writeTemplate(root)
        var nsm: NSMServerFixture? = try NSMServerFixture()
        let tandem = try TandemProcess(["run", template, "--no-view", "--control-port", "0"], server: server,
                                       extraEnvironment: ["NSM_URL": nsm?.url ?? ""],
                                       log: root.appendingPathComponent("run.log").path)
        defer { if tandem.process.isRunning { _ = tandem.process.stop(SIGKILL) } }
        _ = try #require(nsm?.waitForAnnounce(timeout: 15), "\(tandem.output)")
        let project = root.appendingPathComponent("S/Tandem.nCCCC").path
        #expect(nsm?.open(path: project, displayName: "S", clientID: "Tandem.nCCCC")?.message.path == "/reply")

        // Garbage, an open with the wrong arguments, an unknown message.
        nsm?.sendRaw(Array("not osc at all".utf8))
        nsm?.send(OSCMessage("/nsm/client/open", [.int(3)]))
        nsm?.send(OSCMessage("/nsm/client/frobnicate", [.string("x")]))
        let answer = nsm?.waitForAnswer(to: "/nsm/client/open", after: nsm?.received.count ?? 0, timeout: 5)
        #expect(answer?.message.path == "/error", "\(String(describing: answer))")
        #expect(tandem.waitFor("malformed message from the server skipped"), "\(tandem.output)")
        #expect(tandem.waitFor("malformed /nsm/client/open skipped"), "\(tandem.output)")
        #expect(tandem.waitFor("unknown message /nsm/client/frobnicate"), "\(tandem.output)")

        // The server goes away; the next message Tandem sends (a take's) finds its port closed.
        nsm = nil
        tandem.process.signal(SIGUSR1)
        #expect(tandem.waitFor("take 1 recording"), "\(tandem.output)")
        #expect(tandem.waitFor("is gone (its port is closed); the session goes on"), "\(tandem.output)")
        usleep(500_000)
        tandem.process.signal(SIGUSR2)
        #expect(tandem.waitFor("take 1 stopped"), "\(tandem.output)")
        #expect(tandem.process.isRunning)
        tandem.process.signal(SIGTERM)
        #expect(tandem.process.wait(timeout: 15) == 0, "\(tandem.output)")
        let wavs = files(project).filter { $0.hasSuffix(".wav") }
        #expect(wavs.count == 1, "\(files(project))")
    }
}
