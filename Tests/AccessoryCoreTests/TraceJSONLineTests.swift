import Testing
@testable import AccessoryCore
@testable import AccessoryTraces

@Suite("JSON line parser")
struct TraceJSONLineTests {
    @Test("Parses every kind of value, keeping member order")
    func values() throws {
        let v = try JSONLine.parse(#" {"a":[1,-2.5,true,false,null,"x"],"b":{},"a2":[],"c":{"d":0}} "#)
        #expect(v == .object([
            .init("a", .array([.int(1), .double(-2.5), .bool(true), .bool(false), .null, .string("x")])),
            .init("b", .object([])), .init("a2", .array([])), .init("c", .object([.init("d", .int(0))])),
        ]))
        #expect(v["c"]?["d"]?.intValue == 0)
        #expect(v["a"] != nil && v["zzz"] == nil)
    }

    @Test("Numbers: integers stay exact, decimals round correctly", arguments: [
        ("0", JSONValue.int(0)), ("-0", .int(0)), ("12", .int(12)), ("9223372036854775807", .int(Int.max)),
        ("-9223372036854775807", .int(-Int.max)), ("9223372036854775808", .double(9223372036854775808)),
        ("2.5", .double(2.5)), ("0.001234", .double(0.001234)), ("1e3", .double(1000)), ("1E-2", .double(0.01)),
        ("-0.5e+1", .double(-5)), ("123456.789012", .double(123456.789012)),
        ("3.141592653589793238462643", .double(3.141592653589793)), ("1e-300", .double(1e-300)),
        ("12345678901234567890123", .double(12345678901234567890123.0)),
    ])
    func numbers(text: String, expected: JSONValue) throws {
        #expect(try JSONLine.parse(text) == expected)
    }

    @Test("Strings: every escape, surrogate pairs, raw UTF-8")
    func strings() throws {
        #expect(try JSONLine.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{c}\n\r\t"))
        #expect(try JSONLine.parse(#""caf\u00e9 \u00E9""#) == .string("café é"))
        #expect(try JSONLine.parse(#""\ud83d\ude00!""#) == .string("😀!"))
        #expect(try JSONLine.parse("\"café 😀\"") == .string("café 😀"))
        #expect(try JSONLine.parse(#""a\u0000b""#) == .string("a\u{0}b"))
        #expect(try JSONLine.parse(#"{"k\u0065y":1}"#)["key"] == .int(1))
    }

    @Test("Invalid JSON is rejected with the column and the reason", arguments: [
        (#"{"a" 1}"#, 6, "expected ':' after key, found '1'"),
        (#"{"a":1,}"#, 8, "expected a string key, found '}'"),
        ("[1 2]", 4, "expected ',' or ']' after array element, found '2'"),
        (#"{"a":1"#, 7, "line ends early: expected ',' or '}' after object member"),
        (#"{"a":"abc"#, 6, "unterminated string"),
        (#""\ud83d""#, 2, "unpaired surrogate in \\u escape"),
        (#""\ude00x""#, 2, "unpaired surrogate in \\u escape"),
        (#""\u12g4""#, 2, "\\u escape needs 4 hexadecimal digits"),
        (#""\x""#, 2, "invalid escape '\\x' in string"),
        ("01", 1, "leading zero in number"),
        ("1.", 3, "line ends early: expected a digit after '.'"),
        ("1e", 3, "line ends early: expected a digit in exponent"),
        ("-", 2, "line ends early: expected a digit in number"),
        ("tru", 1, "invalid literal (expected true)"),
        (#"{"a":1} x"#, 9, "unexpected 'x' after the JSON value"),
        ("\"a\tb\"", 3, "control character byte 0x9 in string must be escaped"),
        ("", 1, "line ends early: expected a value"),
        ("{'a':1}", 2, "expected a string key, found '''"),
    ])
    func invalid(text: String, column: Int, reason: String) {
        #expect(throws: JSONLineError(column: column, reason: reason)) { try JSONLine.parse(text) }
    }

    @Test("Invalid UTF-8 and runaway nesting are rejected")
    func invalidBytes() {
        #expect(throws: JSONLineError(column: 1, reason: "invalid UTF-8 in string")) {
            try JSONLine.parse([0x22, 0x61, 0xFF, 0x22])
        }
        #expect(throws: JSONLineError(column: 1, reason: "invalid UTF-8 in string")) {
            try JSONLine.parse(Array(#""\n"#.utf8) + [0xC3, 0x22])
        }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONLineError(column: 65, reason: "nesting deeper than 64 levels")) { try JSONLine.parse(deep) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect((try? JSONLine.parse(ok)) != nil)
    }

    @Test("The error prints as reason at column")
    func errorDescription() {
        #expect(JSONLineError(column: 17, reason: "expected ':' after key").description
            == "expected ':' after key at column 17")
    }
}
