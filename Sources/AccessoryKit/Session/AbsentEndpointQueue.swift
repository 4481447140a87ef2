import AccessoryCore

/// The byte stream of a direction the claimed interface has no endpoint for (a reader with
/// only a bulk IN, say): every submit fails with `.notFound`, saying so, and nothing is ever
/// pending. The session's one-transfer calls and its other stream work as usual.
final class AbsentEndpointQueue: EndpointQueue {
    /// `0x00` or `0x80`: a control endpoint's address, which no bulk or interrupt endpoint has.
    let endpoint: UInt8
    let maxPacketSize = 64
    let capacity: Int
    var pending: Int { 0 }
    let operation: String
    let device: String
    private let reason: String

    /// The missing `direction` of interface `interface` (for messages: `interface 0 of accessory 10a5:ffe0 1-1`).
    init(direction: USBEndpoint.Direction, interface: String, device: String, capacity: Int) {
        self.endpoint = direction == .in ? 0x80 : 0x00
        self.operation = direction == .in ? "read" : "write"
        self.device = device
        self.capacity = max(capacity, 1)
        self.reason = "\(interface) has no \(direction == .in ? "IN" : "OUT") endpoint (bulk or interrupt), so the session cannot \(direction == .in ? "read" : "write") its byte stream"
    }

    /// The synthetic descriptor that stands for the missing endpoint.
    static func placeholder(_ direction: USBEndpoint.Direction) -> USBEndpoint {
        USBEndpoint(address: direction == .in ? 0x80 : 0x00, attributes: 0x02, maxPacketSize: 64, interval: 0)
    }

    /// Whether `address` is the placeholder's (a control endpoint's).
    static func isPlaceholder(_ address: UInt8) -> Bool { address & 0x7f == 0 }

    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void) {}

    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError? { AccessoryError(.notFound, reason, operation: operation) }

    func submit(length: Int) -> AccessoryError? { AccessoryError(.notFound, reason, operation: operation) }

    func cancelAll() {}

    func close() {}
}
