import Foundation
@testable import Presets
import Testing

/// Issue 43, item 6: every preset example in the docs is read as Tandem reads it. Each ```toml block of docs/*.md
/// parses; each `[[connect]]` pattern in one is a pattern Tandem takes (a glob holding a regular expression is
/// refused, and so is the example); a block that is a whole preset (it has a `[session]` table) loads without a
/// problem other than a file or folder the reader's machine lacks.
@Suite struct DocsExamplesTests {
    static var docs: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs")
    }

    /// Every ```toml block: its file, its first line, its text.
    static func blocks() throws -> [(file: String, line: Int, text: String)] {
        var out: [(String, Int, String)] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        for name in files {
            let lines = try String(contentsOf: docs.appendingPathComponent(name), encoding: .utf8)
                .components(separatedBy: "\n")
            var k = 0
            while k < lines.count {
                if lines[k].trimmingCharacters(in: .whitespaces) == "```toml" {
                    let start = k + 1
                    var end = start
                    while end < lines.count && lines[end].trimmingCharacters(in: .whitespaces) != "```" { end += 1 }
                    out.append((name, start + 1, lines[start..<min(end, lines.count)].joined(separator: "\n")))
                    k = end
                }
                k += 1
            }
        }
        return out
    }

    @Test func everyTOMLExampleInTheDocsReadsAndItsPatternsAreTaken() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count >= 5, "found \(blocks.count) examples")
        var problems: [String] = []
        var patterns = 0, presets = 0
        for b in blocks {
            let table: TOMLTable
            do { table = try TOMLParser.parse(b.text) } catch {
                problems.append("docs/\(b.file):\(b.line): \(error)")
                continue
            }
            if case .array(let rules, _)? = table["connect"] {
                for case .table(let rule) in rules {
                    for key in ["from", "to"] {
                        guard case .string(let text, _)? = rule[key] else { continue }
                        patterns += 1
                        if let why = PortPattern(text).problem { problems.append("docs/\(b.file):\(b.line): \(key) = \(text): \(why)") }
                    }
                }
            }
            guard table["session"] != nil else { continue }
            presets += 1
            let (_, found) = PresetLoader.parse(b.text, file: "docs/\(b.file)", baseDirectory: NSTemporaryDirectory())
            for p in found where !(p.message.contains("no such file") || p.message.contains("does not exist")
                                   || p.message.contains("not a folder") || p.message.contains("cannot be created")) {
                problems.append("docs/\(b.file):\(b.line) (block line \(p.line ?? 0)): \(p.key): \(p.message)")
            }
        }
        // The example presets beside the docs load as they are (their media folder is in the tree).
        let presetsDir = Self.docs.deletingLastPathComponent().appendingPathComponent("Presets")
        let examples = (try? FileManager.default.contentsOfDirectory(atPath: presetsDir.path))?.filter { $0.hasSuffix(".toml") }.sorted() ?? []
        for name in examples {
            let (_, found) = PresetLoader.load(path: presetsDir.appendingPathComponent(name).path)
            for p in found where !(p.message.contains("no such file") || p.message.contains("does not exist")
                                   || p.message.contains("not a folder") || p.message.contains("cannot be created")) {
                problems.append("Presets/\(name):\(p.line ?? 0): \(p.key): \(p.message)")
            }
        }
        #expect(examples.count >= 5)
        print("docs examples: \(examples.count) example presets, \(blocks.count) TOML blocks, \(presets) whole presets, \(patterns) connection patterns;"
              + " \(problems.count) problem(s)")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
