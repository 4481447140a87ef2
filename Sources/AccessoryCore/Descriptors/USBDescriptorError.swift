/// Why a descriptor could not be parsed at all.
package enum USBDescriptorError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the descriptor's fixed part needs.
    case truncated(descriptorType: UInt8, needed: Int, available: Int)
    /// `bLength` is smaller than the descriptor type allows.
    case invalidLength(descriptorType: UInt8, length: UInt8)
    /// `bDescriptorType` is not the type asked for.
    case unexpectedType(expected: UInt8, found: UInt8)
    /// A configuration's `wTotalLength` is smaller than its own header.
    case invalidTotalLength(UInt16)

    package var description: String {
        switch self {
        case .truncated(let t, let needed, let available):
            return "descriptor type \(t) needs \(needed) bytes, only \(available) present"
        case .invalidLength(let t, let length):
            return "descriptor type \(t) has invalid bLength \(length)"
        case .unexpectedType(let expected, let found):
            return "expected descriptor type \(expected), found \(found)"
        case .invalidTotalLength(let total):
            return "configuration wTotalLength \(total) is smaller than its header"
        }
    }
}
