import Jack
import Logging
import Realtime

/// A failure to set up or run an engine, in words a user can act on.
public struct EngineError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable {
        /// A setting the user can change (a preset value, a taken client name, a ring too large for this machine).
        case badConfig
        /// The output directory is missing, not a directory or not writable.
        case badDirectory
        /// The JACK server refused or is not there.
        case jack
        /// A file could not be written.
        case file
        /// The kernel would not give the memory an engine's rings need (see `ResidentMemory.Failure`).
        case memory
    }
    public let code: Code
    public let message: String
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { message }
}
