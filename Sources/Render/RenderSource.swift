import Foundation
import MIDIFile
import SoundFile

/// The input of a job as its chain takes it: audio files one after another, their chosen channels mapped onto the
/// chain's inputs as the player maps a file onto its ports (a mono file feeds every input, otherwise channel k feeds
/// input k), converted to the chain's rate with libsoxr as the player converts (4096-frame reads into one stream
/// whose tail is flushed at the end); and the events of a MIDI file at the chain's rate, timed as the player times
/// them.
///
/// Threads: one owner (the job).
final class RenderSource {
    /// One source file as opened: what the report says of it.
    struct FileFacts: Codable, Sendable, Equatable {
        var path: String
        var sha256: String?
        var frames: Int
        var sampleRate: Int
        var channels: Int
        /// The file's channels taken (from 0), when not all.
        var taken: [Int]?
        /// The file's BWF time reference, if it has one.
        var timeReference: UInt64?
    }

    /// Frames read from a file at a time (the player's disk reader reads as many).
    static let chunkFrames = 4096

    let rate: Int
    let channels: Int
    private(set) var files: [FileFacts] = []
    /// The MIDI events, in time order, with the stream's length in frames at `rate`.
    private(set) var midi: [(frame: Int, bytes: [UInt8])] = []
    private(set) var midiFrames = 0
    private(set) var midiFile: FileFacts?
    /// Frames of audio at the chain's rate, as far as known up front (exact without resampling).
    private(set) var expectedFrames = 0
    /// The resampling done, if any: the files' rate.
    private(set) var resampledFrom: Int?

    private var readers: [SoundFileReader] = []
    private var takes: [[Int]] = []
    private var current = 0
    private var resampler: Resampler?
    private var flushed = false
    private let fileChannels: Int
    private let quality: ResampleQuality
    /// Interleaved frames (`fileChannels` wide) converted and not yet handed out.
    private var fifo: [Float] = []
    private var fifoStart = 0
    private var fileBuffer: [Float] = []
    private var pickBuffer: [Float] = []
    private var resampled: [Float] = []
    /// Frames handed out so far.
    private(set) var delivered = 0
    private(set) var ended = false

    /// The chain's rate for these inputs: `wanted`, or the first file's (48000 for MIDI alone).
    static func rate(inputs: [RenderInput], wanted: Int?) throws(RenderError) -> Int {
        if let wanted { return wanted }
        guard let first = inputs.first else { return 48000 }
        do throws(SoundFileError) {
            return try SoundFileReader(path: first.path).sampleRate
        } catch {
            throw RenderError(.badInput, "cannot read '\(first.path)': \(error.message)")
        }
    }

