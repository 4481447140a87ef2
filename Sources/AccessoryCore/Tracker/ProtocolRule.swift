/// One declared protocol: which devices or interfaces speak it. Like an entry of an iOS
/// app's `UISupportedExternalAccessoryProtocols`, plus what to match it on.
public struct ProtocolRule: Sendable, Hashable {
    /// What a rule matches on.
    public enum Match: Sendable, Hashable {
        /// A device with this vendor ID and, if given, product ID.
        case device(vendor: UInt16, product: UInt16?)
        /// An interface with this class and, if given, subclass and protocol.
        case interface(class: UInt8, subclass: UInt8?, protocol: UInt8?)
        /// One interface, by number, of a vendor's products in a range.
        case productInterface(vendor: UInt16, products: ClosedRange<UInt16>, interface: UInt8)
    }

    /// What devices or interfaces speak the protocol.
    public var match: Match
    /// The protocol name, such as `org.example.loopback`.
    public var protocolName: String

    /// A rule: `protocolName` is spoken where `match` matches.
    public init(_ protocolName: String, match: Match) {
        self.protocolName = protocolName
        self.match = match
    }

    /// A rule for a vendor's devices, or one product of it.
    public static func device(vendor: UInt16, product: UInt16? = nil, speaks protocolName: String) -> ProtocolRule {
        ProtocolRule(protocolName, match: .device(vendor: vendor, product: product))
    }

    /// Android Open Accessory: interface 0 of a phone in accessory mode (18d1:2d00–2d05)
    /// speaks `android.accessory`. Every ``ProtocolTable`` includes it.
    public static let androidAccessory = ProtocolRule(
        androidAccessoryProtocol, match: .productInterface(
            vendor: AndroidOpenAccessory.vendor, products: AndroidOpenAccessory.accessoryProducts, interface: 0))

    /// The protocol an Android phone's app speaks in accessory mode.
    public static let androidAccessoryProtocol = "android.accessory"

    /// A rule for interfaces of a class, and optionally a subclass and protocol.
    public static func interface(
        class interfaceClass: UInt8, subclass: UInt8? = nil, protocol interfaceProtocol: UInt8? = nil,
        speaks protocolName: String
    ) -> ProtocolRule {
        ProtocolRule(protocolName, match: .interface(class: interfaceClass, subclass: subclass, protocol: interfaceProtocol))
    }
}
