import Foundation
import Realtime

/// The one source of every limit on a value that comes from outside (command line, OSC, preset, sidecar), and the
/// checked conversions that turn such values into frame counts. The preset loader, the engine configs, the command
/// line's `validate()` and the control protocol all read these, so a value one surface accepts is accepted by all.
///
/// Threads: constants and pure functions; any thread.
public enum Limits {
    /// Ports of a recorder or player.
    public static let channels: ClosedRange<Int> = 1...256
    /// Chunk rotation by time: at least a tenth of a second, at most a week.
    public static let rotateSeconds: ClosedRange<Double> = 0.1...604_800
    /// Chunk rotation by size: at least 64 KiB, at most 1 PiB.
    public static let rotateBytes: ClosedRange<Int> = 65_536...(1 << 50)
    /// Pre-roll kept while armed.
    public static let prerollSeconds: ClosedRange<Double> = 0...600
    /// A take's maximum length: at most a year.
    public static let durationSeconds: ClosedRange<Double> = 0.01...31_536_000
    /// The recorder's capture ring (on top of the pre-roll).
    public static let recorderRingSeconds: ClosedRange<Double> = 0.1...600
    /// The player's ring.
    public static let playerRingSeconds: ClosedRange<Double> = 0.1...60
    /// Player gain.
    public static let gainDB: ClosedRange<Double> = -120...24
    /// A seek position: at most about 31 years, far below where seconds × rate stops fitting a frame count.
    public static let seekSeconds: ClosedRange<Double> = 0...1e9
    /// A seek given in frames.
    public static let seekFrames: ClosedRange<Int> = 0...(1 << 48)
    /// Encoder quality.
    public static let quality: ClosedRange<Double> = 0...1
    /// How often a subscriber receives meters.
    public static let meterIntervalSeconds: ClosedRange<Double> = 0.02...60
    /// The OSC control port (0 turns it off on the command line).
    public static let controlPort: ClosedRange<Int> = 1024...65535
    /// Session and client names: JACK allows 64 bytes for a client name; a session name goes into file names.
    public static let clientNameBytes: ClosedRange<Int> = 1...JackNames.clientBytes
    /// A JACK server name (longer ones overflow a buffer inside libjack).
    public static let serverNameBytes: ClosedRange<Int> = 1...JackNames.serverBytes
    public static let sessionNameBytes: ClosedRange<Int> = 1...128
    /// The longest file name most Linux file systems take (NAME_MAX).
    public static let fileNameBytes = 255
    /// How long `tandem run` waits at start for a server that is not up yet (on_server_loss = "resume").
    public static let serverWaitSeconds: ClosedRange<Double> = 0...31_536_000
    /// A plugin chain's tail run out after the last frame.
    public static let tailSeconds: ClosedRange<Double> = 0...600
    /// A rack's dry/wet mix: 0 is the input alone, 1 the chain's output alone.
    public static let mix: ClosedRange<Double> = 0...1
    /// Plugins in one chain (a preset's, or one edited live).
    public static let pluginsPerChain = 128
    /// Level trigger: thresholds, the level's window, attack, hold, a take's minimum length.
    public static let triggerDBFS: ClosedRange<Double> = -120...0
    public static let triggerWindowSeconds: ClosedRange<Double> = 0.0001...1
    public static let triggerAttackSeconds: ClosedRange<Double> = 0...60
    public static let triggerHoldSeconds: ClosedRange<Double> = 0...3600
    public static let triggerMinLengthSeconds: ClosedRange<Double> = 0...86_400
    /// Retention: how long takes are kept, the free space to keep, the guard time.
    public static let retentionKeepDays: ClosedRange<Double> = 0.01...36_500
    public static let retentionFreeBytes: ClosedRange<Int> = 65_536...(1 << 50)
    public static let retentionGuardSeconds: ClosedRange<Double> = 60...31_536_000

    /// Whether `value` is a number inside `range` (NaN and infinities never are).
    public static func contains(_ range: ClosedRange<Double>, _ value: Double) -> Bool {
        value.isFinite && range.contains(value)
    }

    /// `seconds` at `rate` as a frame count, or nil when either is not finite, negative, or the product does not
    /// fit an `Int` comfortably (anything beyond 2^52 frames is far outside every limit above).
    public static func frames(seconds: Double, rate: Double) -> Int? {
        guard seconds.isFinite, rate.isFinite, seconds >= 0, rate > 0 else { return nil }
        let product = (seconds * rate).rounded(.down)
        guard product.isFinite, product < 4_503_599_627_370_496 else { return nil }
        return Int(product)
    }

    /// "0.1 to 604800 seconds": a range as the error messages print it.
    public static func describe(_ range: ClosedRange<Double>, unit: String = "") -> String {
        "\(number(range.lowerBound)) to \(number(range.upperBound))\(unit)"
    }

    /// "64K to 1P": a byte range as the error messages print it (binary units, as sizes are written in presets).
    public static func describeSize(_ range: ClosedRange<Int>) -> String {
        "\(size(range.lowerBound)) to \(size(range.upperBound))"
    }

    /// A byte count in the largest binary unit that divides it ("64K", "1P", "1000").
    public static func size(_ bytes: Int) -> String {
        for (shift, unit) in [(50, "P"), (40, "T"), (30, "G"), (20, "M"), (10, "K")]
        where bytes != 0 && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return "\(bytes)"
    }

    /// A number as a person writes it (no ".0" on whole numbers).
    public static func number(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }

    /// A control value (a `Float` in the plugin) as the Double that prints as the Float does: -3.0000002, not the
    /// -3.0000002384185791 that widening gives. It converts back to the same Float.
    public static func double(_ f: Float) -> Double {
        f.isFinite ? Double(f.description) ?? Double(f) : Double(f)
    }

    /// A problem with a name a person or a file system will not take: empty, too long, control characters (NUL
    /// among them), or a path separator where `allowSlash` is false. Nil when the name is fine.
    public static func nameProblem(_ name: String, what: String, bytes: ClosedRange<Int>, allowSlash: Bool = false)
        -> String? {
        let n = name.utf8.count
        if n < bytes.lowerBound { return "\(what) is empty" }
        if n > bytes.upperBound { return "\(what) is \(n) bytes long (at most \(bytes.upperBound))" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "\(what) contains a control character (NUL, newline, ...)"
        }
        if !allowSlash && name.contains("/") { return "\(what) must not contain '/'" }
        return nil
    }
}
