import Engine
import Foundation
import Plugins
import Presets

/// Which engine's chain: the recorder's, the player's, or a rack's (by the rack's name).
public struct ChainEngine: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let recorder = ChainEngine(rawValue: "recorder")
    public static let player = ChainEngine(rawValue: "player")
    public static func rack(_ name: String) -> ChainEngine { ChainEngine(rawValue: name) }
    public var description: String { rawValue }
}

/// A chain the session has announced, not kept alive by it.
struct WeakChain {
    weak var chain: PluginChain?
}

/// An engine configuration with an insert chain.
protocol ChainConfig: Equatable {
    var plugins: [PluginSpec] { get set }
}
