import Jack
import Logging
import Presets
import Plugins
import Realtime

/// A rack's MIDI in its RT state: the JACK MIDI ports, and the two atom sequences the chain runs with (see
/// `ChainMIDI`): the MIDI of every input port merged in frame order, and the MIDI the plugins wrote, which goes to
/// every output port.
///
/// Threads: `gather`, `scatter` and `chain` on the process thread (Realtime: safe); `allocate`/`deallocate` on the
/// control thread while the callback does not run; the counters from any thread.
struct RackMIDI: BitwiseCopyable {
    let inputs: PortArray
    var inputCount: Int { inputs.count }
    let outputs: PortArray
    var outputCount: Int { outputs.count }
    /// The merged input sequence and the chain's output sequence, `capacity` bytes each.
    let input: UnsafeMutableRawPointer
    let output: UnsafeMutableRawPointer
    let capacity: UInt32
    let sequenceURID: UInt32
    let midiURID: UInt32
    /// `Counter` cells.
    let counters: AtomicCounterArray
    /// Process thread only: the transport as last told to the plugins, and whether it was told (0: not yet).
    let lastTime: UnsafeMutablePointer<ChainTime>
    let timeTold: UnsafeMutablePointer<Int>
    /// The channel-voice messages control maps listen to (CC, pitch bend, program change, note-on), each at its JACK
    /// frame time, for the session's control loop (see `Session+Maps`). The process thread is its producer, the
    /// control thread its consumer.
    let controls: MIDIEventRing
    /// 1 while the session has maps or a learn waiting (the control thread sets it; `gather` reads it): with 0
    /// nothing is queued, so a rack without maps never fills the ring.
    let listening: AtomicCounter
    /// The control loop's wake-up (see `SessionEnvironment.loopWakeup`), posted once in a cycle that queued messages
    /// for the maps, so a loop that sleeps while idle applies them at once.
    let wake: Wakeup?

    enum Counter: Int, CaseIterable {
        /// Events read from the input ports.
        case received
        /// Events written to the output ports (once per event, whatever the number of ports).
        case sent
        /// Events left out: the merged input was full, an output port's buffer was full, or an event was out of the
        /// cycle or malformed.
        case dropped
        /// Messages for the control maps left out because the session had not read the last ones (ring full).
        case mapDropped
    }

    /// Messages queued for the control maps between two looks of the control loop (woken by the first of them).
    static let controlCapacity = 1024

    /// Bytes of each sequence: room for about 1300 three-byte events per cycle.
    static let capacity = 32768

    static func allocate(inputs: [JackPort], outputs: [JackPort], sequenceURID: UInt32, midiURID: UInt32,
                         wake: Wakeup?) -> RackMIDI {
        _ = cycleFrame(7, frames: 4)   // what it needs built, built here (see `cycleFrame`)
        let input = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        let output = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        input.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
        output.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
        let lastTime = UnsafeMutablePointer<ChainTime>.allocate(capacity: 1)
        lastTime.initialize(to: ChainTime())
        let timeTold = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        timeTold.initialize(to: 0)
        let m = RackMIDI(inputs: .allocate(inputs), outputs: .allocate(outputs), input: input,
                         output: output, capacity: UInt32(capacity), sequenceURID: sequenceURID, midiURID: midiURID,
                         counters: .allocate(count: Counter.allCases.count), lastTime: lastTime, timeTold: timeTold,
                         controls: .allocate(capacity: controlCapacity), listening: .allocate(),
                         wake: wake)
        m.clear()
        return m
    }

    func deallocate() {
        inputs.deallocate()
        outputs.deallocate()
        input.deallocate()
        output.deallocate()
        counters.deallocate()
        lastTime.deallocate()
        timeTold.deallocate()
        controls.deallocate()
        listening.deallocate()
    }

    /// Empties both sequences and zeroes the counters. Control thread (after the warm-up call), or process thread.
    func clear() {
        AtomSequence.clear(input, sequenceURID: sequenceURID)
        AtomSequence.clear(output, sequenceURID: sequenceURID)
    }

    func resetCounters() {
        for i in 0..<counters.count { counters.store(i, 0) }
        timeTold.pointee = 0
        controls.reset()
    }

