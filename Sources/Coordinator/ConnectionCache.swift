import Engine
import Foundation
import Jack
import Logging
import Presets

/// Each source port's connections, read from JACK once per pass.
struct ConnectionCache {
    let client: JackClient
    var bySource: [String: Set<String>] = [:]

    init(client: JackClient) { self.client = client }

    mutating func contains(_ x: Connection) -> Bool {
        let set = bySource[x.source] ?? Set(client.connections(of: x.source))
        bySource[x.source] = set
        return set.contains(x.destination)
    }
}
