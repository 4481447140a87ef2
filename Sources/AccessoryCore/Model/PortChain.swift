/// The kernel's name for a USB port chain: a bus number, a dash, then port numbers separated
/// by dots (`1-1.4`, `3-12.4.3`), as sysfs names device directories.
package enum PortChain {
    /// Whether `bytes` is a port chain, `^\d+-\d+(\.\d+)*$`.
    package static func isValid(_ bytes: some Sequence<UInt8>) -> Bool {
        // digits, "-", then digit runs separated by single dots
        var sawDash = false
        var runLength = 0
        for b in bytes {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                runLength += 1
            case UInt8(ascii: "-") where !sawDash, UInt8(ascii: ".") where sawDash:
                guard runLength > 0 else { return false }
                sawDash = true
                runLength = 0
            default:
                return false
            }
        }
        return sawDash && runLength > 0
    }

    /// The bus number a sysfs device name gives: `3` for `3-1.4` and for the root hub `usb3`;
    /// `nil` for a name that is neither, or bus 0.
    package static func bus(inName name: String) -> Int? {
        let digits = name.hasPrefix("usb") ? name.dropFirst(3)[...] : name.prefix { $0 != "-" }
        guard name.hasPrefix("usb") || digits.count < name.count, let bus = Int(digits), bus > 0 else { return nil }
        return bus
    }
}
