/// Broadcast-WAV (`bext`) facts written into a WAV/RF64 file's header.
public struct BroadcastInfo: Sendable {
    /// Samples since midnight at the start of the recording (the BWF time reference).
    public var timeReference: UInt64
    public var description: String
    public var originator: String
    /// "yyyy-mm-dd".
    public var originationDate: String
    /// "hh:mm:ss".
    public var originationTime: String

    public init(timeReference: UInt64, description: String, originator: String, originationDate: String,
                originationTime: String) {
        self.timeReference = timeReference
        self.description = description
        self.originator = originator
        self.originationDate = originationDate
        self.originationTime = originationTime
    }
}
