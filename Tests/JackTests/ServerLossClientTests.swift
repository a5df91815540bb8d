import Foundation
@testable import Jack
import Testing
import TestSupport

/// libjack2 frees every client of the process at the first `jack_client_open` after one of them was shut down (its
/// server gone), a failed open or a probe included. A session that still held such a handle crashed in
/// `jack_deactivate` or `jack_client_close` when the server died again while it was being restored (issue 43,
/// item A). Before the fix this test crashed the test process in its last loop (or timed out waiting, the clients
/// freed before their shutdown callbacks ran).
@Suite(.serialized) struct ServerLossClientTests {
    @Test func clientsOfALostServerAreNeverTouchedAfterTheNextOpen() throws {
        let name = JackServer.uniqueName("t-lostopen")
        var server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        // Several active clients with ports, as a session being restored has (recorder, racks, the patch client).
        let clients = try (1...6).map { try JackClient(name: "lost-\($0)", server: name) }
        for c in clients {
            _ = try c.registerPort("in_1", direction: .input)
            try c.activateForNotifications()
        }
        // SIGKILL without waiting for the server to be reaped, then opens (each a jack_client_open, failing while
        // no server runs) as fast as they go while the clients learn of the loss one by one: opens land after the
        // first client was shut down and before the last one. (`JackServer.probe` makes no client on jackd2.)
        kill(server.process.pid, SIGKILL)
        var probes = 0
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && !clients.allSatisfy(\.wasShutDown) {
            _ = JackServer.probeWithClient(name)
            probes += 1
        }
        _ = JackServer.probeWithClient(name)
        server.kill9()
        #expect(clients.allSatisfy { $0.wasShutDown }, "every client is known lost with its server")
        #expect(clients.allSatisfy { $0.handle == nil }, "no handle is kept past an open that could free it")
        let freed = clients.filter(\.freedByLibrary).count
        print("measured: \(probes) probes; \(clients.count - freed) clients closed before an open, \(freed) freed "
              + "by libjack and forgotten")

        // The server back under the same name: the old clients' names are free, and closing the old clients (as an
        // engine's close does, again and again) touches nothing.
        server = try TestEnvironment.server(named: name)
        let fresh = try JackClient(name: "lost-1", server: name)
        defer { fresh.close() }
        _ = try fresh.registerPort("in_1", direction: .input)
        try fresh.activateForNotifications()
        for c in clients {
            c.deactivate()
            c.close()
            c.close()
            #expect(c.ports().isEmpty && !c.portExists("lost-1:in_1") && !c.clientExists("lost-1"))
        }
        #expect(fresh.ports(matching: "^lost-") == ["lost-1:in_1"])
        #expect(!fresh.wasShutDown && fresh.handle != nil)
    }
}
