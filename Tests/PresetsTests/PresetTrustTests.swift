import Testing
import Foundation
@testable import Presets
import TestSupport

/// The small preset findings of issue 17, each a case the old loader got wrong.
@Suite struct PresetTrustTests {
    static let dir = TestEnvironment.temporaryDirectory("presettrust")

    func parse(_ text: String) -> (Preset?, [PresetProblem]) {
        PresetLoader.parse(text, file: "trust.toml", baseDirectory: Self.dir.path)
    }

    @Test func crlfLineEndingsAreValidTOML() throws {
        let text = "[session]\r\nname = \"crlf\"\r\n\r\n[recorder]\r\nchannels = 2 # comment\r\nformat = \"flac\"\r\nsample = \"int24\"\r\n"
        let (preset, problems) = parse(text)
        #expect(problems.isEmpty, "\(problems)")
        #expect(preset?.session.name == "crlf" && preset?.recorder?.ports.count == 2)
        #expect(preset?.recorder?.format.container == .flac)
    }

    @Test func aNulOrControlCharacterInATemplateIsRefused() {
        for template in ["a\u{0}b", "take\nnext", "x\u{7F}"] {
            let (preset, problems) = parse("[recorder]\ntemplate = \"\(template.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? String(format: "\\u%04X", $0.value) : String($0) }.joined())\"\n")
            #expect(preset == nil)
            #expect(problems.contains { $0.key == "recorder.template" && $0.message.contains("control character") }, "\(problems)")
        }
        // And a template that slips through anyway never cuts a file name short at a NUL.
        let name = FileNameTemplate("a\u{0}b").render(.init(session: "s", take: 1, date: Date()), fileExtension: "wav")
        #expect(name == "a_b.wav")
    }

    @Test func aHugeSessionNameIsRefusedByTheCheck() {
        let huge = String(repeating: "n", count: 1_000_000)
        let (preset, problems) = parse("[session]\nname = \"\(huge)\"\n[recorder]\nchannels = 1\n")
        #expect(preset == nil)
        #expect(problems.contains { $0.key == "session.name" && $0.message.contains("bytes long") }, "\(problems.map(\.message))")
        // A name within the limit that makes file names too long with the template is refused too.
        let long = String(repeating: "n", count: 120)
        let (p2, problems2) = parse("[session]\nname = \"\(long)\"\n[recorder]\nchannels = 1\ntemplate = \"{session}-{session}-{take}\"\n")
        #expect(p2 == nil && problems2.contains { $0.key == "recorder.template" && $0.message.contains("file names would be") },
                "\(problems2.map(\.message))")
    }

    @Test func aFolderWhereNoFileCanBeMadeIsRefused() {
        let (preset, problems) = parse("[session]\ndirectory = \"/proc\"\n[recorder]\nchannels = 1\n")
        #expect(preset == nil)
        #expect(problems.contains { $0.key == "session.directory" && $0.message.contains("cannot hold takes") }, "\(problems)")
    }

    @Test func aHugeIntegerSaysItIsTooLarge() {
        let (preset, problems) = parse("[recorder]\nchannels = 99999999999999999999999\n")
        #expect(preset == nil)
        #expect(problems.contains { $0.message.contains("too large for an integer") }, "\(problems)")
        #expect(!problems.contains { $0.message.contains("strings need quotes") })
    }

    @Test func theWordNameElsewhereDoesNotHideTheSessionNameFromTheFileName() throws {
        let path = Self.dir.appendingPathComponent("studio-a.toml").path
        try "[recorder]\nchannels = 1\ntemplate = \"{session}-name-{take}\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        let (preset, problems) = PresetLoader.load(path: path)
        #expect(problems.isEmpty, "\(problems)")
        #expect(preset?.session.name == "studio-a")
        let (given, _) = PresetLoader.load(path: path, overrides: ["session.name=\"other\""])
        #expect(given?.session.name == "other")
    }

    @Test func limitsRefuseWhatCannotBeAFrameCount() {
        #expect(Limits.frames(seconds: 1e15, rate: 48000) == nil || !Limits.contains(Limits.seekSeconds, 1e15))
        #expect(Limits.frames(seconds: .nan, rate: 48000) == nil)
        #expect(Limits.frames(seconds: .infinity, rate: 48000) == nil)
        #expect(Limits.frames(seconds: -1, rate: 48000) == nil)
        #expect(Limits.frames(seconds: 1e300, rate: 48000) == nil)
        #expect(Limits.frames(seconds: 1.5, rate: 48000) == 72000)
        #expect(!Limits.contains(Limits.rotateSeconds, 1e-300) && !Limits.contains(Limits.gainDB, .nan))
    }
}
