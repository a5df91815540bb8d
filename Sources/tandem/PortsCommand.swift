import ArgumentParser
import Foundation
import Jack

struct PortsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ports", abstract: "List the JACK graph: every port and what it is connected to.")

    @OptionGroup var server: ServerOptions

    func run() throws {
        server.bootstrapLogging()
        let client: JackClient
        do {
            client = try JackClient(name: "tandem-ports-\(getpid())", server: server.server)
        } catch {
            fail(.jackUnavailable, error.description)
        }
        defer { client.close() }
        say("server: \(JackServer.effectiveName(server.server))  rate: \(client.sampleRate)  period: \(client.bufferSize)")
        for port in client.ports() where !port.hasPrefix(client.name + ":") {
            let direction = client.isOutput(port) == true ? "out" : "in "
            let links = client.connections(of: port)
            say("\(direction) \(port)" + (links.isEmpty ? "" : "  -> " + links.joined(separator: ", ")))
        }
    }
}
