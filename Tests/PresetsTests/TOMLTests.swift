import Testing
@testable import Presets

@Suite struct TOMLTests {
    @Test func parsesTablesArraysAndKeepsLines() throws {
        let t = try TOMLParser.parse("""
            # comment
            title = "x" # trailing
            [a]
            n = 1_000
            f = -2.5e1
            b = true
            list = [
              "one",  # first
              'two\\n',
            ]
            inline = { k = 1, s = "v" }
            [[rule]]
            from = "a"
            [[rule]]
            from = "b"
            d.e = 3
            """)
        #expect(t["title"] == .string("x", line: 2))
        guard case .table(let a)? = t["a"] else { Issue.record("no [a]"); return }
        #expect(a["n"] == .integer(1000, line: 4))
        #expect(a["f"] == .float(-25, line: 5))
        #expect(a["b"] == .bool(true, line: 6))
        #expect(a["list"] == .array([.string("one", line: 8), .string("two\\n", line: 9)], line: 7))
        #expect(a.keyLines["inline"] == 11)
        guard case .array(let rules, _)? = t["rule"], rules.count == 2, case .table(let second) = rules[1] else {
            Issue.record("rules")
            return
        }
        #expect(second["from"] == .string("b", line: 15))
        guard case .table(let d)? = second["d"] else { Issue.record("dotted"); return }
        #expect(d["e"] == .integer(3, line: 16))
    }

    @Test(arguments: [
        ("a = ", 1, "expected a value"),
        ("a = \"open", 1, "unterminated string"),
        ("[t]\nx = 1\n[t]", 3, "defined twice"),
        ("a = 1\na = 2", 2, "defined twice"),
        ("a = bare", 1, "strings need quotes"),
        ("a = 1 2", 1, "after a value"),
        ("a = 1979-05-27", 1, "dates"),
        ("a = [1, 2", 1, "expected ',' or ']'"),
        ("a = \"\\q\"", 1, "unknown escape"),
        ("\n\n[x", 3, "must end with ']'"),
    ])
    func syntaxErrorsSayWhereAndWhat(text: String, line: Int, fragment: String) {
        #expect(throws: TOMLError.self) { try TOMLParser.parse(text) }
        do { _ = try TOMLParser.parse(text) } catch {
            #expect(error.line == line, "\(error)")
            #expect(error.message.contains(fragment), "\(error)")
        }
    }
}