    init(inputs: [RenderInput], midiPath: String?, rate: Int, chainInputs: Int,
         quality: ResampleQuality) throws(RenderError) {
        self.rate = rate
        self.channels = chainInputs
        self.quality = quality
        var width: Int?
        var fileRate: Int?
        for input in inputs {
            let r: SoundFileReader
            do throws(SoundFileError) { r = try SoundFileReader(path: input.path) } catch {
                throw RenderError(.badInput, "cannot read '\(input.path)': \(error.message)")
            }
            if let cut = r.truncation {
                throw RenderError(.badInput, "'\(input.path)' is cut short (\(cut)): refusing to render part of it")
            }
            guard r.frames > 0 else { throw RenderError(.badInput, "'\(input.path)' holds no audio") }
            let take = input.channels ?? Array(0..<r.channels)
            if let bad = take.first(where: { $0 < 0 || $0 >= r.channels }) {
                throw RenderError(.badInput, "'\(input.path)' has \(r.channels) channel(s): there is no channel \(bad + 1)")
            }
            if let w = width, w != take.count {
                throw RenderError(.badInput, "'\(input.path)' gives \(take.count) channel(s), the files before it \(w):"
                                  + " one job's files must match")
            }
            if let fr = fileRate, fr != r.sampleRate {
                throw RenderError(.badInput, "'\(input.path)' is at \(r.sampleRate) Hz, the files before it at \(fr) Hz:"
                                  + " one job's files must match")
            }
            width = take.count
            fileRate = r.sampleRate
            readers.append(r)
            takes.append(take)
            files.append(FileFacts(path: input.path, sha256: nil, frames: r.frames, sampleRate: r.sampleRate,
                                   channels: r.channels, taken: input.channels, timeReference: r.broadcastTimeReference))
        }
        fileChannels = width ?? 0
        if let w = width {
            guard w == chainInputs || w == 1 else {
                throw RenderError(.badInput, "the input gives \(w) channels and the chain takes \(chainInputs)"
                                  + (chainInputs == 0 ? " (it starts with an instrument: give it a MIDI file)"
                                     : ": give the chain \(w) inputs (--inputs \(w), or the preset's inputs or"
                                     + " channels), choose \(chainInputs) of the file's channels (--channels), or give a mono file"))
            }
        }
        if let fr = fileRate, fr != rate {
            guard rate <= fr * 8 && fr <= rate * 8 else {
                throw RenderError(.badInput, "'\(inputs[0].path)' is at \(fr) Hz: it cannot be converted to the chain's"
                                  + " \(rate) Hz (at most 8 times up or down)")
            }
            do throws(SoundFileError) {
                resampler = try Resampler(from: fr, to: rate, channels: fileChannels, quality: quality)
            } catch {
                throw RenderError(.badInput, "cannot convert \(fr) Hz to \(rate) Hz: \(error.message)")
            }
            resampledFrom = fr
        }
        let total = files.reduce(0) { $0 + $1.frames }
        if let fr = fileRate {
            expectedFrames = fr == rate ? total
                : (total / fr) * rate + ((total % fr) * rate + fr / 2) / fr
        }
        fileBuffer = [Float](repeating: 0, count: Self.chunkFrames * max(1, readers.map(\.channels).max() ?? 1))
        pickBuffer = [Float](repeating: 0, count: Self.chunkFrames * max(1, fileChannels))
        if let midiPath { try readMIDI(midiPath) }
        if readers.isEmpty { ended = true }
    }

    private func readMIDI(_ path: String) throws(RenderError) {
        do throws(MIDIFileError) {
            let file = try MIDIFile.read(path: path)
            let timed = try file.timedEvents(sampleRate: rate, includeMeta: true, path: path)
            var lastSent = -1
            for e in timed {
                guard let b = e.message.wireBytes, !b.isEmpty else { continue }
                midi.append((e.frame, b))
                lastSent = e.frame
            }
            // The player's length of a MIDI item: its end-of-track time, at least one frame past its last event.
            midiFrames = max(timed.last?.frame ?? 0, lastSent + 1, 1)
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            midiFile = FileFacts(path: path, sha256: nil, frames: midiFrames, sampleRate: rate, channels: 0,
                                 taken: nil, timeReference: nil)
            _ = size
        } catch {
            throw RenderError(.badInput, "cannot read the MIDI file: \(error.description)")
        }
    }

    /// The input's length at the chain's rate: the audio's (exact once it has ended), or the MIDI file's.
    var frames: Int { max(ended && !readers.isEmpty ? delivered : expectedFrames, midiFrames) }

    /// Fills `buffers` (`channels` planar buffers) with the next `count` frames, silence past the end. Returns the
    /// audio frames that were input (fewer than `count` at the end, 0 after it).
    func read(into buffers: UnsafePointer<UnsafeMutablePointer<Float>>, count: Int) throws(RenderError) -> Int {
        for ch in 0..<channels { buffers[ch].update(repeating: 0, count: count) }
        guard fileChannels > 0 else { return 0 }
        while fifo.count - fifoStart < count * fileChannels && !ended { try fill() }
        let available = min(count, (fifo.count - fifoStart) / fileChannels)
        fifo.withUnsafeBufferPointer { f in
            let base = f.baseAddress! + fifoStart
            for ch in 0..<channels {
                let k = fileChannels == 1 ? 0 : ch
                let out = buffers[ch]
                for i in 0..<available { out[i] = base[i * fileChannels + k] }
            }
        }
        fifoStart += available * fileChannels
        if fifoStart > 1 << 16 {
            fifo.removeFirst(fifoStart)
            fifoStart = 0
        }
        delivered += available
        return available
    }