    /// What the chain runs with this cycle, the transport being `transport` over `frames` frames: the plugins are
    /// told the position when it does not continue the last cycle's (start, stop, relocation, tempo or meter
    /// change). Realtime: safe.
    @inline(__always)
    func chain(transport: TransportPosition, frames: Int) -> ChainMIDI {
        var t = ChainTime()
        t.frame = Int64(transport.frame)
        t.speed = transport.rolling ? 1 : 0
        if transport.hasBBT {
            t.hasBBT = true
            t.bar = Int64(transport.bar) - 1
            t.barBeat = transport.barBeat
            // Another client's timebase may say anything: clamped before it becomes an integer.
            let unit = transport.beatType.isFinite ? max(1, min(256, transport.beatType)) : 4
            t.beatUnit = Int32(unit.rounded())
            t.beatsPerBar = transport.beatsPerBar
            t.beatsPerMinute = Float(transport.beatsPerMinute)
        }
        let changed = timeTold.pointee == 0 || !lastTime.pointee.continues(to: t, after: frames)
        lastTime.pointee = t
        timeTold.pointee = 1
        return ChainMIDI(input: UnsafeRawPointer(input), inputCapacity: capacity, output: output,
                         outputCapacity: capacity, time: t, timeChanged: changed)
    }

    /// Merges this cycle's events of every input port into `input`, each at its frame (events past the cycle are
    /// dropped and counted); while the session listens, queues the channel-voice messages maps use, at JACK frame
    /// time `frameTime` plus their frame. Realtime: safe.
    @inline(__always)
    func gather(_ frames: UInt32, frameTime: UInt32 = 0) {
        AtomSequence.clear(input, sequenceURID: sequenceURID)
        var received = 0, dropped = 0, unmapped = 0, queued = 0
        let listen = listening.load() != 0
        for p in 0..<inputCount {
            guard let buffer = inputs[p].midiBuffer(frames) else { continue }
            let n = buffer.count
            for i in 0..<n {
                guard let e = buffer.event(i), let bytes = e.bytes, e.size > 0, e.frame < frames else {
                    dropped += 1
                    continue
                }
                received += 1
                if listen && Self.mapsListen(to: bytes, size: e.size) {
                    if let m = MIDIRingEvent(position: Int(frameTime &+ e.frame), port: p, bytes: bytes,
                                             count: min(3, e.size)) {
                        if controls.push(m) { queued += 1 } else { unmapped += 1 }
                    }
                }
                if !AtomSequence.insert(input, capacity: capacity, frame: Int64(e.frame), type: midiURID,
                                        bytes: bytes, size: UInt32(truncatingIfNeeded: e.size)) {
                    dropped += 1
                }
            }
        }
        if received > 0 { _ = counters.add(Counter.received.rawValue, received) }
        if dropped > 0 { _ = counters.add(Counter.dropped.rawValue, dropped) }
        if unmapped > 0 { _ = counters.add(Counter.mapDropped.rawValue, unmapped) }
        if queued > 0, let wake { wake.post() }
    }

    /// Whether a message is one control maps use: control change, program change, pitch bend, or a note-on with a
    /// velocity, whole (3 bytes, or 2 for program change). Realtime: safe.
    @inline(__always)
    static func mapsListen(to bytes: UnsafePointer<UInt8>, size: Int) -> Bool {
        switch bytes[0] & 0xF0 {
        case 0xB0, 0xE0: return size >= 3
        case 0x90: return size >= 3 && bytes[2] > 0
        case 0xC0: return size >= 2
        default: return false
        }
    }

    /// Writes the MIDI the chain put in `output` to every output port (cleared first). Realtime: safe.
    @inline(__always)
    func scatter(_ frames: UInt32) {
        var sent = 0, dropped = 0
        for p in 0..<outputCount {
            guard let buffer = outputs[p].midiBuffer(frames) else { continue }
            buffer.clear()
            var cursor: UInt32 = 0
            while let e = AtomSequence.next(output, capacity: capacity, cursor: &cursor) {
                guard e.type == midiURID, e.size > 0 else { continue }
                let at = Self.cycleFrame(e.frame, frames: frames)
                if buffer.write(frame: at, bytes: e.body, size: Int(e.size)) {
                    if p == 0 { sent += 1 }
                } else if p == 0 {
                    dropped += 1
                }
            }
        }
        if sent > 0 { _ = counters.add(Counter.sent.rawValue, sent) }
        if dropped > 0 { _ = counters.add(Counter.dropped.rawValue, dropped) }
    }

