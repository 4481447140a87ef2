/// One endpoint descriptor (USB 2.0 §9.6.6).
package struct USBEndpoint: Hashable, Sendable {
    /// How an endpoint moves data: bits 0–1 of `bmAttributes`.
    package enum TransferType: UInt8, Hashable, Sendable {
        case control = 0, isochronous = 1, bulk = 2, interrupt = 3
    }

    /// Which way data flows, seen from the host.
    package enum Direction: Hashable, Sendable {
        /// Device to host (address bit 7 set).
        case `in`
        /// Host to device.
        case out
    }

    /// `bEndpointAddress`: the number in bits 0–3, the direction in bit 7.
    package var address: UInt8
    /// `bmAttributes`: the transfer type, plus synchronisation and usage bits.
    package var attributes: UInt8
    /// `wMaxPacketSize` as stored: packet size in bits 0–10, extra transactions in bits 11–12.
    package var maxPacketSize: UInt16
    /// `bInterval`: the polling interval, in frames or in a power of two of microframes.
    package var interval: UInt8

    package init(address: UInt8, attributes: UInt8, maxPacketSize: UInt16, interval: UInt8) {
        self.address = address
        self.attributes = attributes
        self.maxPacketSize = maxPacketSize
        self.interval = interval
    }

    package var number: UInt8 { address & 0x0f }
    package var direction: Direction { address & 0x80 != 0 ? .in : .out }
    package var transferType: TransferType { TransferType(rawValue: attributes & 0x03)! }
    /// The packet size in bytes (bits 0–10 of `wMaxPacketSize`).
    package var packetSize: Int { Int(maxPacketSize & 0x07ff) }
}
