import Foundation
import Plugins
import Presets
import Testing
import TestSupport

/// MIDI through a chain, cycle by cycle without a server: real Debian instruments (mda-lv2, lv2-examples) played
/// from atom sequences the way a rack fills them.
@Suite(.serialized) struct ChainMIDITests {
    static let sampler = "http://lv2plug.in/plugins/eg-sampler"
    static let piano = "http://drobilla.net/plugins/mda/Piano"
    static let epiano = "http://drobilla.net/plugins/mda/EPiano"
    static let jx10 = "http://drobilla.net/plugins/mda/JX10"
    static let dx10 = "http://drobilla.net/plugins/mda/DX10"
    static let fifths = "http://lv2plug.in/plugins/eg-fifths"
    static let amp = "http://plugin.org.uk/swh-plugins/amp"

    /// One MIDI event at an absolute frame of the run.
    struct Event {
        var frame: Int
        var bytes: [UInt8]
    }

    static func noteOn(_ frame: Int, _ note: UInt8 = 69, velocity: UInt8 = 100, channel: UInt8 = 0) -> Event {
        Event(frame: frame, bytes: [0x90 | channel, note, velocity])
    }

    static func noteOff(_ frame: Int, _ note: UInt8 = 69, channel: UInt8 = 0) -> Event {
        Event(frame: frame, bytes: [0x80 | channel, note, 0])
    }

