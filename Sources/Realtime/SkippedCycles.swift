/// Cycles the server ran without a client, told from JACK's frame time.
///
/// JACK wakes a late client once for several cycles; the audio of the cycles in between never passed through it.
/// Each cycle stores where the next one should begin; a cycle that begins later jumped by the frames skipped. The
/// frame time is the engine's current cycle, so a callback that runs after the next cycle has begun reads it one
/// cycle early; the following cycle then reads a step back, which comes out negative: a correction of the jump
/// before. Counts summed over a run are exact; a jump's place is within one period.
public enum SkippedCycles {
    /// A jump larger than this (about 87 s at 48 kHz) is not taken for skipped cycles (a new server's clock).
    public static let maxFrames = 1 << 22

    /// Frames skipped before this cycle (negative: a correction), or 0. `expected` is the previous cycle's frame time
    /// plus its frames, or negative before the first cycle. Realtime: safe.
    @inlinable @inline(__always)
    public static func frames(frameTime: UInt32, expected: Int) -> Int {
        guard expected >= 0 else { return 0 }
        let jump = Int(Int32(bitPattern: frameTime &- UInt32(truncatingIfNeeded: expected)))
        return abs(jump) <= maxFrames ? jump : 0
    }
}
