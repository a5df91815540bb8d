/// Why a plugin could not be used, naming the plugin and what is wrong.
public struct PluginError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable, Codable {
        case notInstalled, missingFeature, instantiateFailed, channels, unsupportedPort, unknownPlugin,
             unknownControl, badValue, preset, state, worker
    }
    public let code: Code
    /// The plugin's name in its chain (or its URI).
    public let plugin: String
    public let message: String

    public init(_ code: Code, plugin: String, _ message: String) {
        self.code = code
        self.plugin = plugin
        self.message = message
    }

    public var description: String { "plugin \(plugin): \(message)" }

    /// Whether the plugin itself is left out of its chain (bypassed: the chain runs without it), as opposed to one
    /// of its settings being ignored while it runs.
    public var leavesPluginOut: Bool {
        switch code {
        case .notInstalled, .missingFeature, .instantiateFailed, .channels, .unsupportedPort: return true
        default: return false
        }
    }

    /// Whether this stops a session from starting when `on_plugin_error` is `fail`: everything the user asked for
    /// and did not get. Saved state that cannot be restored (left by an earlier run) and a worker the plugin cannot
    /// use are reported, never fatal.
    public var stopsStart: Bool { code != .state && code != .worker }
}
