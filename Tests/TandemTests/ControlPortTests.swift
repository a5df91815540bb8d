import Control
import Foundation
import Jack
import Testing
import TestSupport

/// A taken control port is exit 2 before any JACK client is made, the default port (9951) as well: a session that
/// went on without its port left `tandem ctl` reaching the other session there. `control_port = "auto"` takes a free
/// one and says which.
@Suite(.serialized) struct ControlPortTests {
    func preset(_ dir: URL, _ name: String, port: String?) throws -> String {
        let path = dir.appendingPathComponent("\(name).toml").path
        try ("[session]\nname = \"\(name)\"\ndirectory = \"\(dir.path)\"\n" + (port.map { "control_port = \($0)\n" } ?? "")
             + "[recorder]\nclient = \"\(name)-rec\"\nchannels = 1\nstart = \"armed\"\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aTakenControlPortIsExitTwoBeforeAnything() throws {
        let server = try TestEnvironment.server("ctlport")
        defer { server.stop() }
        let dir = TestEnvironment.temporaryDirectory("ctlport")
        let held = try UDPSocket(port: 0)
        // The default port is held here, or by someone else: taken either way.
        let heldDefault = try? UDPSocket(port: 9951)
        defer { _ = heldDefault }
        for (name, port, words) in [("explicit", "\(held.port)", "control port \(held.port) is taken"),
                                    ("default", nil, "the default control port 9951 is taken")] {
            let t = try TandemProcess(["run", "--no-view", try preset(dir, name, port: port)], server: server,
                                      log: dir.appendingPathComponent("\(name).log").path)
            let code = t.process.wait(timeout: 10)
            #expect(code == 2 && t.output.contains(words), "\(name): exit \(String(describing: code))\n\(t.output)")
            #expect(!t.output.contains("recorder ready") && !JackServer.hasClient(named: "\(name)-rec", on: server.name),
                    "\(name): a JACK client was made first\n\(t.output)")
            if code == nil { t.process.stop(SIGKILL, grace: 1) }
        }
        // "auto": a free port, said on stderr, and `tandem status` reaches this session there.
        let auto = try TandemProcess(["run", "--no-view", try preset(dir, "auto", port: "\"auto\"")], server: server,
                                     log: dir.appendingPathComponent("auto.log").path)
        defer { auto.process.stop(SIGTERM, grace: 5) }
        #expect(auto.waitFor("control port 9951 is taken: this session listens on "), "\(auto.output)")
        let port = auto.output.components(separatedBy: "this session listens on ").last?
            .split(separator: " ").first.flatMap { Int($0) } ?? 0
        #expect(port > 0 && port != 9951, "\(auto.output)")
        let status = try TestEnvironment.run([TestEnvironment.product("tandem"), "status", "--port", "\(port)", "--json"],
                                             timeout: 10)
        #expect(status.code == 0 && status.output.contains("\"auto\""), "\(status.output)")
    }
}
