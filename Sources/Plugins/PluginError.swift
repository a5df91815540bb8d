/// Why a plugin could not be used, naming the plugin and what is wrong.
public struct PluginError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable, Codable {
        case notInstalled, missingFeature, instantiateFailed, channels, unsupportedPort, unknownPlugin,
             unknownControl, badValue, preset, state
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
}
