import Foundation

/// Tandem's own test LV2 plugins (Tests/Fixtures/lv2/tandem-test.lv2: C source and Turtle), compiled with `cc`
/// into a temporary bundle on first use. Never installed: a test loads the bundle into its own host
/// (`PluginHost.load(bundle:)`), or hands `lv2Path` to a child as LV2_PATH.
public enum TestPlugins {
    public static let fixedBlock = "http://tandem.test/lv2/fixedblock"
    /// Control `mode`: 0 passes audio, 1 segfaults in run(), 2 aborts, 3 hangs.
    public static let crash = "http://tandem.test/lv2/crash"
    /// Control `micros`: spins that long in each run() (a plugin of known cost).
    public static let heavy = "http://tandem.test/lv2/heavy"
    /// Described by the bundle, not held by its library.
    public static let absent = "http://tandem.test/lv2/absent"
    /// Its library needs an undefined symbol: the loader refuses it.
    public static let broken = "http://tandem.test/lv2/broken"

    /// Whether the bundle can be built here (a C compiler and the LV2 headers).
    public static var canBuild: Bool {
        TestEnvironment.hasProgram("cc") && FileManager.default.fileExists(atPath: "/usr/include/lv2/core/lv2.h")
    }

    private static let built: Result<String, TestPluginError> = {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/Fixtures/lv2/tandem-test.lv2")
        let root = TestEnvironment.temporaryDirectory("lv2")
        let bundle = root.appendingPathComponent("tandem-test.lv2")
        do {
            try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
            for file in ["manifest.ttl", "tandem-test.ttl"] {
                try FileManager.default.copyItem(at: source.appendingPathComponent(file),
                                                 to: bundle.appendingPathComponent(file))
            }
            for name in ["tandem-test", "tandem-broken"] {
                let (code, output) = try TestEnvironment.run(
                    ["/usr/bin/env", "cc", "-shared", "-fPIC", "-O2", "-Wall", "-o",
                     bundle.appendingPathComponent("\(name).so").path,
                     source.appendingPathComponent("\(name).c").path], timeout: 60)
                guard code == 0 else { return .failure(TestPluginError(description: "cc failed: \(output)")) }
            }
            return .success(bundle.path)
        } catch {
            return .failure(TestPluginError(description: "\(error)"))
        }
    }()

    /// The built bundle's folder (`.../tandem-test.lv2`).
    public static func bundle() throws -> String { try built.get() }

    /// An LV2_PATH that finds the test plugins and the installed ones.
    public static func lv2Path() throws -> String {
        let b = try bundle()
        return URL(fileURLWithPath: b).deletingLastPathComponent().path + ":/usr/lib/lv2:/usr/local/lib/lv2"
    }
}

public struct TestPluginError: Error, CustomStringConvertible {
    public let description: String
}
