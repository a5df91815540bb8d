import Engine
import Foundation
import Presets

/// One connection, output to input.
public struct Connection: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var source: String
    public var destination: String

    public init(_ source: String, _ destination: String) {
        self.source = source
        self.destination = destination
    }

    public static func < (a: Connection, b: Connection) -> Bool {
        (a.source, a.destination) < (b.source, b.destination)
    }

    public var description: String { "\(source) -> \(destination)" }
}

/// The session's connection bookkeeping as a plain value: which connections the rules want among the ports that
/// exist, which of them this session made (and so owns), and which someone else removed and the session keeps
/// removed. It decides; the session carries its decisions out on JACK. Testable without a server.
///
/// Two promises hold whatever the rules say: a connection someone else made is never removed, and a connection this
/// session made is removed only when its rule is gone.
///
/// Threads: a value; the session's control thread owns it.
public struct Patchbay: Sendable, Equatable {
    /// Rule connections that exist and this session owns.
    public private(set) var made = Set<Connection>()
    /// Rule connections someone else removed, kept removed while their rule stays (`on_manual_disconnect =
    /// "respect"`).
    public private(set) var suppressed = Set<Connection>()
    /// Whether a removed rule connection is made again (`on_manual_disconnect = "repair"`).
    public var repair = false

    public init(repair: Bool = false) { self.repair = repair }

    /// The rules that connect nothing among `outputs` and `inputs` (all kinds of port), each with what it lacks, in
    /// words: "connect a2j:.*keyboard.* -> fx:midi_in (line 12): no output port matches 'a2j:.*keyboard.*'". A
    /// rule may wait for ports that come later; until then it is said at start and in the status, never silent.
    public static func idle(_ rules: [ConnectionRule], outputs: [String], inputs: [String]) -> [String] {
        rules.compactMap { rule in
            let from = outputs.contains(where: rule.from.matches), to = inputs.contains(where: rule.to.matches)
            guard !from || !to else { return nil }
            var lacks: [String] = []
            if !from { lacks.append("no output port matches '\(rule.from)'") }
            if !to { lacks.append("no input port matches '\(rule.to)'") }
            return "connect \(rule.from) -> \(rule.to)" + (rule.line.map { " (line \($0))" } ?? "") + ": "
                + lacks.joined(separator: ", ")
        }
    }

    /// Rules that connected nothing at the last pass (see `idle`), for the status.
    public var idleRules: [String] = []

    /// Every connection `rules` ask for among `outputs` and `inputs` (`pairs`: first with first in natural name
    /// order; `all`: every source to every destination).
    public static func desired(_ rules: [ConnectionRule], outputs: [String], inputs: [String]) -> Set<Connection> {
        var out = Set<Connection>()
        for rule in rules {
            let sources = outputs.filter(rule.from.matches).sorted(by: portOrder)
            let destinations = inputs.filter(rule.to.matches).sorted(by: portOrder)
            switch rule.mode {
            case .pairs:
                for (s, d) in zip(sources, destinations) { out.insert(Connection(s, d)) }
            case .all:
                for s in sources { for d in destinations { out.insert(Connection(s, d)) } }
            }
        }
        return out
    }

    /// What brings the graph to `desired`: the connections to remove (made by this session, rule gone) and the
    /// ones to make (wanted, missing, not kept removed), both in a stable order. Connections that are already there
    /// are adopted. Call `didConnect` for each connection made.
    public mutating func plan(desired: Set<Connection>,
                              isConnected: (Connection) -> Bool) -> (disconnect: [Connection], connect: [Connection]) {
        var disconnect: [Connection] = []
        for x in made.sorted() where !desired.contains(x) {
            made.remove(x)
            pending[x] = nil
            rebuilt.remove(x)
            if isConnected(x) { disconnect.append(x) }
        }
        suppressed.formIntersection(desired)
        var connect: [Connection] = []
        for x in desired.sorted() where !suppressed.contains(x) && pending[x] == nil {
            if isConnected(x) { made.insert(x) } else { connect.append(x) }
        }
        return (disconnect, connect)
    }

    public mutating func didConnect(_ x: Connection) { made.insert(x) }

    /// Rule connections found gone while both their ports still existed, and since when (seconds on the caller's
    /// clock). JACK disconnects a closing client's ports before it unregisters them, so a removal seen in between
    /// (a NetJACK2 slave leaving its master, any client quitting) is nobody's decision yet: it is decided only after
    /// `settleSeconds`, and forgotten if a port went away meanwhile.
    public private(set) var pending: [Connection: Double] = [:]
    public static let settleSeconds = 0.3

    /// When the earliest pending removal is due for a decision (call `noticeRemovals` again then), or nil.
    public var nextDecision: Double? { pending.values.min().map { $0 + Self.settleSeconds } }

