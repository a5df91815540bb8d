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

    /// Each element of an array of tables has its own sub-tables: `[[scene]]`, `[scene.values]`, `[[scene]]`,
    /// `[scene.values]` is two scenes, each with its values (was refused as "defined twice").
    @Test func eachElementOfAnArrayOfTablesHasItsOwnSubTables() throws {
        let t = try TOMLParser.parse("[[s]]\nn = 1\n[s.v]\nx = 1\n[[s]]\nn = 2\n[s.v]\nx = 2\n")
        guard case .array(let items, _)? = t["s"], items.count == 2 else { Issue.record("\(t)"); return }
        for (i, item) in items.enumerated() {
            guard case .table(let s) = item, case .table(let v)? = s["v"] else { Issue.record("\(item)"); continue }
            #expect(v["x"] == .integer(i + 1, line: 4 * i + 4))
        }
    }

    /// TOML 1.0's numbers: hexadecimal, octal and binary integers, an underscore only between two digits, no
    /// leading zeros, floats with a fraction and/or an exponent.
    @Test func readsNumbersAsTOMLOneWritesThem() throws {
        let t = try TOMLParser.parse("""
            hex = 0x90
            upper = 0xDEAD_beef
            oct = 0o755
            bin = 0b1101_0101
            zeros = 0x0000_00ff
            big = 9_223_372_036_854_775_807
            small = -9_223_372_036_854_775_808
            plus = +17
            zero = -0
            f1 = 1_000.000_5
            f2 = 6.626e-3_4
            f3 = 1E+2
            f4 = -0.0
            midi = [0x90, 0x3C, 0x64]
            """)
        #expect(t["hex"] == .integer(144, line: 1))
        #expect(t["upper"] == .integer(0xDEAD_BEEF, line: 2))
        #expect(t["oct"] == .integer(493, line: 3))
        #expect(t["bin"] == .integer(213, line: 4))
        #expect(t["zeros"] == .integer(255, line: 5))
        #expect(t["big"] == .integer(Int.max, line: 6))
        #expect(t["small"] == .integer(Int.min, line: 7))
        #expect(t["plus"] == .integer(17, line: 8))
        #expect(t["zero"] == .integer(0, line: 9))
        #expect(t["f1"] == .float(1000.0005, line: 10))
        #expect(t["f2"] == .float(6.626e-34, line: 11))
        #expect(t["f3"] == .float(100, line: 12))
        #expect(t["f4"] == .float(-0.0, line: 13))
        #expect(t["midi"] == .array([.integer(0x90, line: 14), .integer(60, line: 14), .integer(100, line: 14)], line: 14))
    }

    @Test(arguments: [
        ("a = 1__000", "an underscore goes between two digits"),
        ("a = 1000_", "an underscore goes between two digits"),
        ("a = 1_.5", "an underscore goes between two digits"),
        ("a = 1._5", "an underscore goes between two digits"),
        ("a = 1e_5", "an underscore goes between two digits"),
        ("a = 0x_90", "an underscore goes between two digits"),
        ("a = 007", "no leading zeros"),
        ("a = -01.5", "no leading zeros"),
        ("a = -0x90", "a hexadecimal integer takes no sign"),
        ("a = +0o7", "an octal integer takes no sign"),
        ("a = 0x9G", "holds something other than digits"),
        ("a = 0o8", "holds something other than digits"),
        ("a = 0b102", "holds something other than digits"),
        ("a = 0X90", "holds something other than digits"),
        ("a = 0x", "digits are missing"),
        ("a = 1.", "digits are missing"),
        ("a = 1e", "digits are missing"),
        ("a = 1.5.3", "holds something other than digits"),
        ("a = 0x8000_0000_0000_0000", "too large for an integer"),
        ("a = 9_223_372_036_854_775_808", "too large for an integer"),
        ("a = 1e999", "too large for a number"),
        ("a = inf", "finite numbers only"),
        ("a = -nan", "finite numbers only"),
        ("a = .5", "strings need quotes"),
    ])
    func numbersTOMLRefusesAreRefusedInWords(text: String, fragment: String) {
        do {
            _ = try TOMLParser.parse(text)
            Issue.record("\(text) was read")
        } catch {
            #expect(error.line == 1 && error.message.contains(fragment), "\(text): \(error)")
        }
    }

    @Test(arguments: [
        ("a = ", 1, "expected a value"),
        ("a = \"open", 1, "unterminated string"),
        ("[t]\nx = 1\n[t]", 3, "defined twice"),
        ("a = 1\na = 2", 2, "defined twice"),
        ("[[s]]\n[s.v]\nx = 1\n[s.v]", 4, "defined twice"),
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
