import ArgumentParser
import Commands
import Control
import Coordinator
import Engine
import Foundation

/// Sends one OSC message to a running Tandem and waits for its reply.
func controlRequest(port: Int, _ message: OSCMessage, timeout: Double = 2) -> [OSCValue]? {
    guard let socket = try? UDPSocket(port: 0) else { return nil }
    socket.send(message.encode(), to: UDPSocket.loopback(port: port))
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        guard socket.wait(seconds: deadline.timeIntervalSinceNow) else { break }
        while let d = socket.receive(limit: 65536) {
            if let m = try? OSCMessage.decode(bytes: d.bytes).get(),
               m.path == "/tandem/reply", m.arguments.count >= 2, m.arguments[1].string == message.path {
                return m.arguments
            }
        }
    }
    return nil
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show what a running Tandem is doing (over its OSC control port).")

    @Option(name: .long, help: "The instance's control port.")
    var port = 9951

    @Flag(name: .long, help: "Print the raw JSON status.")
    var json = false

    func run() throws {
        guard let reply = controlRequest(port: port, OSCMessage("/tandem/status")) else {
            fail(.jackUnavailable, "no Tandem answered on 127.0.0.1:\(port)")
        }
        guard reply.first?.string == "ok", reply.count > 2, let text = reply[2].string else {
            fail(.failure, reply.count > 2 ? reply[2].string ?? "bad reply" : "bad reply")
        }
        if json {
            say(text)
            return
        }
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf",
                                                                        nan: "nan")
        guard let status = try? decoder.decode(SessionStatus.self, from: Data(text.utf8)) else { say(text); return }
        let view = LiveView(json: false, enabled: true)
        for line in view.render(status) { say(line) }
        if let r = status.recorder {
            say(String(format: "recorder cycle: p50 %.1f µs, p99 %.1f µs, max %.1f µs", r.cycle.p50Micros, r.cycle.p99Micros, r.cycle.maxMicros))
        }
        if let p = status.player {
            say(String(format: "player cycle: p50 %.1f µs, p99 %.1f µs, max %.1f µs", p.cycle.p50Micros, p.cycle.p99Micros, p.cycle.maxMicros))
        }
        if !status.workers.isEmpty { say("workers: " + status.workers.joined(separator: "; ")) }
    }
}

struct CtlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl", abstract: "Send one control command to a running Tandem and print its reply.",
        discussion: """
            Examples: tandem ctl record start · tandem ctl play seek 12.5 · tandem ctl play load take.wav · \
            tandem ctl plugin set player level gain -12 · tandem ctl /tandem/status. Exit 0 for "ok", 2 for an error reply, 3 when nothing answered.
            """)

    @Option(name: .long, help: "The instance's control port.")
    var port = 9951

    @Argument(parsing: .allUnrecognized,
              help: "The command: words (record start) or an OSC address (/tandem/record/start), then its arguments.")
    var words: [String]

    func run() throws {
        guard !words.isEmpty else { fail(.badInput, "give a command, e.g. 'record start'") }
        let message: OSCMessage
        let first = words[0]
        if let transport = ["subscribe", "unsubscribe"].first(where: { first == $0 || first == "/tandem/\($0)" }) {
            // The subscription messages belong to OSC, not to the command model.
            message = OSCMessage("/tandem/" + transport, words.dropFirst().map { Self.oscValue(CommandValue(word: $0)) })
        } else {
            // Checked here by the same parser the session uses: a bad command is refused in the same words.
            switch Command.parse(words: words) {
            case .failure(let e): fail(.badInput, e.message)
            case .success(let command): message = OSCMessage(command.address, command.values.map(Self.oscValue))
            }
        }
        guard let reply = controlRequest(port: port, message) else {
            fail(.jackUnavailable, "no Tandem answered on 127.0.0.1:\(port)")
        }
        let detail = reply.count > 2 ? reply[2].string ?? "" : ""
        if reply.first?.string == "ok" {
            say(detail.isEmpty ? "ok" : "ok: \(detail)")
        } else {
            fail(.badInput, detail)
        }
    }

    /// A whole number that fits goes as an OSC int, another as a double (a float would round 0.1 and turn 1e300
    /// into infinity), a text as a string.
    static func oscValue(_ v: CommandValue) -> OSCValue {
        switch v {
        case .text(let s): return .string(s)
        case .number(let d):
            if d == d.rounded(), abs(d) < 2e9 { return .int(Int32(d)) }
            return .double(d)
        }
    }
}