    /// Reads the next chunk of the current file (through the converter), or flushes the converter at the end.
    private func fill() throws(RenderError) {
        guard current < readers.count else {
            if let r = resampler, !flushed {
                resample(r, nil, frames: 0)
                flushed = true
            }
            ended = true
            return
        }
        let reader = readers[current]
        let got: Int
        do throws(SoundFileError) {
            got = try fileBuffer.withUnsafeMutableBufferPointer { (b) throws(SoundFileError) -> Int in
                try reader.read(into: b.baseAddress!, frames: Self.chunkFrames)
            }
        } catch {
            throw RenderError(.badInput, "cannot read '\(reader.path)': \(error.message)")
        }
        if got == 0 {
            reader.close()
            current += 1
            return
        }
        let take = takes[current]
        let all = take.count == reader.channels && take.enumerated().allSatisfy { $0.offset == $0.element }
        if all {
            fileBuffer.withUnsafeBufferPointer { chunk($0.baseAddress!, frames: got) }
        } else {
            for i in 0..<got {
                for (k, c) in take.enumerated() { pickBuffer[i * fileChannels + k] = fileBuffer[i * reader.channels + c] }
            }
            pickBuffer.withUnsafeBufferPointer { chunk($0.baseAddress!, frames: got) }
        }
    }

    private func chunk(_ samples: UnsafePointer<Float>, frames: Int) {
        if let r = resampler {
            resample(r, samples, frames: frames)
        } else {
            fifo.append(contentsOf: UnsafeBufferPointer(start: samples, count: frames * fileChannels))
        }
    }

    /// Everything the converter gives for this input (nil: its tail, at the end).
    private func resample(_ r: Resampler, _ input: UnsafePointer<Float>?, frames: Int) {
        let room = Self.chunkFrames * 9
        if resampled.count < room * fileChannels { resampled = [Float](repeating: 0, count: room * fileChannels) }
        var fed = 0
        repeat {
            let out = resampled.withUnsafeMutableBufferPointer { o in
                r.process(input.map { $0 + fed * fileChannels }, inputFrames: frames - fed, into: o.baseAddress!,
                          outputCapacity: room)
            }
            fed += out.consumed
            fifo.append(contentsOf: resampled[0..<(out.produced * fileChannels)])
            if input == nil && out.produced == 0 { return }
            if input != nil && out.consumed == 0 && out.produced == 0 { return }
        } while input == nil || fed < frames
    }

    /// The MIDI events from `index` on whose frames are before `end` (`index` moves past them).
    func midiEvents(before end: Int, from index: inout Int) -> ArraySlice<(frame: Int, bytes: [UInt8])> {
        let start = index
        while index < midi.count && midi[index].frame < end { index += 1 }
        return midi[start..<index]
    }

    /// The source files' checksums (for the report; read again from disk), on a thread of their own that starts
    /// now: on a machine of two cores the hashing runs beside the chain instead of after it.
    func checksums() -> PendingChecksums { PendingChecksums(files: files, midi: midiFile) }
}

/// Checksums being taken on a thread of their own; `wait` gives them.
///
/// Threads: the thread writes `result` once and signals; `wait` reads it after the signal.
// @unchecked Sendable: the checksum thread writes `result` once, before it signals `done`; `wait` reads it only after
// the semaphore, on the owner's thread, which alone touches `waited`.
final class PendingChecksums: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: (files: [RenderSource.FileFacts], midi: RenderSource.FileFacts?) = ([], nil)
    private var waited = false

    init(files: [RenderSource.FileFacts], midi: RenderSource.FileFacts?) {
        let thread = Thread { [self] in
            var out = files
            for i in out.indices { out[i].sha256 = SHA256.file(out[i].path) }
            var m = midi
            if let p = m?.path { m?.sha256 = SHA256.file(p) }
            result = (out, m)
            done.signal()
        }
        thread.name = "render-checksums"
        thread.start()
    }

    func wait() -> (files: [RenderSource.FileFacts], midi: RenderSource.FileFacts?) {
        if !waited {
            done.wait()
            waited = true
        }
        return result
    }
}
