/// A virtual accessory to plug into a ``SimulatedUSB``: its IDs, strings and protocols, and
/// the responder that plays its part in sessions.
///
/// It has one vendor-specific interface per protocol, interface N named by protocol N, with
/// a bulk OUT endpoint `0x01+N` and a bulk IN endpoint `0x81+N` of 512-byte packets.
public struct SimulatedAccessory: Sendable {
    public var vendor: UInt16
    public var product: UInt16
    public var serial: String?
    public var protocols: [String]
    public var responder: SimulatedResponder
    public var manufacturer: String?
    public var name: String?
    public var bcdDevice: UInt16

    public init(
        vendor: UInt16, product: UInt16, serial: String? = nil, protocols: [String] = ["org.example.loopback"],
        responder: SimulatedResponder = .loopback, manufacturer: String? = "Example", name: String? = "Simulated Accessory",
        bcdDevice: UInt16 = 0x0100
    ) {
        self.vendor = vendor
        self.product = product
        self.serial = serial
        self.protocols = protocols
        self.responder = responder
        self.manufacturer = manufacturer
        self.name = name
        self.bcdDevice = bcdDevice
    }
}

extension SimulatedAccessory: Hashable {
    // The responder is behaviour, not identity: two accessories with the same IDs, strings
    // and protocols are equal.
    public static func == (lhs: SimulatedAccessory, rhs: SimulatedAccessory) -> Bool {
        lhs.vendor == rhs.vendor && lhs.product == rhs.product && lhs.serial == rhs.serial && lhs.protocols == rhs.protocols
            && lhs.manufacturer == rhs.manufacturer && lhs.name == rhs.name && lhs.bcdDevice == rhs.bcdDevice
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(vendor)
        hasher.combine(product)
        hasher.combine(serial)
        hasher.combine(protocols)
    }
}
