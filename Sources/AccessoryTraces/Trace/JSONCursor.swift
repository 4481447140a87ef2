import AccessoryCore
/// A read position in one line of JSON, with the byte-level scanners that ``JSONLine`` and
/// the trace decoder share. Nothing here allocates unless it returns a `String` or a value.
struct JSONCursor {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    static let maxDepth = 64

    /// Where a string's contents lie, and whether decoding them needs more than a copy.
    struct StringSpan {
        var start: Int
        var end: Int
        var hasEscapes: Bool
        var hasNonASCII: Bool
        var isPlainASCII: Bool { !hasEscapes && !hasNonASCII }
        var count: Int { end - start }
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { index >= bytes.count }

    @inline(__always)
    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    @inline(__always)
    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// Steps over `text` if the bytes at the cursor are exactly it.
    @inline(__always)
    mutating func skip(_ text: StaticString) -> Bool {
        let n = text.utf8CodeUnitCount
        guard bytes.count - index >= n else { return false }
        // Eight bytes at a time: a key is short, and a call of memcmp costs more than it.
        let p = bytes.baseAddress! + index
        let q = UnsafeRawPointer(text.utf8Start)
        var i = 0
        while i + 8 <= n {
            guard p.loadUnaligned(fromByteOffset: i, as: UInt64.self) == q.loadUnaligned(fromByteOffset: i, as: UInt64.self) else { return false }
            i += 8
        }
        while i < n {
            guard p.load(fromByteOffset: i, as: UInt8.self) == q.load(fromByteOffset: i, as: UInt8.self) else { return false }
            i += 1
        }
        index += n
        return true
    }

    // MARK: Errors

    func error(_ reason: String, at position: Int? = nil) -> JSONLineError {
        JSONLineError(column: (position ?? index) + 1, reason: reason)
    }

    /// "expected X, found Y" at the current position, or "line ends early" at its end.
    func expected(_ what: String) -> JSONLineError {
        guard let b = peek() else { return error("line ends early: expected \(what)") }
        return error("expected \(what), found \(Self.describe(b))")
    }

    static func describe(_ b: UInt8) -> String {
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        if b == 0x20 { return "a space" }
        return "byte 0x\(String(b, radix: 16, uppercase: true))"
    }

    mutating func expect(_ byte: UInt8, _ what: @autoclosure () -> String) throws(JSONLineError) {
        skipWhitespace()
        guard peek() == byte else { throw expected(what()) }
        index += 1
    }

    /// Requires that only whitespace remains.
    mutating func expectEnd() throws(JSONLineError) {
        skipWhitespace()
        if let b = peek() { throw error("unexpected \(Self.describe(b)) after the JSON value") }
    }

    // MARK: Values

