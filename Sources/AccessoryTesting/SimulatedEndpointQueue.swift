import AccessoryCore
import AccessoryKit
import Synchronization

/// One endpoint of a simulated device, as a transfer queue: transfers wait here until the
/// device's event queue (``SimulatedDeviceConnection``) completes them, in submission order.
final class SimulatedEndpointQueue: EndpointQueue {
    /// One submitted transfer: OUT carries its bytes, IN asks for a length.
    struct Transfer: Sendable {
        var bytes: [UInt8]?
        var length: Int
        var cancelled = false
        /// OUT: the responder said it never takes this transfer.
        var ignored = false
    }

    let endpoint: UInt8
    let maxPacketSize: Int
    let capacity: Int
    let operation: String
    let device: String
    let connection: SimulatedDeviceConnection
    private let state = Locked<(handler: (@Sendable (TransferCompletion) -> Void)?, transfers: [Transfer])>((nil, []))

    init(connection: SimulatedDeviceConnection, endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int, capacity: Int) {
        self.connection = connection
        self.endpoint = endpoint
        self.maxPacketSize = maxPacketSize
        self.capacity = capacity
        self.operation = endpointOperation(endpoint, type)
        self.device = connection.node
    }

    var isIn: Bool { endpoint & 0x80 != 0 }
    var pending: Int { state.withLock { $0.transfers.count } }

    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void) {
        state.withLock { $0.handler = handler }
    }

    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError? {
        enqueue(Transfer(bytes: Array(bytes), length: bytes.count))
    }

    func submit(length: Int) -> AccessoryError? {
        enqueue(Transfer(bytes: nil, length: length))
    }

    private func enqueue(_ transfer: Transfer) -> AccessoryError? {
        if connection.isGone {
            return TransferStatus.noDevice.error(operation: operation, device: device)
        }
        state.withLock { $0.transfers.append(transfer) }
        connection.schedulePump()
        return nil
    }

    func cancelAll() {
        state.withLock { s in
            for i in s.transfers.indices { s.transfers[i].cancelled = true }
        }
        connection.schedulePump()
    }

    func close() {
        state.withLock { $0 = (nil, []) }
    }

    // MARK: On the device's event queue

    /// The oldest pending transfer.
    var head: Transfer? { state.withLock { $0.transfers.first } }

    func markHeadIgnored() {
        state.withLock { s in if !s.transfers.isEmpty { s.transfers[0].ignored = true } }
    }

    /// Completes the oldest pending transfer and tells the handler, outside the lock.
    func completeHead(_ completion: TransferCompletion) {
        let handler: (@Sendable (TransferCompletion) -> Void)? = state.withLock { s in
            guard !s.transfers.isEmpty else { return nil }
            s.transfers.removeFirst()
            return s.handler
        }
        handler?(completion)
    }
}
