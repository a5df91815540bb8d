import Engine
import Foundation
import Jack
import Logging
import Presets

// The connection rules carried out on JACK: the `Patchbay` value decides, this does what it decided and reports it.
extension Session {
    /// Makes the connections the rules want and that are missing; removes only connections this session made
    /// whose rule is gone. Connections made by others are never touched.
    func applyRules(_ report: inout ApplyReport) {
        guard let c = patchClient, let p = preset else { return }
        // Read before the ports: a change while this pass runs (a net driver re-creating its ports) makes another.
        let generationAtStart = generation(c)
        patchbay.repair = p.session.onManualDisconnect == .repair
        // Each port type on its own: a rule connects audio to audio and MIDI to MIDI (a pattern matching both kinds
        // pairs each kind with its own kind).
        let desired = PortType.allCases.reduce(into: Set<Connection>()) { all, type in
            all.formUnion(Patchbay.desired(p.connections, outputs: c.ports(direction: .output, type: type),
                                           inputs: c.ports(direction: .input, type: type)))
        }
        let idle = Patchbay.idle(p.connections, outputs: c.ports(direction: .output), inputs: c.ports(direction: .input))
        for rule in idle where !patchbay.idleRules.contains(rule) {
            patchLogger.warning("a connection rule connects nothing (yet): \(rule)")
        }
        patchbay.idleRules = idle
        var cache = ConnectionCache(client: c)
        let plan = patchbay.plan(desired: desired, isConnected: { cache.contains($0) })
        for x in plan.disconnect {
            do {
                try c.disconnect(x.source, x.destination)
                report.disconnected += 1
                events.append(.disconnected(x.source, x.destination))
                patchLogger.info("disconnected (rule removed)", metadata: ["from": "\(x.source)", "to": "\(x.destination)"])
            } catch {
                patchLogger.warning("cannot disconnect", metadata: ["error": "\(error)"])
            }
        }
        for x in plan.connect {
            do {
                try c.connect(x.source, x.destination)
                patchbay.didConnect(x)
                report.connected += 1
                events.append(.connected(x.source, x.destination))
                patchLogger.info("connected", metadata: ["from": "\(x.source)", "to": "\(x.destination)"])
            } catch {
                patchLogger.warning("cannot connect", metadata: ["error": "\(error)"])
            }
        }
        graphGeneration = generationAtStart
    }

    func generation(_ c: JackClient) -> Int {
        let n = c.notifications
        return n.count(.portRegistered) + n.count(.portUnregistered) + n.count(.portConnected)
            + n.count(.portDisconnected) + n.count(.portRenamed)
    }

    /// After a graph change: rule connections someone removed are respected or repaired per the preset; then the
    /// rules are applied to whatever ports exist now.
    func graphChanged() {
        guard let c = patchClient else { return }
        patchbay.repair = preset?.session.onManualDisconnect == .repair
        let existing = Set(c.ports())
        var cache = ConnectionCache(client: c)
        let real = clock.real()
        let now = real.timeIntervalSinceReferenceDate
        for (x, repaired) in patchbay.noticeRemovals(isConnected: { cache.contains($0) }, exists: existing.contains,
                                                     duringAStall: stallWatch.aroundAStall(real), now: now) {
            events.append(.manualDisconnect(x.source, x.destination, repaired: repaired))
            patchLogger.info("connection removed by someone else; \(repaired ? "repairing" : "respecting") it",
                             metadata: ["from": "\(x.source)", "to": "\(x.destination)"])
        }
        var report = ApplyReport()
        applyRules(&report)
    }

    /// Exact rules for the one-shot commands' `--connect`: the ports `patterns` name (exact names or regular
    /// expressions), in order, to the engine's `ports` (`towardUs`: they are sources for our inputs; else
    /// destinations of our outputs). Read from the graph as it is now.
    /// `type`: the kind of `ports` (only ports of that kind are matched).
    public func orderedRules(_ patterns: [String], ports: [String], towardUs: Bool,
                             type: PortType = .audio) throws(PatchError) -> [ConnectionRule] {
        guard let c = patchClient else { throw PatchError(message: "no JACK client to read the graph with") }
        let rules = try Patchbay.orderedRules(patterns, ours: ports,
                                              existing: c.ports(direction: towardUs ? .output : .input, type: type),
                                              towardUs: towardUs)
        if !rules.isEmpty && rules.count < ports.count {
            // Fewer ports matched than the engine has: the rest are left unconnected, and said so.
            let idle = Array(ports.dropFirst(rules.count))
            let kind = towardUs ? "input" : "output"
            let range = idle.count > 1 ? "\(idle[0]) to \(idle[idle.count - 1])" : (idle.first ?? "")
            let matched = patterns.joined(separator: " ")
            let silent = towardUs ? " (silent in the take)" : ""
            patchLogger.warning("\(matched) matched \(rules.count) port(s) for \(ports.count) \(kind)(s): \(range) stay unconnected\(silent)")
        }
        return rules
    }
}