    mutating func parseValue(depth: Int) throws(JSONLineError) -> JSONValue {
        skipWhitespace()
        guard let b = peek() else { throw expected("a value") }
        switch b {
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
            index += 1
            var members: [JSONValue.Member] = []
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard peek() == UInt8(ascii: "\"") else { throw expected("a string key") }
                let key = try parseString()
                try expect(UInt8(ascii: ":"), "':' after key")
                let value = try parseValue(depth: depth + 1)
                members.append(JSONValue.Member(key, value))
                if try endOfMember(close: UInt8(ascii: "}"), "',' or '}' after object member") {
                    return .object(members)
                }
            }
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                elements.append(try parseValue(depth: depth + 1))
                if try endOfMember(close: UInt8(ascii: "]"), "',' or ']' after array element") {
                    return .array(elements)
                }
            }
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            throw expected("a value")
        }
    }

    /// After an element: consumes `,` (returns false) or the closing bracket (returns true).
    @inline(__always)
    mutating func endOfMember(close: UInt8, _ what: @autoclosure () -> String) throws(JSONLineError) -> Bool {
        skipWhitespace()
        guard let b = peek() else { throw expected(what()) }
        if b == UInt8(ascii: ",") {
            index += 1
            return false
        }
        if b == close {
            index += 1
            return true
        }
        throw expected(what())
    }

    /// Validates and skips one value without building it.
    mutating func skipValue(depth: Int) throws(JSONLineError) {
        skipWhitespace()
        guard let b = peek() else { throw expected("a value") }
        switch b {
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                guard peek() == UInt8(ascii: "\"") else { throw expected("a string key") }
                try skipString()
                try expect(UInt8(ascii: ":"), "':' after key")
                try skipValue(depth: depth + 1)
                if try endOfMember(close: UInt8(ascii: "}"), "',' or '}' after object member") { return }
            }
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                try skipValue(depth: depth + 1)
                if try endOfMember(close: UInt8(ascii: "]"), "',' or ']' after array element") { return }
            }
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            _ = try parseNumber()
        default:
            throw expected("a value")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONLineError) {
        let start = index
        let n = word.utf8CodeUnitCount
        let p = word.utf8Start
        for k in 0..<n {
            guard start + k < bytes.count, bytes[start + k] == p[k] else {
                throw error("invalid literal (expected \(word))", at: start)
            }
        }
        index += n
    }

    // MARK: Strings

    /// Scans a string at its opening quote and returns where its contents lie.
    @inline(__always)
    mutating func scanString() throws(JSONLineError) -> StringSpan {
        let open = index
        index += 1
        let n = bytes.count
        var escapes = false
        var nonASCII = false
        while index < n {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let span = StringSpan(start: open + 1, end: index, hasEscapes: escapes, hasNonASCII: nonASCII)
                index += 1
                return span
            }
            if b == UInt8(ascii: "\\") {
                escapes = true
                index += 2
                continue
            }
            if b < 0x20 { throw error("control character \(Self.describe(b)) in string must be escaped") }
            if b >= 0x80 { nonASCII = true }
            index += 1
        }
        throw error("unterminated string", at: open)
    }

    mutating func parseString() throws(JSONLineError) -> String {
        let span = try scanString()
        return try decode(span)
    }

    mutating func skipString() throws(JSONLineError) {
        let span = try scanString()
        if !span.isPlainASCII { _ = try decode(span) }
    }

    /// The bytes of a span, for matching without building a `String`.
    @inline(__always)
    func raw(_ span: StringSpan) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[span.start..<span.end])
    }

    /// Decodes a scanned string: copies plain ASCII, validates UTF-8, resolves escapes.
    func decode(_ span: StringSpan) throws(JSONLineError) -> String {
        if span.isPlainASCII { return String(decoding: raw(span), as: UTF8.self) }
        if !span.hasEscapes {
            guard let s = String(validating: raw(span), as: UTF8.self) else {
                throw error("invalid UTF-8 in string", at: span.start - 1)
            }
            return s
        }
        var out: [UInt8] = []
        out.reserveCapacity(span.count)
        var i = span.start
        while i < span.end {
            let b = bytes[i]
            guard b == UInt8(ascii: "\\") else {
                out.append(b)
                i += 1
                continue
            }
            let escape = i
            let c = bytes[i + 1]
            i += 2
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(c)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4(at: i, end: span.end, escape: escape)
                i += 4
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    guard i + 1 < span.end, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired surrogate in \\u escape", at: escape)
                    }
                    let low = try hex4(at: i + 2, end: span.end, escape: i)
                    guard low >= 0xDC00 && low <= 0xDFFF else {
                        throw error("unpaired surrogate in \\u escape", at: escape)
                    }
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                    throw error("unpaired surrogate in \\u escape", at: escape)
                }
                Self.appendUTF8(scalar, to: &out)
            default:
                throw error("invalid escape '\\\(Character(Unicode.Scalar(c)))' in string", at: escape)
            }
        }
        if span.hasNonASCII {
            guard let s = String(validating: out, as: UTF8.self) else {
                throw error("invalid UTF-8 in string", at: span.start - 1)
            }
            return s
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func hex4(at i: Int, end: Int, escape: Int) throws(JSONLineError) -> UInt32 {
        guard i + 4 <= end else { throw error("\\u escape needs 4 hexadecimal digits", at: escape) }
        var v: UInt32 = 0
        for k in 0..<4 {
            guard let d = Self.hexDigit(bytes[i + k]) else {
                throw error("\\u escape needs 4 hexadecimal digits", at: escape)
            }
            v = v << 4 | UInt32(d)
        }
        return v
    }

    @inline(__always)
    static func hexDigit(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    static func appendUTF8(_ v: UInt32, to out: inout [UInt8]) {
        switch v {
        case ..<0x80:
            out.append(UInt8(v))
        case ..<0x800:
            out.append(UInt8(0xC0 | v >> 6))
            out.append(UInt8(0x80 | v & 0x3F))
        case ..<0x10000:
            out.append(UInt8(0xE0 | v >> 12))
            out.append(UInt8(0x80 | v >> 6 & 0x3F))
            out.append(UInt8(0x80 | v & 0x3F))
        default:
            out.append(UInt8(0xF0 | v >> 18))
            out.append(UInt8(0x80 | v >> 12 & 0x3F))
            out.append(UInt8(0x80 | v >> 6 & 0x3F))
            out.append(UInt8(0x80 | v & 0x3F))
        }
    }

    // MARK: Numbers

    private static let powersOfTen: [Double] = (0...22).map { k in
        var p = 1.0
        for _ in 0..<k { p *= 10 }
        return p
    }

    /// Parses a number: `.int` for an integer literal that fits, `.double` otherwise.
    ///
    /// Up to 15 significant digits with a small exponent take an exact fast path; anything
    /// longer is handed to the standard library's correctly rounded conversion.
    mutating func parseNumber() throws(JSONLineError) -> JSONValue {
        let start = index
        let n = bytes.count
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < n, Self.isDigit(bytes[index]) else { throw expected("a digit in number") }
        var mantissa: UInt64 = 0
        var digits = 0
        var exponent = 0
        var inexact = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < n, Self.isDigit(bytes[index]) { throw error("leading zero in number", at: start) }
        } else {
            while index < n, Self.isDigit(bytes[index]) {
                if digits < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(bytes[index] &- 48)
                    digits += 1
                } else {
                    inexact = true
                }
                index += 1
            }
        }
        var isInteger = true
        if index < n, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < n, Self.isDigit(bytes[index]) else { throw expected("a digit after '.'") }
            while index < n, Self.isDigit(bytes[index]) {
                let d = bytes[index] &- 48
                if mantissa == 0 && d == 0 {
                    exponent -= 1
                } else if digits < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(d)
                    digits += 1
                    exponent -= 1
                } else {
                    inexact = true
                }
                index += 1
            }
        }
        if index < n, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            var expNegative = false
            if index < n, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                expNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            guard index < n, Self.isDigit(bytes[index]) else { throw expected("a digit in exponent") }
            var e = 0
            while index < n, Self.isDigit(bytes[index]) {
                if e < 100_000 { e = e * 10 + Int(bytes[index] &- 48) }
                index += 1
            }
            exponent += expNegative ? -e : e
        }
        if isInteger && !inexact && mantissa <= UInt64(Int.max) {
            return .int(negative ? -Int(mantissa) : Int(mantissa))
        }
        if !inexact && mantissa < (1 << 53) && exponent >= -22 && exponent <= 22 {
            var d = Double(mantissa)
            d = exponent < 0 ? d / Self.powersOfTen[-exponent] : d * Self.powersOfTen[exponent]
            return .double(negative ? -d : d)
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let d = Double(text) else { throw error("invalid number", at: start) }
        return .double(d)
    }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b &- 48 < 10 }
}