    func count(_ c: Counter) -> Int { counters.load(c.rawValue) }

    /// The frame of the cycle an event the chain wrote at `frame` goes out at: a plugin's frame outside the cycle
    /// is kept in it (JACK refuses it otherwise). Realtime: safe once `allocate` has run it (an unoptimized build
    /// builds the integer conversion's witness table at its first use: the interposer saw a malloc at a rack's
    /// first MIDI output).
    @inline(__always)
    static func cycleFrame(_ frame: Int64, frames: UInt32) -> UInt32 {
        UInt32(clamping: max(0, min(Int64(frames) - 1, frame)))
    }
}

extension Rack {
    private var midi: RackMIDI { engine.state.pointee.midi }
    /// The MIDI input and output ports (full names, in order).
    public var midiInputNames: [String] { config.midiInputs.map { "\(client.name):\($0)" } }
    public var midiOutputNames: [String] { config.midiOutputs.map { "\(client.name):\($0)" } }
    /// MIDI events read from the MIDI inputs since activation.
    public var midiReceived: Int { midi.count(.received) }
    /// MIDI events written to the MIDI outputs since activation.
    public var midiSent: Int { midi.count(.sent) }
    /// Messages for the control maps left out because the ring was full (see `RackMIDI.controls`).
    public var mapDropped: Int { midi.count(.mapDropped) }
    /// The ring of messages for the control maps: the control thread is its consumer (see `Session+Maps`).
    public var mapMessages: MIDIEventRing { midi.controls }
    /// Turns the queueing of messages for the control maps on or off. Control thread.
    public func listenForMaps(_ on: Bool) { midi.listening.store(on ? 1 : 0) }
    /// MIDI events left out because a buffer was full (the rack's, a plugin's atom input, a JACK port's), or
    /// malformed: a flood is cut and counted, never overflows.
    public var midiDropped: Int { midi.count(.dropped) + (plugins.chain?.midiDropped ?? 0) }
}

extension RackConfig {
    /// The MIDI ports of a `[[rack]]`: those it names, else `midi_in` when a plugin takes MIDI and `midi_out` when
    /// one writes MIDI (`infos`: the plugins that could be looked up).
    public static func midiPorts(_ r: RackSection, infos: [PluginInfo]) -> (inputs: [String], outputs: [String]) {
        let atoms = infos.flatMap(\.ports).filter { $0.kind == .atom && $0.supportsMIDI }
        let ins = r.midiInputs ?? (atoms.contains(where: \.isInput) ? ["midi_in"] : [])
        let outs = r.midiOutputs ?? (atoms.contains { !$0.isInput } ? ["midi_out"] : [])
        return (ins, outs)
    }
}

extension Rack {
    /// With a tempo in the config: offers to be JACK's timebase master (conditionally: a master already there stays)
    /// and returns the timebase the callback reads (freed by `close`). Control thread, after activation.
    static func offerTimebase(_ config: RackConfig, client: JackClient, logger: Logger)
        -> UnsafeMutablePointer<ConstantTimebase>? {
        guard let tempo = config.tempo else { return nil }
        let t = UnsafeMutablePointer<ConstantTimebase>.allocate(capacity: 1)
        t.initialize(to: ConstantTimebase(beatsPerMinute: tempo, beatsPerBar: config.meter.beatsPerBar,
                                          beatType: config.meter.beatUnit))
        if client.becomeTimebaseMaster(t) {
            logger.info("timebase master", metadata: ["rack": "\(config.name)", "tempo": "\(tempo)",
                                                      "meter": "\(config.meter)"])
        } else {
            logger.info("another client is JACK's timebase master; its tempo stands",
                        metadata: ["rack": "\(config.name)"])
        }
        return t
    }
}
