import AccessoryCore
import AccessoryKit

/// One endpoint of a simulated device, as a session's stream uses it: an ``EndpointQueue``
/// whose transfers wait in the device's ``SimulatedEndpoints`` until the accessory completes
/// them, in submission order.
final class SimulatedEndpointQueue: EndpointQueue {
    let endpoint: UInt8
    let maxPacketSize: Int
    let capacity: Int
    let operation: String
    let device: String
    private let endpoints: SimulatedEndpoints
    private let state = Locked(State())

    /// A struct, not a tuple: a closure in a tuple that is a lock's whole value grows by two
    /// thunks at every access.
    private struct State {
        var handler: (@Sendable (TransferCompletion) -> Void)?
        var pending = 0
    }

    init(endpoints: SimulatedEndpoints, endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int, capacity: Int) {
        self.endpoints = endpoints
        self.endpoint = endpoint
        self.maxPacketSize = maxPacketSize
        self.capacity = capacity
        self.operation = endpointOperation(endpoint, type)
        self.device = endpoints.node
    }

    var pending: Int { state.withLock { $0.pending } }

    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void) {
        state.withLock { $0.handler = handler }
    }

    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError? {
        submit(bytes: Array(bytes), length: bytes.count)
    }

    func submit(length: Int) -> AccessoryError? {
        submit(bytes: nil, length: length)
    }

    private func submit(bytes: [UInt8]?, length: Int) -> AccessoryError? {
        state.withLock { $0.pending += 1 }
        let error = endpoints.submit(endpoint, .stream(self), bytes: bytes, length: length, timeout: nil, operation: operation)
        if error != nil { state.withLock { $0.pending -= 1 } }
        return error
    }

    func cancelAll() {
        endpoints.cancel(self)
    }

    func close() {
        endpoints.remove(self)
        state.withLock { $0 = State() }
    }

    /// One of its transfers ended (on the device's event queue).
    func completed(_ completion: TransferCompletion) {
        let handler = state.withLock { s in
            s.pending -= 1
            return s.handler
        }
        handler?(completion)
    }
}
