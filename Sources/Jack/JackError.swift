import CJack

/// A failure at the libjack boundary, with JACK's status decoded into words and what was being attempted.
public struct JackError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        case openFailed, serverNotRunning, activateFailed, portRegisterFailed, connectFailed, disconnectFailed,
             noSuchPort, serverStartFailed, clientClosed,
             /// Another client on the server already has the name.
             nameTaken
    }

    public let code: Code
    /// What Tandem was trying to do, with names (client, port, server).
    public let context: String
    /// JACK's status bits, decoded (empty when libjack gave none).
    public let status: [String]

    public init(_ code: Code, _ context: String, status: jack_status_t? = nil) {
        self.code = code
        self.context = context
        self.status = status.map(JackError.describe) ?? []
    }

    public var description: String {
        status.isEmpty ? context : "\(context) (JACK: \(status.joined(separator: ", ")))"
    }

    /// Decodes a `jack_status_t` bit set into readable phrases.
    public static func describe(_ status: jack_status_t) -> [String] {
        let raw = status.rawValue
        let table: [(JackStatus, String)] = [
            (JackFailure, "overall operation failed"),
            (JackInvalidOption, "invalid or unsupported option"),
            (JackNameNotUnique, "client name not unique"),
            (JackServerStarted, "server was started"),
            (JackServerFailed, "unable to connect to the JACK server"),
            (JackServerError, "communication error with the JACK server"),
            (JackNoSuchClient, "no such client"),
            (JackLoadFailure, "unable to load internal client"),
            (JackInitFailure, "unable to initialize client"),
            (JackShmFailure, "unable to access shared memory"),
            (JackVersionError, "client protocol version does not match the server"),
            (JackBackendError, "backend error"),
            (JackClientZombie, "client is a zombie"),
        ]
        return table.compactMap { raw & $0.0.rawValue != 0 ? $0.1 : nil }
    }
}
