import Foundation
import Jack
import SoundFile

/// Paths and helpers shared by the test targets.
public enum TestEnvironment {
    /// The folder holding the built products (`.build/debug` or the scratch path's equivalent).
    public static var productsDirectory: URL {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // Test bundles run as `.../debug/TandemPackageTests.xctest`.
        while dir.path != "/" && !FileManager.default.fileExists(atPath: dir.appendingPathComponent("tandem").path) {
            dir = dir.deletingLastPathComponent()
        }
        return dir
    }

    /// Path of a built executable or library (e.g. "tandem", "libRTCheck.so").
    public static func product(_ name: String) -> String {
        productsDirectory.appendingPathComponent(name).path
    }

    /// A fresh temporary directory for one test.
    public static func temporaryDirectory(_ label: String) -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("tandem-test-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Whether a program is on PATH.
    public static func hasProgram(_ name: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(name)")
        }
    }

    /// Whether this machine lets us run jackd with real-time scheduling (root, or rtprio limits). Test servers
    /// use it when they can: on a non-real-time server an occasional late cycle (an xrun) makes JACK skip a client,
    /// which breaks the continuity that bit-exact tests check. Without it they run with `-r` and still work.
    public static var realtimeAllowed: Bool { JackServer.realtimeAllowed }

    /// The period test servers use: 1024 frames (21 ms). On a small shared machine a scheduling stall of a few
    /// milliseconds makes a 256-frame server miss a cycle, and JACK then drops or repeats a period inside the graph
    /// (no client can prevent it; Tandem counts the xrun), which would fail a bit-exact test for no fault of ours.
    public static let testPeriod = 1024

    /// Starts a private dummy server with a name unique to this test.
    public static func server(_ label: String, period: Int = testPeriod, sampleRate: Int = 48000) throws -> JackServer {
        try server(named: JackServer.uniqueName("t-\(label)"), period: period, sampleRate: sampleRate)
    }

    /// Starts a private dummy server with a given name (to restart one under the same name).
    public static func server(named name: String, period: Int = testPeriod, sampleRate: Int = 48000) throws -> JackServer {
        JackLibrary.routeMessages(verbose: false)
        return try JackServer(name: name, sampleRate: sampleRate, period: period, realtime: realtimeAllowed)
    }

    /// Writes interleaved samples to a new WAV file.
    public static func writeWAV(_ samples: [Float], channels: Int, sampleRate: Int = 48000, path: String,
                                sample: SampleFormat = .int24) throws {
        let w = try SoundFileWriter(path: path, format: AudioFormat(container: .wav, sample: sample),
                                    channels: channels, sampleRate: sampleRate)
        try samples.withUnsafeBufferPointer { buf throws(SoundFileError) in
            try w.write(buf.baseAddress!, frames: samples.count / channels)
        }
        try w.close()
    }

    /// Writes a short mono 16-bit WAV of `frames` frames of silence at `path` and sets its modification time: a
    /// stand-in for a chunk a recorder closed at `modified` (retention tests).
    public static func writeChunkWAV(path: String, frames: Int, modified: Date) throws {
        try writeWAV([Float](repeating: 0, count: frames), channels: 1, path: path, sample: .int16)
        let t = modified.timeIntervalSince1970
        var times = [timeval(tv_sec: Int(t.rounded(.down)), tv_usec: 0), timeval(tv_sec: Int(t.rounded(.down)), tv_usec: 0)]
        guard utimes(path, &times) == 0 else { throw FixtureError("utimes \(path): \(String(cString: strerror(errno)))") }
    }

    /// Reads a whole audio file.
    public static func readAudio(_ path: String) throws -> (samples: [Float], channels: Int, sampleRate: Int) {
        let r = try SoundFileReader(path: path)
        return (try r.readAll(), r.channels, r.sampleRate)
    }

    /// Runs a program to completion and returns its exit code and combined output.
    @discardableResult
    public static func run(_ arguments: [String], environment: [String: String] = [:],
                           timeout: Double = 60) throws -> (code: Int32, output: String) {
        let folder = temporaryDirectory("run")
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("out.txt").path
        let p = try ChildProcess(arguments, environment: environment, outputPath: log)
        let code = p.wait(timeout: timeout) ?? { p.stop(SIGKILL); return -1 }()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return (code, output)
    }

    /// Mounts a tmpfs of `megabytes` MiB on `mount` (created if missing; root only), for a test that fills a disk on
    /// purpose. Undo it with `unmount`.
    public static func mountSmallDisk(at mount: String, megabytes: Int) throws {
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let m = try run(["/bin/mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", mount])
        guard m.code == 0 else { throw FixtureError("mount a \(megabytes) MiB tmpfs on \(mount): \(m.output)") }
    }

    /// Unmounts what `mountSmallDisk` mounted, lazily (a file still open there does not keep it mounted).
    public static func unmount(_ mount: String) {
        _ = try? run(["/bin/umount", "-l", mount])
    }

    /// Polls `condition` every 10 ms for up to `timeout` seconds.
    public static func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
