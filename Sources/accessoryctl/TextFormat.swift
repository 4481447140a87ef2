/// The number formats the commands print (`12.3`, `007`), without Foundation's
/// `String(format:)`, so the tool loads no ICU.
enum TextFormat {
    /// `12.3`: `value` rounded to one decimal.
    static func oneDecimal(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e17 else { return "\(value)" }  // beyond that, tenths overflow Int
        let tenths = Int((abs(value) * 10).rounded())
        return (value < 0 && tenths > 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }

    /// `007`: `n` (at least 0) with leading zeros to `width` digits.
    static func zeroPadded(_ n: Int, width: Int) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
