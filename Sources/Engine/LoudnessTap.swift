import Foundation
import Loudness
import Presets
import Realtime
import Synchronization

/// The real-time half of a loudness tap: the process callback copies its output frames into a ring, all or nothing
/// (a full ring drops the cycle and counts it), and does nothing else for loudness. Built before activation.
struct LoudnessFeed: BitwiseCopyable {
    let ring: FrameRing
    /// Frames the meter never saw because the ring was full (the meter thread fell a second behind).
    let dropped: AtomicCounter

    /// Realtime: safe.
    @inline(__always)
    func copy(_ buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, frames: Int) {
        if !ring.writer.write(planar: UnsafePointer(buffers), frames: frames) { _ = dropped.add(frames) }
    }
}

/// The loudness meters of an engine without a disk writer (the player's outputs, a rack's): the process callback
/// hands its output frames over through a `LoudnessFeed`, and a thread of the tap's own (`tandem-loudness`) measures
/// them ten times a second and publishes the readings. The recorder needs none: its disk writer measures.
///
/// Threads: `init`, `start`, `close` on the control thread; `readings` from any thread; the feed's ring: the process
/// thread writes, the tap's thread reads.
// @unchecked Sendable: the meters and the ring's reader half belong to the tap's thread, started in `start` and
// joined in `close`; `readings` is a Mutex, `stopping` an Atomic.
final class LoudnessTap: @unchecked Sendable {
    let feed: LoudnessFeed
    private let meters: ProgrammeMeters
    private let engine: String
    private let wakeup = Wakeup.allocate()
    private let stopping = Atomic<Bool>(false)
    private var thread: OSThread?
    private let published = Mutex<[ProgrammeLoudness]>([])
    private var closed = false

    /// A tap over `groups` of `channels` output channels (`names`), or nil when `groups` is nil. The ring holds one
    /// second.
    init?(engine: String, groups: LoudnessGroups?, channels: Int, names: [String], sampleRate: Int) throws(EngineError) {
        guard let groups, channels > 0 else { return nil }
        do {
            meters = try ProgrammeMeters(groups: groups.groups, channels: channels, names: names,
                                         sampleRate: Double(sampleRate))
        } catch {
            throw EngineError(.badConfig, "loudness of \(engine): \(error)")
        }
        let ring: FrameRing
        do { ring = try FrameRing.allocate(channels: channels, capacity: max(4096, sampleRate)) } catch {
            throw EngineError(.memory, "the loudness ring of \(engine): \(error)")
        }
        feed = LoudnessFeed(ring: ring, dropped: .allocate())
        self.engine = engine
    }

    /// Starts measuring (after activation).
    func start() {
        guard thread == nil else { return }
        thread = OSThread(name: "tandem-loudness") { [self] in run() }
    }

    private func run() {
        let reader = feed.ring.reader
        while !stopping.load(ordering: .acquiring) {
            _ = wakeup.wait(seconds: 0.1)
            while reader.available > 0 {
                let r = reader.peek(min(reader.available, 8192))
                meters.add(r.first, frames: r.firstFrames)
                if r.secondFrames > 0 { meters.add(r.second, frames: r.secondFrames) }
                reader.consume(r.frames)
            }
            let readings = meters.readings(engine: engine)
            published.withLock { $0 = readings }
        }
    }

    /// The readings as of the tap's last look (at most 0.1 s old). Any thread.
    var readings: [ProgrammeLoudness] { published.withLock { $0 } }

    /// Stops the thread and frees the ring (`freeRing`: no callback can run any more; a client given up on while
    /// the server did not answer keeps it). Control thread, after the client is closed.
    func close(freeRing: Bool = true) {
        guard !closed else { return }
        closed = true
        stopping.store(true, ordering: .releasing)
        wakeup.post()
        thread?.join()
        thread = nil
        wakeup.deallocate()
        guard freeRing else { return }
        feed.ring.deallocate()
        feed.dropped.deallocate()
    }
}
