/// One declared protocol: which devices or interfaces speak it. Like an entry of an iOS
/// app's `UISupportedExternalAccessoryProtocols`, plus what to match it on.
public struct ProtocolRule: Sendable, Hashable {
    public enum Match: Sendable, Hashable {
        /// A device with this vendor ID and, if given, product ID.
        case device(vendor: UInt16, product: UInt16?)
        /// An interface with this class and, if given, subclass and protocol.
        case interface(class: UInt8, subclass: UInt8?, protocol: UInt8?)
    }

    public var match: Match
    /// The protocol name, such as `org.example.loopback`.
    public var protocolName: String

    public init(_ protocolName: String, match: Match) {
        self.protocolName = protocolName
        self.match = match
    }

    /// A rule for a vendor's devices, or one product of it.
    public static func device(vendor: UInt16, product: UInt16? = nil, speaks protocolName: String) -> ProtocolRule {
        ProtocolRule(protocolName, match: .device(vendor: vendor, product: product))
    }

    /// A rule for interfaces of a class, and optionally a subclass and protocol.
    public static func interface(
        class interfaceClass: UInt8, subclass: UInt8? = nil, protocol interfaceProtocol: UInt8? = nil,
        speaks protocolName: String
    ) -> ProtocolRule {
        ProtocolRule(protocolName, match: .interface(class: interfaceClass, subclass: subclass, protocol: interfaceProtocol))
    }
}
