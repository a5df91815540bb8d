import CSndFile

/// A failure at the libsndfile boundary, naming the file and carrying libsndfile's own message.
public struct SoundFileError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: Sendable, Equatable {
        case cannotOpen, alreadyExists, unsupportedFormat, writeFailed, readFailed, seekFailed, closeFailed
    }

    public let code: Code
    public let path: String
    /// What went wrong, in words (libsndfile's message or the system's).
    public let message: String

    public init(_ code: Code, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }

    /// libsndfile's message for `file` (or for the last failed open when `file` is nil).
    static func libraryMessage(_ file: OpaquePointer?) -> String {
        String(cString: sf_strerror(file))
    }
}
