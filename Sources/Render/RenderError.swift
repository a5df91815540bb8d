/// Why a render (or one job of it) did not complete, in words for a person, and what kind of failure it is: the kind
/// decides the exit code (docs/CLI.md): bad input 2, a disk error 4, stopped 128 + the signal, anything else (a plugin
/// that crashed, a chain that cannot run) 1.
public struct RenderError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Codable {
        /// A file, an option, a preset, an automation event or a rate the chain cannot take.
        case badInput
        /// The output could not be written (a full disk, an I/O error, a folder that refuses files).
        case disk
        /// The job failed otherwise (a plugin crashed, the chain could not be built).
        case failed
        /// The render was stopped (SIGINT or SIGTERM) before the job finished; it left nothing.
        case stopped
    }
    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// A job ended by `signal` before it finished.
    public static func stopped(_ signal: Int32) -> RenderError {
        RenderError(.stopped, "stopped by signal \(signal) before it finished; its output was not written")
    }
}
