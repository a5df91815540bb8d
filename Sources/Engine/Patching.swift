import Foundation
import Jack

public struct PatchError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Simple connection helpers for the one-shot commands (the session's rule engine comes with presets).
public enum Patching {
    /// Connects each source (an exact port name, or a regular expression expanding to several output ports in
    /// name order) to `inputs` in order. Fewer sources than inputs is fine; more is an error.
    public static func connectSources(_ sources: [String], to inputs: [String], client: JackClient) throws {
        let expanded = try expand(sources, direction: .output, client: client)
        if expanded.count > inputs.count {
            throw PatchError(message: "\(expanded.count) source ports for \(inputs.count) inputs")
        }
        for (source, input) in zip(expanded, inputs) { try connect(source, input, client) }
    }

    /// Connects `outputs` in order to destinations (each an exact input port name, or a regular expression
    /// expanding to several input ports in name order). Fewer destinations than outputs is fine; more is an error.
    public static func connectDestinations(_ destinations: [String], from outputs: [String], client: JackClient) throws {
        let expanded = try expand(destinations, direction: .input, client: client)
        if expanded.count > outputs.count {
            throw PatchError(message: "\(expanded.count) destination ports for \(outputs.count) outputs")
        }
        for (output, destination) in zip(outputs, expanded) { try connect(output, destination, client) }
    }

    /// Each pattern as the port it names exactly, or as every port of `direction` its regular expression matches.
    static func expand(_ patterns: [String], direction: PortDirection, client: JackClient) throws -> [String] {
        var expanded: [String] = []
        for p in patterns {
            if client.portExists(p) {
                expanded.append(p)
                continue
            }
            let matches = client.ports(matching: p, direction: direction)
            if matches.isEmpty {
                throw PatchError(message: "no \(direction == .output ? "output" : "input") port matches '\(p)'")
            }
            expanded += matches.sorted(by: portOrder)
        }
        return expanded
    }

    private static func connect(_ source: String, _ destination: String, _ client: JackClient) throws {
        do { try client.connect(source, destination) } catch { throw PatchError(message: error.description) }
    }

    /// Orders "x:out_2" before "x:out_10".
    static func portOrder(_ a: String, _ b: String) -> Bool {
        a.compare(b, options: .numeric) == .orderedAscending
    }
}
