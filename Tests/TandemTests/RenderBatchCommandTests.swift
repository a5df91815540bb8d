import Foundation
import Jack
import Render
import Testing
import TestSupport

/// `tandem render` stopped, killed, hung or asked for what it cannot do: nothing half-done is ever left looking
/// complete, and nothing it was asked is silently not done. No JACK server anywhere.
@Suite(.serialized) struct RenderBatchCommandTests {
    static func tandem(_ args: [String], timeout: Double = 120) throws -> (code: Int32, output: String) {
        try RenderCommandTests.tandem(args, environment: ["LV2_PATH": try TestPlugins.lv2Path()], timeout: timeout)
    }

    static func mono(_ dir: URL, _ name: String, seconds: Double) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try TestEnvironment.writeWAV(Signals.noise(frames: Int(48000 * seconds), channels: 1).map { $0 * 0.5 }, channels: 1,
                                     path: path, sample: .float32)
        return path
    }

    /// Files in `dir` other than `keep`.
    static func left(_ dir: URL, keep: Set<String>) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { !keep.contains($0) }.sorted()
    }

    static func ctime(_ path: String) -> Double {
        var st = stat()
        guard stat(path, &st) == 0 else { return .nan }
        return Double(st.st_ctim.tv_sec) + Double(st.st_ctim.tv_nsec) / 1e9
    }

    /// Bug: the checksums were taken between publishing the audio and writing the report, so a render killed there
    /// left an output with no report. Now both checksums are taken first (the output's over its partial file), the
    /// report is published, and the audio last: the output's name is given after the report's (its inode changes
    /// later), and the checksum in the report is the published file's.
    @Test(.enabled(if: TestPlugins.canBuild))
    func anOutputIsPublishedOnlyAfterItsReport() throws {
        let dir = TestEnvironment.temporaryDirectory("render-order")
        let input = try Self.mono(dir, "in.wav", seconds: 20)
        let out = dir.appendingPathComponent("out.wav").path, report = dir.appendingPathComponent("out.json").path
        let r = try Self.tandem(["render", "--plugin", "\(TestPlugins.crash),mode=0", "--tail", "0", input, "-o", out])
        #expect(r.code == 0, "\(r.output)")
        let audio = Self.ctime(out), json = Self.ctime(report)
        #expect(json <= audio, "the report is named first: report \(json), audio \(audio)")
        let rendered = try RenderReport.read(from: report)
        #expect(rendered.outputSHA256 == SHA256.file(out) && rendered.sources.first?.sha256 == SHA256.file(input))
        // A leftover report alone still stops a render of that output: it is never overwritten.
        try FileManager.default.removeItem(atPath: out)
        let again = try Self.tandem(["render", "--plugin", "\(TestPlugins.crash),mode=0", input, "-o", out])
        #expect(again.code == 2 && again.output.contains("'\(report)' exists: a render never overwrites a file"), "\(again.output)")
        print("render publish order: report named \(String(format: "%.3f", audio - json)) s before its audio;"
              + " a leftover report refused: exit \(again.code)")
    }

    /// Bug: SIGTERM or SIGINT left `.NAME.rendering-PID` files behind. A render stopped by a signal removes its own
    /// and its children's partial files and exits 128 + the signal: in this process (at its next cycle), isolated
    /// (its children killed), and with a plugin that never returns (ended by the signal thread after its grace).
    @Test(.enabled(if: TestPlugins.canBuild))
    func aStoppedRenderLeavesNoPartialFiles() throws {
        let dir = TestEnvironment.temporaryDirectory("render-stop")
        let a = try Self.mono(dir, "a.wav", seconds: 3), b = try Self.mono(dir, "b.wav", seconds: 3)
        let keep: Set<String> = ["a.wav", "b.wav", "log.txt"]
        let log = dir.appendingPathComponent("log.txt").path
        let env = ["LV2_PATH": try TestPlugins.lv2Path()]
        var figures: [String] = []
        // 2 ms a cycle of 64 frames: 4.5 s for each input, stopped long before.
        let heavy = ["--plugin", "\(TestPlugins.heavy),micros=2000", "--period", "64"]
        for (name, args, sig, expected) in [
            ("in this process", heavy + [a, "-o", dir.appendingPathComponent("x.wav").path], SIGTERM, Int32(143)),
            ("isolated, 2 jobs", heavy + ["--jobs", "2", a, b, "-o", dir.path + "/{input}-y.wav"], SIGINT, Int32(130)),
            ("a hung plugin in this process", ["--plugin", "\(TestPlugins.crash),mode=3", a, "-o",
                                               dir.appendingPathComponent("z.wav").path], SIGTERM, Int32(143)),
        ] {
            let p = try ChildProcess([TestEnvironment.product("tandem"), "render"] + args, environment: env, outputPath: log)
            let writing = TestEnvironment.waitUntil(timeout: 20) {
                Self.left(dir, keep: keep).filter { $0.contains(".rendering-") }.count >= (name.hasPrefix("isolated") ? 2 : 1)
            }
            #expect(writing, "\(name): partial files appear: \(Self.left(dir, keep: keep))")
            let began = Date()
            p.signal(sig)
            let code = p.wait(timeout: 20)
            let took = Date().timeIntervalSince(began)
            #expect(code == expected, "\(name): exit \(code ?? -1)\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            #expect(Self.left(dir, keep: keep).isEmpty, "\(name): nothing left: \(Self.left(dir, keep: keep))")
            figures.append("\(name): exit \(code ?? -1) in \(String(format: "%.2f", took)) s")
        }
        print("render stopped by a signal: " + figures.joined(separator: "; "))
    }

    /// Bug: a partial file of a render that was killed (or crashed, not isolated) stayed for good. The next render of
    /// that output removes those whose process is gone, and only those.
    @Test(.enabled(if: TestPlugins.canBuild))
    func stalePartialFilesOfTheSameOutputAreRemoved() throws {
        let dir = TestEnvironment.temporaryDirectory("render-stale")
        let input = try Self.mono(dir, "in.wav", seconds: 0.5)
        // A process id that was alive a moment ago and is not now.
        let gone = try ChildProcess(["/bin/true"])
        _ = gone.wait(timeout: 10)
        let stale = [".out.wav.rendering-\(gone.pid)", ".out.json.rendering-\(gone.pid)"]
        let alive = [".out.wav.rendering-\(getpid())", ".other.wav.rendering-\(gone.pid)", ".out.wav.rendering-x"]
        for name in stale + alive { try Data("partial".utf8).write(to: dir.appendingPathComponent(name)) }
        let r = try Self.tandem(["render", "--plugin", "\(TestPlugins.crash),mode=0", input, "-o",
                                 dir.appendingPathComponent("out.wav").path])
        #expect(r.code == 0, "\(r.output)")
        let files = Self.left(dir, keep: ["in.wav", "out.wav", "out.json"])
        #expect(files == alive.sorted(), "the stale ones removed, the rest kept: \(files)")
        print("render stale partials: \(stale.count) of a gone process removed, \(alive.count) others kept")
    }

    /// Bug: a plugin that never returns hung a batch forever, isolated or not. A child that gives no sign of progress
    /// for `--job-timeout` seconds is killed and reported as hung; the batch goes on and exits 1.
    @Test(.enabled(if: TestPlugins.canBuild))
    func aHungJobIsKilledAfterTheJobTimeout() throws {
        let dir = TestEnvironment.temporaryDirectory("render-hang")
        let a = try Self.mono(dir, "a.wav", seconds: 1), b = try Self.mono(dir, "b.wav", seconds: 1)
        let began = Date()
        let r = try Self.tandem(["render", "--plugin", "\(TestPlugins.crash),mode=3", "--jobs", "2", "--job-timeout", "2",
                                 "--json", a, b, "-o", dir.path + "/{input}-r.wav"], timeout: 60)
        let took = Date().timeIntervalSince(began)
        #expect(r.code == 1, "a hung job fails as a crashed one does: \(r.output)")
        let lines = r.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let failed = lines.filter { $0["event"] as? String == "failed" }
        #expect(failed.count == 2 && failed.allSatisfy { $0["hung"] as? Bool == true && $0["signalName"] as? String == "SIGKILL" },
                "\(r.output)")
        #expect(failed.allSatisfy { ($0["error"] as? String)?.contains("no sign of progress for 2 s") == true }, "\(r.output)")
        #expect(took < 20, "killed near its timeout: \(took) s")
        #expect(Self.left(dir, keep: ["a.wav", "b.wav"]).isEmpty, "\(Self.left(dir, keep: ["a.wav", "b.wav"]))")
        // One input with a timeout runs isolated too (the timeout could not kill a job in this process).
        let one = try Self.tandem(["render", "--plugin", "\(TestPlugins.crash),mode=3", "--job-timeout", "1", a, "-o",
                                   dir.path + "/one.wav"], timeout: 60)
        #expect(one.code == 1 && one.output.contains("no sign of progress for 1 s"), "\(one.output)")
        print("render with a hanging plugin: 2 jobs at --job-timeout 2: exit \(r.code) in \(String(format: "%.1f", took)) s,"
              + " \(failed.count) reported hung; one job at --job-timeout 1: exit \(one.code)")
    }

    /// Bug: `--no-isolate` with `--jobs 2` ran the jobs one after another without a word. Refused, as is a job
    /// timeout that could not be carried out.
    @Test(.enabled(if: TestPlugins.canBuild))
    func noIsolateWithJobsOrATimeoutIsRefused() throws {
        let dir = TestEnvironment.temporaryDirectory("render-noisolate")
        let a = try Self.mono(dir, "a.wav", seconds: 0.2), b = try Self.mono(dir, "b.wav", seconds: 0.2)
        let chain = ["--plugin", "\(TestPlugins.crash),mode=0"]
        var r = try Self.tandem(["render"] + chain + ["--no-isolate", "--jobs", "2", a, b, "-o", dir.path + "/{input}-r.wav"])
        #expect(r.code == 2 && r.output.contains("--no-isolate runs the jobs one after another in this process: it cannot run 2 at once"),
                "\(r.output)")
        r = try Self.tandem(["render"] + chain + ["--no-isolate", "--job-timeout", "5", a, "-o", dir.path + "/t.wav"])
        #expect(r.code == 2 && r.output.contains("cannot be used with --no-isolate"), "\(r.output)")
        let preset = dir.appendingPathComponent("p.toml").path
        try """
            [[rack]]
            name = "fx"
            [[rack.plugins]]
            uri = "\(TestPlugins.crash)"
            [render]
            jobs = 2
            """.write(toFile: preset, atomically: true, encoding: .utf8)
        r = try Self.tandem(["render", preset, "--no-isolate", a, b, "-o", dir.path + "/{input}-p.wav"])
        #expect(r.code == 2 && r.output.contains("[render] jobs = 2"), "\(r.output)")
        #expect(Self.left(dir, keep: ["a.wav", "b.wav", "p.toml"]).isEmpty)
        print("render --no-isolate --jobs 2: exit \(r.code)")
    }
}
