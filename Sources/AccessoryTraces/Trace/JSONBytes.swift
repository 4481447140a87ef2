import AccessoryCore
/// Appends JSON text to a byte buffer: the shared encoder of ``TraceWriter`` and
/// ``ReplayOutput``. No Foundation, no intermediate strings.
enum JSONBytes {
    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Appends ASCII text verbatim, such as `,"bus":`.
    @inline(__always)
    static func appendRaw(_ text: StaticString, to out: inout some ByteOutput) {
        out.appendBytes(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends a quoted, escaped JSON string.
    static func appendString(_ s: String, to out: inout some ByteOutput) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var runStart = 0
            for (i, b) in utf8.enumerated() where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
                out.appendBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart..<i])))
                runStart = i + 1
                out.append(UInt8(ascii: "\\"))
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                default:
                    appendRaw("u00", to: &out)
                    out.append(hexDigits.utf8Start[Int(b >> 4)])
                    out.append(hexDigits.utf8Start[Int(b & 0xF)])
                }
            }
            out.appendBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart...])))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends a decimal integer.
    static func appendInt(_ value: Int, to out: inout some ByteOutput) {
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            appendUInt(value.magnitude, to: &out)
        } else {
            appendUInt(UInt(value), to: &out)
        }
    }

    static func appendUInt(_ value: UInt, to out: inout some ByteOutput) {
        if value < 10 {
            out.append(UInt8(truncatingIfNeeded: value) + 48)
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, no allocation
        var v = value
        var n = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            while v > 0 {
                buf[23 - n] = UInt8(truncatingIfNeeded: v % 10) + 48
                v /= 10
                n += 1
            }
            out.appendBytes(UnsafeRawBufferPointer(rebasing: buf[(24 - n)...]))
        }
    }

    /// Appends `"xxxx"`: four lowercase hexadecimal digits in quotes.
    @inline(__always)
    static func appendHex4(_ v: UInt16, to out: inout some ByteOutput) {
        let d = hexDigits.utf8Start
        out.append(UInt8(ascii: "\""))
        out.append(d[Int(v >> 12)])
        out.append(d[Int(v >> 8 & 0xF)])
        out.append(d[Int(v >> 4 & 0xF)])
        out.append(d[Int(v & 0xF)])
        out.append(UInt8(ascii: "\""))
    }

    /// Appends seconds compactly, rounded to microseconds: `0`, `2.5`, `0.001234`.
    static func appendSeconds(_ t: Double, to out: inout some ByteOutput) {
        precondition(t.isFinite, "a trace time must be finite")
        let micros = (t * 1_000_000).rounded()
        guard abs(micros) < 9e15 else {
            // Beyond exact microseconds: Swift's shortest round-trip form is valid JSON here.
            var text = "\(t)"
            text.withUTF8 { out.appendBytes(UnsafeRawBufferPointer($0)) }
            return
        }
        var us = Int64(micros)
        if us < 0 {
            out.append(UInt8(ascii: "-"))
            us = -us
        }
        appendUInt(UInt(us / 1_000_000), to: &out)
        var frac = Int(us % 1_000_000)
        guard frac != 0 else { return }
        out.append(UInt8(ascii: "."))
        var width = 6
        while frac % 10 == 0 {
            frac /= 10
            width -= 1
        }
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        while divisor > 0 {
            out.append(UInt8(frac / divisor % 10) + 48)
            divisor /= 10
        }
    }
}
