/// One control request's setup, without its direction and length: what USB calls
/// `bmRequestType` (kind and recipient), `bRequest`, `wValue` and `wIndex`.
///
/// ```swift
/// // Android Open Accessory's GET_PROTOCOL: a vendor request to the device.
/// let getProtocol = ControlRequest(.vendor, recipient: .device, request: 51)
/// let version = try await manager.controlTransfer(from: phone, getProtocol, length: 2)
/// ```
public struct ControlRequest: Sendable, Hashable, CustomStringConvertible {
    /// Bits 6–5 of `bmRequestType`.
    public enum Kind: UInt8, Sendable, CaseIterable {
        /// A standard request (USB 2.0 chapter 9).
        case standard = 0
        /// A request the device class defines.
        case `class` = 1
        /// A request the vendor defines.
        case vendor = 2
    }

    /// Bits 4–0 of `bmRequestType`.
    public enum Recipient: UInt8, Sendable, CaseIterable {
        /// The device.
        case device = 0
        /// An interface (number in `index`).
        case interface = 1
        /// An endpoint (address in `index`).
        case endpoint = 2
        /// Other.
        case other = 3

    }

    /// Standard, class or vendor.
    public var kind: Kind
    /// Device, interface, endpoint or other.
    public var recipient: Recipient
    /// `bRequest`.
    public var request: UInt8
    /// `wValue`.
    public var value: UInt16
    /// For an interface recipient, the interface number in the low byte; for an endpoint
    /// recipient, the endpoint address.
    public var index: UInt16

    /// A request; `value` and `index` default to 0.
    public init(_ kind: Kind, recipient: Recipient = .device, request: UInt8, value: UInt16 = 0, index: UInt16 = 0) {
        self.kind = kind
        self.recipient = recipient
        self.request = request
        self.value = value
        self.index = index
    }

    /// `bmRequestType` for a transfer in this direction.
    package func requestType(isIn: Bool) -> UInt8 {
        (isIn ? 0x80 : 0) | kind.rawValue << 5 | recipient.rawValue
    }

    /// The 8-byte setup packet, little-endian, for a transfer of `length` data bytes.
    package func setupPacket(isIn: Bool, length: Int) -> [UInt8] {
        let l = UInt16(clamping: length)
        return [
            requestType(isIn: isIn), request, UInt8(value & 0xff), UInt8(value >> 8), UInt8(index & 0xff), UInt8(index >> 8),
            UInt8(l & 0xff), UInt8(l >> 8),
        ]
    }

    /// `vendor device request 51 (value 0, index 0)`.
    public var description: String {
        "\(kind) \(recipient) request \(request) (value \(value), index \(index))"
    }

    /// The interface whose claim an interface- or endpoint-recipient request needs, given
    /// the interface that holds each endpoint; `nil` for the device and other recipients.
    package func interfaceToClaim(endpointOwner: (UInt8) -> UInt8?) -> UInt8? {
        switch recipient {
        case .interface: return UInt8(index & 0xff)
        case .endpoint: return endpointOwner(UInt8(index & 0xff))
        case .device, .other: return nil
        }
    }
}

/// The direction and data of a control transfer.
package enum ControlData: Sendable, Hashable {
    /// Device to host: read up to this many bytes.
    case receive(Int)
    /// Host to device: send these bytes (possibly none).
    case send([UInt8])

    package var isIn: Bool { if case .receive = self { true } else { false } }
    package var length: Int {
        switch self {
        case .receive(let n): n
        case .send(let bytes): bytes.count
        }
    }
}