    /// Runs `frames` frames (whole periods) of the chain with `events` as its MIDI (and silence as its audio input);
    /// `between` is called before each cycle with its first frame. Returns the output (planar) and the MIDI the chain
    /// wrote (absolute frames).
    static func run(_ chain: PluginChain, events: [Event], frames: Int, period: Int,
                    capacity: Int = 32768, between: (Int) -> Void = { _ in }) -> ([[Float]], [Event]) {
        let ins = max(1, chain.inputChannels), outs = chain.outputChannels
        let inBuffers = (0..<ins).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: period) }
        let outBuffers = (0..<outs).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: period) }
        for b in inBuffers { b.initialize(repeating: 0, count: period) }
        let midiIn = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        let midiOut = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer {
            (inBuffers + outBuffers).forEach { $0.deallocate() }
            midiIn.deallocate()
            midiOut.deallocate()
        }
        let seq = AtomSequence.sequenceURID, midi = AtomSequence.midiURID
        var result = [[Float]](repeating: [], count: outs)
        var written: [Event] = []
        var at = 0
        while at + period <= frames {
            between(at)
            AtomSequence.clear(midiIn, sequenceURID: seq)
            for e in events where e.frame >= at && e.frame < at + period {
                _ = e.bytes.withUnsafeBytes {
                    AtomSequence.insert(midiIn, capacity: UInt32(capacity), frame: Int64(e.frame - at), type: midi,
                                        bytes: $0.baseAddress!, size: UInt32(e.bytes.count))
                }
            }
            let m = ChainMIDI(input: UnsafeRawPointer(midiIn), inputCapacity: UInt32(capacity), output: midiOut,
                              outputCapacity: UInt32(capacity))
            inBuffers.withUnsafeBufferPointer { i in
                outBuffers.withUnsafeBufferPointer { o in
                    ChainState.run(chain.state.pointee, inputs: i.baseAddress!, outputs: o.baseAddress!, frames: period,
                                   midi: m)
                }
            }
            for c in 0..<outs { result[c] += UnsafeBufferPointer(start: outBuffers[c], count: period) }
            var cursor: UInt32 = 0
            while let e = AtomSequence.next(midiOut, capacity: UInt32(capacity), cursor: &cursor) {
                if e.type == midi {
                    written.append(Event(frame: at + Int(e.frame),
                                         bytes: Array(UnsafeBufferPointer(start: e.body, count: Int(e.size)))))
                }
            }
            at += period
        }
        return (result, written)
    }

    static func firstSound(_ x: [Float], threshold: Float = 1e-6) -> Int? { x.firstIndex { abs($0) > threshold } }

    static func instrument(_ uri: String, period: Int, controls: [PluginSpec.Control] = [], channel: Int? = nil,
                           more: [PluginSpec] = []) -> PluginChain {
        var spec = PluginSpec(uri: uri, controls: controls)
        spec.midiChannel = channel
        return PluginChain(specs: [spec] + more, inputs: 0, outputs: nil, sampleRate: 48000, period: period,
                           label: "test")
    }

    @Test(arguments: [64, 1024])
    func aNoteOnAtFrameKSoundsFromFrameK(period: Int) throws {
        // The onset of the sampler's click with the note at frame 0 of the run, then at frame k of a later cycle.
        let reference = Self.instrument(Self.sampler, period: period)
        #expect(reference.problems.isEmpty, "\(reference.problems)")
        #expect(reference.outputChannels == 1 && reference.inputChannels == 0)
        let (base, _) = Self.run(reference, events: [Self.noteOn(0)], frames: 4 * period, period: period)
        let d0 = try #require(Self.firstSound(base[0]), "the sampler made no sound")
        for k in [1, period / 2 + 3, period - 1] {
            let chain = Self.instrument(Self.sampler, period: period)
            let at = 2 * period + k
            let (out, _) = Self.run(chain, events: [Self.noteOn(at)], frames: 6 * period, period: period)
            #expect(Self.firstSound(out[0]) == at + d0, "note at frame \(k) of a cycle of \(period)")
            #expect(Array(out[0][at + d0..<at + d0 + 64]) == Array(base[0][d0..<d0 + 64]))
        }
    }

    @Test func pianoA4IsFourHundredFortyHertz() throws {
        let chain = Self.instrument(Self.epiano, period: 256)
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        let (out, _) = Self.run(chain, events: [Self.noteOn(0, velocity: 100)], frames: 48000, period: 256)
        let segment = Array(out[0][12000..<36000])
        let fit = SineFit.fit(segment, sampleRate: 48000, around: 440)
        #expect(abs(fit.frequency - 440) <= 0.1, "\(fit.frequency) Hz")
    }

    @Test func theChannelFilterPassesOnlyItsChannel() throws {
        let own = Self.instrument(Self.sampler, period: 256, channel: 3)
        let (other, _) = Self.run(own, events: [Self.noteOn(100, channel: 0)], frames: 2048, period: 256)
        #expect(Self.firstSound(other[0]) == nil, "a note on channel 1 sounded in a plugin on channel 3")
        let again = Self.instrument(Self.sampler, period: 256, channel: 3)
        let (ownNote, _) = Self.run(again, events: [Self.noteOn(100, channel: 2)], frames: 2048, period: 256)
        #expect(Self.firstSound(ownNote[0]) != nil)
    }

    @Test func aPluginsMIDIOutputReachesTheChainsOutputAtItsFrame() throws {
        // eg-fifths (MIDI in, MIDI out, no audio) answers each note with the note and its fifth, at the same frame;
        // the audio path goes past it to the amplifier.
        let chain = PluginChain(specs: [PluginSpec(uri: Self.fifths), PluginSpec(uri: Self.amp)], inputs: 1,
                                outputs: nil, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(chain.takesMIDI && chain.writesMIDI)
        let (_, written) = Self.run(chain, events: [Self.noteOn(300, 60), Self.noteOff(700, 60)], frames: 1024,
                                    period: 256)
        let seen = written.map { "\($0.frame):\($0.bytes.map { String($0, radix: 16) }.joined(separator: " "))" }
        #expect(seen == ["300:90 3c 64", "300:90 43 64", "700:80 3c 0", "700:80 43 0"], "\(seen)")
    }

    @Test func aFloodIsCutAndCountedNeverOverflowing() throws {
        let chain = Self.instrument(Self.sampler, period: 1024)
        // 4000 events in one cycle: far more than a plugin's atom input holds (8 KiB: about 340).
        let flood = (0..<4000).map { Self.Event(frame: $0 / 4, bytes: [0xB0, 1, UInt8($0 % 128)]) }
        let (out, _) = Self.run(chain, events: flood, frames: 2048, period: 1024, capacity: 1 << 17)
        #expect(out[0].count == 2048)
        #expect(chain.midiDropped > 3000, "\(chain.midiDropped) dropped")
        #expect(chain.midiDelivered + chain.midiDropped == 4000)
    }

    @Test func bypassingAnInstrumentSendsAllNotesOff() throws {
        // EPiano holds a note until its note-off; bypassed with the note held, then back: silent (the notes-off
        // ended the note), where without it the note would still ring.
        let chain = Self.instrument(Self.epiano, period: 256)
        let (out, _) = Self.run(chain, events: [Self.noteOn(0)], frames: 48000 * 2, period: 256) { at in
            if at == 256 * 40 { try? chain.setBypass("epiano", true) }
            if at == 256 * 60 { try? chain.setBypass("epiano", false) }
        }
        let before = out[0][256 * 30..<256 * 40].map { abs($0) }.max() ?? 0
        let after = out[0][256 * 100..<256 * 120].map { abs($0) }.max() ?? 0
        #expect(before > 0.01, "the note did not sound (\(before))")
        #expect(after < before / 1000, "the note still rings after bypass and back: \(after) vs \(before)")
    }

    @Test func egMetroClicksOnEachBeatOfTheToldTempo() throws {
        // Rolling from frame 0 at 100 bpm: told once (the first cycle), then the position continues; a click every
        // 28800 frames at 48 kHz, the first at frame 0. Then a relocation to the middle of a beat is told too.
        let chain = Self.instrument("http://lv2plug.in/plugins/eg-metro", period: 256)
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        let frames = 256 * 600
        var time = ChainTime()
        time.speed = 1
        time.hasBBT = true
        time.beatsPerMinute = 100
        time.beatsPerBar = 4
        let out = Self.runTimed(chain, frames: frames, period: 256) { at in
            var t = time
            t.frame = Int64(at)
            let beats = Double(at) * 100 / 60 / 48000
            t.bar = Int64(beats / 4)
            t.barBeat = Float(beats - Double(t.bar) * 4)
            return t
        }
        var onsets: [Int] = []
        for i in 0..<out.count where out[i] != 0 && (i == 0 || out[max(0, i - 2000)..<i].allSatisfy({ $0 == 0 })) {
            onsets.append(i)
        }
        // eg-metro's click ramps up from 0: its first sound is a frame or two after the beat.
        let lead = onsets.first ?? -1
        #expect((0..<4).contains(lead), "\(onsets)")
        #expect(onsets == stride(from: lead, to: frames, by: 28800).map { $0 }, "\(onsets)")
    }

    /// Runs the chain with no MIDI and the transport `time(at)` for each cycle starting at frame `at`; the chain is
    /// told whenever it does not continue the last one.
    static func runTimed(_ chain: PluginChain, frames: Int, period: Int, time: (Int) -> ChainTime) -> [Float] {
        let input = UnsafeMutablePointer<Float>.allocate(capacity: period)
        input.initialize(repeating: 0, count: period)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: period)
        defer {
            input.deallocate()
            output.deallocate()
        }
        var result: [Float] = []
        var last: ChainTime?
        var at = 0
        while at + period <= frames {
            let t = time(at)
            let changed = last.map { !$0.continues(to: t, after: period) } ?? true
            last = t
            let m = ChainMIDI(input: nil, inputCapacity: 0, output: nil, outputCapacity: 0, time: t, timeChanged: changed)
            var ins = [input], outs = [output]
            ins.withUnsafeMutableBufferPointer { i in
                outs.withUnsafeMutableBufferPointer { o in
                    ChainState.run(chain.state.pointee, inputs: i.baseAddress!, outputs: o.baseAddress!, frames: period,
                                   midi: m)
                }
            }
            result += UnsafeBufferPointer(start: output, count: period)
            at += period
        }
        return result
    }
}
