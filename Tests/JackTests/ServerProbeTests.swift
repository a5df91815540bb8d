import Foundation
@testable import Jack
import Testing
import TestSupport

/// `JackServer.probe` asks jackd2's request socket, not libjack: a session waiting for its lost server probes it
/// again and again, and each libjack client it opened for that went through libjack's process-wide state (it freed
/// the session's other clients, and hung for good three times in 690 flap rounds inside the probe's
/// `jack_client_close`: issue 43, item A). Before, the probe opened a client each time, and this test failed on the
/// open counter and on the witness client closed under its owner.
@Suite(.serialized) struct ServerProbeTests {
    @Test func theProbeSeesAServerComeAndGoWithoutALibjackClient() throws {
        #expect(JackServer.libraryIsJack2, "these tests run on jackd2's libjack")
        let name = JackServer.uniqueName("t-probe")
        var server = try TestEnvironment.server(named: name)
        defer { server.stop() }
        let fds = openDescriptors()
        let opens = JackClients.opens.load(ordering: .relaxed)
        for _ in 0..<200 { #expect(JackServer.probe(name)) }
        #expect(JackClients.opens.load(ordering: .relaxed) == opens, "no libjack client was opened to probe")
        #expect(openDescriptors() == fds, "every probe's socket is closed")

        // The server took 200 connections that never sent a request and dropped them: it still serves clients.
        let witness = try JackClient(name: "probe-witness", server: name)
        try witness.activateForNotifications()

        // Killed: its socket file stays behind and refuses; the witness is shut down, and no probe touches it (an
        // open would close it, or libjack would free it).
        kill(server.process.pid, SIGKILL)
        #expect(TestEnvironment.waitUntil(timeout: 10) { witness.wasShutDown })
        #expect(TestEnvironment.waitUntil(timeout: 10) { !JackServer.probe(name) })
        let cleanups = JackLibrary.cleanups.load(ordering: .sequentiallyConsistent)
        let withWitness = openDescriptors()
        for _ in 0..<50 { #expect(!JackServer.probe(name)) }
        #expect(openDescriptors() == withWitness, "a refused probe's socket is closed")
        #expect(JackClients.opens.load(ordering: .relaxed) == opens + 1, "only the witness was opened")
        #expect(JackLibrary.cleanups.load(ordering: .sequentiallyConsistent) == cleanups)
        #expect(witness.handle != nil && !witness.freedByLibrary, "the shut-down client is its owner's to close")
        server.kill9()

        // Back under the same name: the probe sees it, and a client opens on it.
        server = try TestEnvironment.server(named: name)
        #expect(JackServer.probe(name))
        witness.close()
        let fresh = try JackClient(name: "probe-witness", server: name)
        defer { fresh.close() }
        #expect(!fresh.wasShutDown && fresh.handle != nil)
    }

    @Test func theSocketPathIsJackd2s() {
        #expect(JackServer.socketPath("default", uid: 1000, promiscuous: false) == "/dev/shm/jack_default_1000_0")
        #expect(JackServer.socketPath("a/b\\c", uid: 0, promiscuous: false) == "/dev/shm/jack_a_b_c_0_0")
        #expect(JackServer.socketPath("rig", uid: 1000, promiscuous: true) == "/dev/shm/jack_rig_0")
        #expect(!JackServer.probe(""))
        #expect(!JackServer.probe("no-such-server-\(getpid())"))
    }

    /// This process's open file descriptors.
    private func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }
}
