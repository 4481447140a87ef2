/// A problem the parser found and worked around. Offsets count from the start of the
/// bytes given to the parser.
package enum USBDescriptorIssue: Hashable, Sendable, CustomStringConvertible {
    /// A descriptor's `bLength` is below 2, so nothing after it can be found; parsing stopped.
    case invalidLength(offset: Int, length: UInt8)
    /// A descriptor runs past the end of the data; parsing stopped.
    case truncated(offset: Int, length: Int, available: Int)
    /// An interface or endpoint descriptor shorter than its fixed part; skipped.
    case shortDescriptor(offset: Int, descriptorType: UInt8, length: UInt8)
    /// `wTotalLength` differs from the bytes present.
    case totalLengthMismatch(declared: Int, available: Int)
    /// An endpoint descriptor before any interface descriptor; skipped.
    case endpointOutsideInterface(offset: Int)
    /// More interface descriptors than the limit; the rest were skipped.
    case tooManyInterfaces(limit: Int)
    /// More endpoints in one interface than the limit; the rest were skipped.
    case tooManyEndpoints(interface: UInt8, alternate: UInt8, limit: Int)
    /// `bNumEndpoints` differs from the endpoint descriptors found.
    case endpointCountMismatch(interface: UInt8, alternate: UInt8, declared: UInt8, found: Int)
    /// `bNumInterfaces` differs from the interface numbers found.
    case interfaceCountMismatch(declared: UInt8, found: Int)
    /// `bNumConfigurations` differs from the configurations found.
    case configurationCountMismatch(declared: UInt8, found: Int)
    /// A configuration descriptor inside another one: the outer one ends there.
    case nestedConfiguration(offset: Int)
    /// Bytes left over that do not form a descriptor; ignored.
    case trailingBytes(offset: Int, count: Int)
    /// A configuration that could not be parsed; the ones after it were not looked for.
    case unreadableConfiguration(offset: Int, USBDescriptorError)

    package var description: String {
        switch self {
        case .invalidLength(let o, let l): return "bLength \(l) at offset \(o); parsing stopped"
        case .truncated(let o, let l, let a): return "descriptor at offset \(o) needs \(l) bytes, \(a) left; parsing stopped"
        case .shortDescriptor(let o, let t, let l): return "descriptor type \(t) at offset \(o) is only \(l) bytes; skipped"
        case .totalLengthMismatch(let d, let a): return "wTotalLength \(d), but \(a) bytes present"
        case .endpointOutsideInterface(let o): return "endpoint at offset \(o) outside any interface; skipped"
        case .tooManyInterfaces(let n): return "more than \(n) interface descriptors; the rest skipped"
        case .tooManyEndpoints(let i, let a, let n): return "interface \(i).\(a) has more than \(n) endpoints; the rest skipped"
        case .endpointCountMismatch(let i, let a, let d, let f): return "interface \(i).\(a) declares \(d) endpoints, \(f) found"
        case .interfaceCountMismatch(let d, let f): return "configuration declares \(d) interfaces, \(f) found"
        case .configurationCountMismatch(let d, let f): return "device declares \(d) configurations, \(f) found"
        case .nestedConfiguration(let o): return "configuration descriptor at offset \(o) inside another"
        case .trailingBytes(let o, let n): return "\(n) stray bytes at offset \(o); ignored"
        case .unreadableConfiguration(let o, let e): return "configuration at offset \(o): \(e)"
        }
    }
}
