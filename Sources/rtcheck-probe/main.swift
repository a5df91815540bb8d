// A JACK client whose process callback is either clean (copies input to output through preallocated pointers) or
// deliberately bad (builds a Swift array and a string every cycle), so the RT-safety interposer can be shown to
// catch what it is meant to catch. Test support only.
//
// Usage: rtcheck-probe SERVER clean|bad SECONDS
import Foundation
import Jack
import Realtime

struct ProbeState: BitwiseCopyable {
    var input: JackPort
    var output: JackPort
    var scratch: UnsafeMutablePointer<Float>
    var cycles: AtomicCounter
}

let clean: JackProcessCallback = { frames, arg in
    let s = arg!.assumingMemoryBound(to: ProbeState.self).pointee
    let src = s.input.buffer(frames) ?? s.scratch
    let dst = s.output.buffer(frames) ?? s.scratch
    dst.update(from: src, count: Int(frames))
    s.cycles.add(1)
    return 0
}

let bad: JackProcessCallback = { frames, arg in
    let s = arg!.assumingMemoryBound(to: ProbeState.self).pointee
    var copy = [Float](repeating: 0, count: Int(frames))          // allocates
    copy[0] = (s.input.buffer(frames) ?? s.scratch)[0]
    let label = "cycle \(s.cycles.load()) first \(copy[0])"         // allocates, formats
    s.cycles.add(label.isEmpty ? 0 : 1)
    return 0
}

let args = CommandLine.arguments
guard args.count == 4, let seconds = Double(args[3]), args[2] == "clean" || args[2] == "bad" else {
    FileHandle.standardError.write(Data("usage: rtcheck-probe SERVER clean|bad SECONDS\n".utf8))
    exit(2)
}
JackLibrary.routeMessages(verbose: false)
do {
    let client = try JackClient(name: "rtcheck-probe", server: args[1])
    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: Period.maxFrames)
    scratch.initialize(repeating: 0, count: Period.maxFrames)
    let state = UnsafeMutablePointer<ProbeState>.allocate(capacity: 1)
    state.initialize(to: ProbeState(input: try client.registerPort("in", direction: .input),
                                    output: try client.registerPort("out", direction: .output),
                                    scratch: scratch, cycles: .allocate()))
    try client.activate(process: args[2] == "bad" ? bad : clean, context: UnsafeMutableRawPointer(state)) {}
    usleep(UInt32(seconds * 1_000_000))
    client.close()
    print("cycles \(state.pointee.cycles.load())")
} catch {
    FileHandle.standardError.write(Data("rtcheck-probe: \(error)\n".utf8))
    exit(3)
}
