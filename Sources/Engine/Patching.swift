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
        var expanded: [String] = []
        for s in sources {
            if client.portExists(s) {
                expanded.append(s)
                continue
            }
            let matches = client.ports(matching: s, direction: .output)
            if matches.isEmpty { throw PatchError(message: "no output port matches '\(s)'") }
            expanded += matches.sorted(by: portOrder)
        }
        if expanded.count > inputs.count {
            throw PatchError(message: "\(expanded.count) source ports for \(inputs.count) inputs")
        }
        for (source, input) in zip(expanded, inputs) {
            do { try client.connect(source, input) } catch { throw PatchError(message: error.description) }
        }
    }

    /// Connects `outputs` in order to destinations (each an exact input port name, or a regular expression
    /// expanding to several input ports in name order). Fewer destinations than outputs is fine; more is an error.
    public static func connectDestinations(_ destinations: [String], from outputs: [String], client: JackClient) throws {
        var expanded: [String] = []
        for d in destinations {
            if client.portExists(d) {
                expanded.append(d)
                continue
            }
            let matches = client.ports(matching: d, direction: .input)
            if matches.isEmpty { throw PatchError(message: "no input port matches '\(d)'") }
            expanded += matches.sorted(by: portOrder)
        }
        if expanded.count > outputs.count {
            throw PatchError(message: "\(expanded.count) destination ports for \(outputs.count) outputs")
        }
        for (output, destination) in zip(outputs, expanded) {
            do { try client.connect(output, destination) } catch { throw PatchError(message: error.description) }
        }
    }

    /// Orders "x:out_2" before "x:out_10".
    static func portOrder(_ a: String, _ b: String) -> Bool {
        a.compare(b, options: .numeric) == .orderedAscending
    }
}
