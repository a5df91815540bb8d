import ArgumentParser
import Foundation
import Jack

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Start a private dummy JACK server (unless one is running), show its graph, and stop it.")

    @OptionGroup var server: ServerOptions

    @Option(name: .long, help: "Keep the private server for this many seconds before stopping it.")
    var hold: Double = 0

    func run() throws {
        server.bootstrapLogging()
        var owned: JackServer?
        let name: String
        if let s = server.server ?? ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"], JackServer.probe(s) {
            name = s
            say("using the running JACK server '\(s)'")
        } else if JackServer.probe("default") && server.server == nil {
            name = "default"
            say("using the running JACK server 'default'")
        } else {
            name = JackServer.uniqueName("tandem-demo")
            do {
                owned = try JackServer(name: name)
            } catch {
                fail(.jackUnavailable, "cannot start a private JACK server: \(error)")
            }
            say("started a private dummy JACK server '\(name)' (48000 Hz, 256 frames)")
        }
        let client: JackClient
        do { client = try JackClient(name: "tandem-demo", server: name) } catch {
            owned?.stop()
            fail(.jackUnavailable, error.description)
        }
        say("ports on '\(name)':")
        for p in client.ports() where !p.hasPrefix("tandem-demo:") { say("  \(p)") }
        client.close()
        if hold > 0 { usleep(UInt32(hold * 1_000_000)) }
        if let owned {
            owned.stop()
            say("stopped the private server '\(name)'")
        }
    }
}

