/// `0x81`: a byte as two lowercase hexadecimal digits.
package func hexByte(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return "0x" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xf)])
}
