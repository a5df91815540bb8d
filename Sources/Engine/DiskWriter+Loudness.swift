import Foundation
import Loudness
import Presets
import Realtime
import Takes

// The recorder's loudness, on the disk writer's thread (docs/LOUDNESS.md): live meters between takes, the take's own
// meters during one (`ActiveTake.loudness`, fed in `TakeFiles`), and the readings published for the status.
extension DiskWriter {
    static func meters(_ groups: LoudnessGroups?, channels: Int, names: [String], sampleRate: Int) -> ProgrammeMeters? {
        guard let groups else { return nil }
        return try? ProgrammeMeters(groups: groups.groups, channels: channels, names: names,
                                    sampleRate: Double(sampleRate))
    }

    /// Between takes (`taking` false): feeds the live meters every frame of the ring behind `reader` they have not
    /// seen (gaps are not measured).
    func feedLiveMeters(_ reader: FrameRingReader, taking: Bool) {
        guard let live, !taking else { return }
        if liveAfterTake {
            live.reset()
            liveAfterTake = false
        }
        while meterAhead < reader.available {
            let n = min(reader.available - meterAhead, TakeFiles.chunkFrames)
            let r = reader.peek(n, offset: meterAhead)
            live.add(r.first, frames: r.firstFrames)
            if r.secondFrames > 0 { live.add(r.second, frames: r.secondFrames) }
            meterAhead += n
        }
    }

    /// Publishes the readings of the running take's meters (`take`), else of the live ones; at most every 100 ms.
    func publishLoudness(take: ProgrammeMeters?) {
        guard live != nil || take != nil else { return }
        let now = ProcessInfo.processInfo.systemUptime
        guard now - lastPublished >= 0.1 else { return }
        lastPublished = now
        let readings: [ProgrammeLoudness]
        if let meters = take {
            readings = meters.readings(engine: "recorder")
            liveAfterTake = true
        } else {
            readings = live?.readings(engine: "recorder") ?? []
        }
        loudness.withLock { $0 = readings }
    }
}
