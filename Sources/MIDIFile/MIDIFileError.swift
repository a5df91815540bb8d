/// What is wrong with a Standard MIDI File, naming the file and, where it helps, the byte offset.
public struct MIDIFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file (or "<data>" for bytes that came from no file).
    public var path: String
    /// Byte offset in the file where the problem was found, when there is one.
    public var offset: Int?
    /// What is wrong, written for a person.
    public var reason: String

    public init(path: String, offset: Int? = nil, reason: String) {
        self.path = path
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        if let offset { return "\(path): byte \(offset): \(reason)" }
        return "\(path): \(reason)"
    }
}
