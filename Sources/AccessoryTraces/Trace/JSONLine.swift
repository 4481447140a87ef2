import AccessoryCore
/// Parses one line of JSON Lines into a ``JSONValue``, byte by byte.
///
/// Strict RFC 8259: strings must be valid UTF-8 with control characters escaped, `\uXXXX`
/// surrogate pairs are combined and lone surrogates rejected, and nothing but whitespace may
/// follow the value. Nesting deeper than 64 levels is rejected.
package enum JSONLine {
    /// Parses the bytes of one line (without its newline).
    /// - Throws: ``JSONLineError`` with the column and the reason.
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONLineError) -> JSONValue {
        var cursor = JSONCursor(bytes)
        let value = try cursor.parseValue(depth: 0)
        try cursor.expectEnd()
        return value
    }

    /// Parses the bytes of one line (without its newline).
    package static func parse(_ bytes: [UInt8]) throws(JSONLineError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(JSONLineError) in try parse(raw) } }
        return try result.get()
    }

    /// Parses one line of text (without its newline).
    package static func parse(_ text: String) throws(JSONLineError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}
