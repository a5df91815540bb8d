import Foundation
import Jack
import Testing
import TestSupport

/// Where outputs go: `-o out/` names a folder (made when it is not there), and a folder that takes no files is exit 2
/// before anything starts, as CLI.md says.
@Suite(.serialized) struct OutputFolderTests {
    static func tandem(_ args: [String], in dir: URL, environment: [String: String] = [:]) throws
        -> (code: Int32, output: String) {
        try TestEnvironment.run(["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", dir.path, TestEnvironment.product("tandem")]
                                + args, environment: environment, timeout: 60)
    }

    func input(_ dir: URL, _ name: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try TestEnvironment.writeWAV(Signals.noise(frames: 4800, channels: 1).map { $0 * 0.25 }, channels: 1, path: path)
        return path
    }

    /// `render -o out/` where `out/` is not there: one input renders into `out/` (it wrote `./out.wav`), two inputs
    /// render into `out2/` (it said a folder was needed).
    @Test(.enabled(if: RackTests.hasSWH))
    func aTrailingSlashNamesAFolderThatIsMade() throws {
        let dir = TestEnvironment.temporaryDirectory("render-slash")
        let a = try input(dir, "a.wav"), b = try input(dir, "b.wav")
        let one = try Self.tandem(["render", "--plugin", RackTests.amp, "-o", "out/", a], in: dir)
        #expect(one.code == 0, "\(one.output)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.wav").path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/a.wav").path), "\(one.output)")
        let two = try Self.tandem(["render", "--plugin", RackTests.amp, "-o", "out2/", a, b], in: dir)
        #expect(two.code == 0, "\(two.output)")
        for name in ["out2/a.wav", "out2/b.wav", "out2/a.json"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path), "\(name)\n\(two.output)")
        }
        // A file where the folder would be: refused in words, exit 2.
        try Data("x".utf8).write(to: dir.appendingPathComponent("plain"))
        let clash = try Self.tandem(["render", "--plugin", RackTests.amp, "-o", "plain/", a], in: dir)
        #expect(clash.code == 2 && clash.output.contains("is a file, not a folder"), "\(clash.output)")
    }

    /// A read-only folder (a tmpfs mounted read-only: root writes anywhere else) is exit 2 with the folder named, before
    /// anything starts: `render -o ro/x.wav` (exit 4 after the job had run), `render -o ro/sub/` (a folder that cannot
    /// be made there), and `demo -d ro` (exit 1 after a server was started).
    @Test(.enabled(if: RackTests.hasSWH && getuid() == 0, "mounting a tmpfs needs root"))
    func aReadOnlyFolderIsExitTwoBeforeAnythingStarts() throws {
        let dir = TestEnvironment.temporaryDirectory("render-ro")
        let a = try input(dir, "a.wav")
        let ro = dir.appendingPathComponent("ro").path
        try FileManager.default.createDirectory(atPath: ro, withIntermediateDirectories: true)
        let m = try TestEnvironment.run(["/bin/mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro])
        try #require(m.code == 0, "\(m.output)")
        defer { TestEnvironment.unmount(ro) }
        let file = try Self.tandem(["render", "--plugin", RackTests.amp, "-o", ro + "/x.wav", a], in: dir)
        #expect(file.code == 2 && file.output.contains("'\(ro)'") && file.output.contains("takes no files"), "\(file.output)")
        let folder = try Self.tandem(["render", "--plugin", RackTests.amp, "-o", ro + "/sub/", a], in: dir)
        #expect(folder.code == 2 && folder.output.contains("cannot be made in '\(ro)'"), "\(folder.output)")
        let demo = try Self.tandem(["demo", "-d", ro, "--seconds", "1"], in: dir,
                                   environment: ["JACK_DEFAULT_SERVER": JackServer.uniqueName("nosuch")])
        #expect(demo.code == 2 && demo.output.contains(ro) && !demo.output.contains("server"), "\(demo.output)")
    }
}
