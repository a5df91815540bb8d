import Foundation
import Testing
import TestSupport

/// `~` in a preset is `$HOME`, as for the HTTP token file and a shell (it was the passwd entry's home, whatever
/// `$HOME` said); the passwd home only when `$HOME` is not set.
@Suite struct HomeFolderTests {
    func check(_ preset: String, environment: [String]) throws -> (code: Int32, output: String) {
        try TestEnvironment.run(["/usr/bin/env"] + environment + [TestEnvironment.product("tandem"), "preset", "check", preset],
                                timeout: 30)
    }

    @Test func aTildeInAPresetIsHome() throws {
        let dir = TestEnvironment.temporaryDirectory("home-tilde")
        let home = dir.appendingPathComponent("home").path
        let sub = "takes-\(getpid())"
        try FileManager.default.createDirectory(atPath: (home as NSString).appendingPathComponent(sub),
                                                withIntermediateDirectories: true)
        let preset = dir.appendingPathComponent("home.toml").path
        try "[session]\nname = \"home\"\ndirectory = \"~/\(sub)\"\n[recorder]\nchannels = 1\n"
            .write(toFile: preset, atomically: true, encoding: .utf8)
        let withHome = try check(preset, environment: ["HOME=\(home)"])
        #expect(withHome.code == 0, "\(withHome.output)")
        // Without $HOME: the passwd entry's home, where this folder is not.
        let passwd = String(cString: getpwuid(getuid())!.pointee.pw_dir)
        let without = try check(preset, environment: ["-u", "HOME"])
        #expect(without.code == 2 && without.output.contains("'\((passwd as NSString).appendingPathComponent(sub))'"),
                "\(without.output)")
    }
}
