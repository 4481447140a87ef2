import AccessoryCore

/// A bulk or interrupt endpoint of a session's interface, as ``AccessorySession/endpoints``
/// lists them: the endpoints ``AccessorySession/transferIn(_:length:timeout:)`` and
/// ``AccessorySession/transferOut(_:_:timeout:)`` reach.
public struct AccessoryEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// How an endpoint moves data.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// Bulk: as fast as the bus allows, no guaranteed latency.
        case bulk
        /// Interrupt: small packets, polled at the endpoint's interval.
        case interrupt

        /// `bulk` or `interrupt`.
        public var description: String {
            switch self {
            case .bulk: "bulk"
            case .interrupt: "interrupt"
            }
        }
    }

    /// `bEndpointAddress`: the endpoint number in bits 0–3; bit 7 set for IN (device to host).
    public var address: UInt8
    /// Bulk or interrupt.
    public var kind: Kind
    /// The largest packet the endpoint moves, in bytes (bits 0–10 of `wMaxPacketSize`).
    public var maxPacketSize: Int

    /// An endpoint; `address` has bit 7 set for IN.
    public init(address: UInt8, kind: Kind, maxPacketSize: Int) {
        self.address = address
        self.kind = kind
        self.maxPacketSize = maxPacketSize
    }

    /// Whether data flows from the device to the host (bit 7 of ``address``).
    public var isIn: Bool { address & 0x80 != 0 }

    /// `bulk IN 0x81`.
    public var description: String { endpointOperation(address, transferType) }

    /// The endpoint of a descriptor; `nil` for a control or isochronous one.
    package init?(_ endpoint: USBEndpoint) {
        switch endpoint.transferType {
        case .bulk: kind = .bulk
        case .interrupt: kind = .interrupt
        case .control, .isochronous: return nil
        }
        address = endpoint.address
        maxPacketSize = endpoint.packetSize
    }

    /// The descriptor's transfer type.
    package var transferType: USBEndpoint.TransferType { kind == .bulk ? .bulk : .interrupt }
}