    /// After a graph change, and when `nextDecision` is due: the connections this session made that are gone. One
    /// whose ports both still exist after `settleSeconds` was removed by someone: kept removed, or made again at the
    /// next `plan` (`repaired`); one whose port went away is forgotten (made again when the port returns).
    /// `duringAStall`: the server ran no cycles around now (see `Session.stallWatch`). A removal pending then is the
    /// graph being rebuilt (a NetJACK2 slave's driver drops its system ports' connections while it re-joins its
    /// master), not anyone's decision: when its settle time is over it is forgotten, and made again by the next
    /// `plan` if its ports are there. (A manual disconnection in such a moment is repaired: the safe side for a
    /// take. Only a stall counts: a port going away does not, since a quitting client's ports stay listed after
    /// their connections went, and connecting to them then made PipeWire shut the connecting client down.)
    public mutating func noticeRemovals(isConnected: (Connection) -> Bool, exists: (String) -> Bool,
                                        duringAStall: Bool = false,
                                        now: Double) -> [(connection: Connection, repaired: Bool)] {
        var out: [(Connection, Bool)] = []
        for x in made.sorted() where !isConnected(x) {
            guard exists(x.source) && exists(x.destination) else {
                made.remove(x)
                pending[x] = nil
                rebuilt.remove(x)
                continue
            }
            if duringAStall { rebuilt.insert(x) }
            let since = pending[x] ?? now
            if now - since < Self.settleSeconds {
                pending[x] = since
                continue
            }
            made.remove(x)
            pending[x] = nil
            if rebuilt.remove(x) != nil { continue }
            if !repair { suppressed.insert(x) }
            out.append((x, repair))
        }
        for x in pending.keys where !made.contains(x) || isConnected(x) {
            pending[x] = nil
            rebuilt.remove(x)
        }
        return out
    }

    /// Pending removals that saw the graph being rebuilt (see `noticeRemovals`).
    private var rebuilt: Set<Connection> = []

    /// Forgets everything (the clients were closed).
    public mutating func reset() {
        made.removeAll()
        suppressed.removeAll()
        pending.removeAll()
        rebuilt.removeAll()
    }

    /// Orders "x:out_2" before "x:out_10".
    public static func portOrder(_ a: String, _ b: String) -> Bool {
        a.compare(b, options: .numeric) == .orderedAscending
    }

    /// Exact rules that connect the ports `patterns` name, in order, to `ours` (the one-shot commands' `--connect`): each pattern is a
    /// port name in `existing`, or a regular expression naming several in natural order. Fewer sources than inputs is
    /// fine; more, or a pattern that names nothing, is an error. With `towardUs` false it is the other way round:
    /// `ours` are our outputs and the patterns name destinations.
    public static func orderedRules(_ patterns: [String], ours: [String], existing: [String],
                                    towardUs: Bool) throws(PatchError) -> [ConnectionRule] {
        var expanded: [String] = []
        for p in patterns {
            if existing.contains(p) {
                expanded.append(p)
                continue
            }
            guard let regex = try? NSRegularExpression(pattern: p) else {
                throw PatchError(message: "'\(p)' is neither a port nor a regular expression")
            }
            let matches = existing.filter {
                regex.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil
            }
            if matches.isEmpty {
                // What is there, so the next try can be right (`tandem ports` lists the whole graph).
                let there = existing.sorted(by: portOrder)
                let listed = there.isEmpty ? "there are none"
                    : "there are " + there.prefix(8).joined(separator: ", ") + (there.count > 8 ? ", … (\(there.count) in all)" : "")
                throw PatchError(message: "no \(towardUs ? "output" : "input") port matches '\(p)' (\(listed); `tandem ports` "
                                 + "lists them)")
            }
            expanded += matches.sorted(by: portOrder)
        }
        if expanded.count > ours.count {
            let listed = expanded.prefix(6).joined(separator: ", ") + (expanded.count > 6 ? ", …" : "")
            throw PatchError(message: "\(expanded.count) \(towardUs ? "source" : "destination") port(s) (\(listed)) for the "
                             + "\(ours.count) \(towardUs ? "input" : "output")(s)", matched: expanded.count)
        }
        return zip(expanded, ours).map { other, mine in
            towardUs ? ConnectionRule(from: .exact(other), to: .exact(mine))
                     : ConnectionRule(from: .exact(mine), to: .exact(other))
        }
    }
}

public struct PatchError: Error, CustomStringConvertible {
    public let message: String
    /// The ports the patterns matched when they outnumber the engine's (nil: another problem), so a command can say
    /// which option gives the engine as many.
    public var matched: Int? = nil
    public var description: String { message }
}
