import Engine
import Foundation
import Jack
import Plugins
import Presets
import Realtime
import SoundFile
#if canImport(Glibc)
import Glibc
import Takes
#endif

/// Meter readings with RMS integrated over 300 ms, peak hold and clip memory, sampled by the control loop (the one
/// reader of the recorder's meters, so the live view and control subscribers never take readings from each other).
///
/// `sample` runs every 50 ms whether anyone watches or not (it keeps the peaks, holds and clips true and the
/// recorder's sums from growing), so it only moves numbers into storage it already has: the `Meter` values, with
/// their port names and decibels, are built when someone reads `meters` (a view, a subscriber, a status query, the
/// metrics), at most once per sample. At 128 channels the old per-turn build (a port-name lookup in libjack and a
/// new array of meters every turn) was most of the control thread's cost in a quiet take.
final class MeterTap {
    /// One reading of every channel: the frames it covers, each channel's energy (mean square x frames) and peak.
    private struct Window {
        var at: Date = .distantPast
        var frames = 0
        var energy: [Double]
        var peak: [Float]
    }
    /// Enough windows for the integration time at the control loop's fastest sampling (50 ms) and then some.
    private static let windowCount = 16
    static let integration = 0.3

    /// The recorder's port names (its configuration's: no libjack call).
    private var names: [String] = []
    private var windows: [Window] = []
    /// The newest window's index in `windows` (a ring: each sample takes the next slot, the oldest).
    private var newest = 0
    /// Linear peak held per channel, and since when.
    private var holds: [Float] = []
    /// Scratch: each channel's peak over the integration time.
    private var levels: [Float] = []
    private var heldAt: [Date] = []
    private var clips: [Date] = []
    private var built: [SessionStatus.Meter]? = []

    func sample(_ recorder: Recorder?) {
        names = recorder?.config.ports ?? []
        let channels = names.count
        if windows.isEmpty || levels.count != channels { reset(channels: channels) }
        guard let r = recorder else { return }
        newest = (newest + 1) % windows.count
        let now = Date()
        var window = windows[newest]
        windows[newest] = Window(energy: [], peak: [])   // so the arrays below are not shared (no copy)
        let frames = window.energy.withUnsafeMutableBufferPointer { energy in
            window.peak.withUnsafeMutableBufferPointer { peak in r.readMeterWindow(energy: energy, peak: peak) }
        }
        windows[newest] = window
        guard frames > 0 else {   // no cycle since the last reading
            newest = (newest + windows.count - 1) % windows.count
            return
        }
        windows[newest].at = now
        windows[newest].frames = frames
        built = nil
        windowPeaks(now: now)
        for c in 0..<channels {
            if windows[newest].peak[c] >= 1.0 { clips[c] = now }
            let level = levels[c]
            if level >= holds[c] || now.timeIntervalSince(heldAt[c]) > 1.5 {
                holds[c] = level
                heldAt[c] = now
            }
        }
    }

    /// The meters as of the last sample.
    var meters: [SessionStatus.Meter] {
        if let built { return built }
        let now = windows.isEmpty ? .distantPast : windows[newest].at
        var energy = [Double](repeating: 0, count: names.count)
        var total = 0
        for w in windows where w.frames > 0 && now.timeIntervalSince(w.at) <= Self.integration {
            total += w.frames
            for c in energy.indices { energy[c] += w.energy[c] }
        }
        windowPeaks(now: now)
        let meters = names.indices.map { c in
            SessionStatus.Meter(port: names[c], peakDB: MeterReading.decibels(levels[c]),
                                rmsDB: 20 * log10((energy[c] / Double(max(1, total))).squareRoot()),
                                holdDB: MeterReading.decibels(holds[c]), clip: now.timeIntervalSince(clips[c]) < 3)
        }
        built = meters
        return meters
    }

    /// Sets `levels` to each channel's highest peak among the windows of the last integration time.
    private func windowPeaks(now: Date) {
        for c in levels.indices { levels[c] = 0 }
        for w in windows where w.frames > 0 && now.timeIntervalSince(w.at) <= Self.integration {
            for c in levels.indices { levels[c] = max(levels[c], w.peak[c]) }
        }
    }

    private func reset(channels: Int) {
        windows = Array(repeating: Window(energy: Array(repeating: 0, count: channels),
                                          peak: Array(repeating: 0, count: channels)), count: Self.windowCount)
        newest = 0
        holds = Array(repeating: 0, count: channels)
        levels = Array(repeating: 0, count: channels)
        heldAt = Array(repeating: .distantPast, count: channels)
        clips = Array(repeating: .distantPast, count: channels)
        built = []
    }
}
