import AccessoryCore
import AccessoryKit

/// One vendor-specific interface of a ``SimulatedAccessory``, named by its protocol, with the
/// bulk and interrupt endpoints of each of its alternate settings.
///
/// ```swift
/// // A fingerprint reader: bulk OUT 0x01, bulk IN 0x82, interrupt IN 0x83.
/// let reader = SimulatedInterface(protocol: "com.example.reader", endpoints: [
///     AccessoryEndpoint(address: 0x01, kind: .bulk, maxPacketSize: 64),
///     AccessoryEndpoint(address: 0x82, kind: .bulk, maxPacketSize: 64),
///     AccessoryEndpoint(address: 0x83, kind: .interrupt, maxPacketSize: 8),
/// ])
/// ```
public struct SimulatedInterface: Sendable, Hashable {
    /// The protocol it speaks: its interface string.
    public var protocolName: String
    /// Each alternate setting's endpoints, setting 0 first.
    public var alternateSettings: [[AccessoryEndpoint]]

    /// An interface speaking `protocolName` with `endpoints` in alternate setting 0, and
    /// `alternateSettings` as settings 1, 2, ….
    public init(protocol protocolName: String, endpoints: [AccessoryEndpoint], alternateSettings: [[AccessoryEndpoint]] = []) {
        self.protocolName = protocolName
        self.alternateSettings = [endpoints] + alternateSettings
    }

    /// The endpoints of alternate setting 0.
    public var endpoints: [AccessoryEndpoint] { alternateSettings.first ?? [] }

    /// The interface a ``SimulatedAccessory`` made with `protocols:` has as its `number`th:
    /// bulk OUT `0x01+number` and bulk IN `0x81+number`, 512-byte packets.
    public static func bulkPair(protocol protocolName: String, number: Int) -> SimulatedInterface {
        SimulatedInterface(protocol: protocolName, endpoints: [
            AccessoryEndpoint(address: 0x01 + UInt8(truncatingIfNeeded: number), kind: .bulk, maxPacketSize: 512),
            AccessoryEndpoint(address: 0x81 + UInt8(truncatingIfNeeded: number), kind: .bulk, maxPacketSize: 512),
        ])
    }

    /// Its descriptors as interface `number`: one per alternate setting, string index
    /// `4 + number`.
    func descriptors(number: Int) -> [USBInterface] {
        alternateSettings.enumerated().map { alternate, endpoints in
            USBInterface(
                number: UInt8(truncatingIfNeeded: number), alternate: UInt8(truncatingIfNeeded: alternate), interfaceClass: 0xff,
                interfaceSubclass: 0, interfaceProtocol: 0, nameIndex: UInt8(truncatingIfNeeded: 4 + number),
                declaredEndpointCount: UInt8(truncatingIfNeeded: endpoints.count),
                endpoints: endpoints.map { e in
                    USBEndpoint(
                        address: e.address, attributes: e.kind == .bulk ? 0x02 : 0x03,
                        maxPacketSize: UInt16(clamping: e.maxPacketSize), interval: e.kind == .bulk ? 0 : 1)
                }, name: protocolName)
        }
    }
}
