import Foundation
import SoundFile
import Loudness
#if canImport(Glibc)
import Glibc
#endif

/// One take being written. Writer thread only.
public final class ActiveTake {
    public let number: Int
    /// Stream position of the first frame in the ring (see `resolved`).
    public var start: Int
    /// Wall-clock time of the first frame (names every chunk of the take).
    let date: Date
    let context: TakeContext
    public var report: TakeReport
    public let sidecar: SidecarFile
    /// Stream position where the take ends (exclusive), once known.
    public var end: Int?
    /// Whether `start` is final: until the writer reaches it, `start` is the first input frame's stream position;
    /// then the chain latency the ring carries there (`compensation`) is added (see `DiskWriter.resolveStart`).
    public var resolved = false
    public var compensation = 0
    public var endReason: TakeEnd?
    public var endDetail: String?
    var writers: [SoundFileWriter] = []
    var chunkIndex = 0
    /// Take offset of the current chunk's first frame.
    var chunkStart = 0
    public var framesWritten = 0
    var lastSync = 0
    public var failed: String?
    /// Whether the test-only stall fault has fired for this take.
    var stalled = false
    /// Bytes on disk as last computed, and the frame count when they were.
    var bytesKnown = 0
    var bytesCheckedAt = 0
    /// Bytes of the chunks already closed (the status counts the whole take, not only the open chunk).
    var closedChunkBytes = 0
    /// Chunk boundaries on the wall clock (`rotate_on_clock`), and the next one (stream position and the time it
    /// stands for, which names the chunk that starts there).
    public var clock: WallClockRotation?
    public var boundary: (frame: Int, time: Date)?
    /// The wall-clock time the next chunk's name carries (nil: the take's).
    var chunkDate: Date?
    /// The `+N` every file name of this take carries (0: none), chosen at its start when the template's names for
    /// it were taken already (a template without `{take}`, or files of an earlier run in the folder).
    var nameVariant = 0
    /// The take's loudness meters, fed every frame written (nil: not measured).
    public var loudness: ProgrammeMeters?
    /// The level-trigger decision that started this take (nil: started by a command).
    public var triggerStart: LevelTrigger.Start?

    init(number: Int, start: Int, date: Date, context: TakeContext, report: TakeReport, sidecar: SidecarFile) {
        self.number = number
        self.start = start
        self.date = date
        self.context = context
        self.report = report
        self.sidecar = sidecar
    }

    /// Bytes of the current chunk's files on disk (one stat() each).
    func fileBytes() -> Int { Self.bytesOnDisk(writers.map(\.path)) }

    static func bytesOnDisk(_ paths: [String]) -> Int {
        paths.reduce(0) { sum, path in
            var st = stat()
            return sum + (stat(path, &st) == 0 ? Int(st.st_size) : 0)
        }
    }
}
