import AccessoryCore
import AccessoryKit
import AccessoryLocking

/// One endpoint of a simulated device, as a session's streams and one-transfer calls use it:
/// the transfer primitive (``EndpointTransfers``), whose transfers wait in the device's
/// ``SimulatedEndpoints``, with their timeouts on the virtual clock.
final class SimulatedEndpointTransfers: EndpointTransfers {
    let endpoint: UInt8
    let operation: String
    let device: String
    private let endpoints: SimulatedEndpoints
    private let handler = Locked(CompletionHandlerSlot())
    private let awaited = Locked(AwaitedCheckSlot())

    /// The check ``setAwaitedCheck(_:)`` gave; a struct field, as ``CompletionHandlerSlot``'s is.
    private struct AwaitedCheckSlot {
        var call: (@Sendable () -> Bool)?
    }

    init(endpoints: SimulatedEndpoints, endpoint: UInt8, type: USBEndpoint.TransferType) {
        self.endpoints = endpoints
        self.endpoint = endpoint
        self.operation = endpointOperation(endpoint, type)
        self.device = endpoints.node
    }

    func setCompletionHandler(_ handler: @escaping @Sendable (UInt64, TransferCompletion) -> Void) {
        self.handler.withLock { $0.call = handler }
    }

    func submit(_ bytes: ArraySlice<UInt8>, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        endpoints.submit(endpoint, .init(self, tag: tag), bytes: Array(bytes), length: bytes.count, timeout: timeout, operation: operation)
    }

    func submit(length: Int, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        endpoints.submit(endpoint, .init(self, tag: tag), bytes: nil, length: length, timeout: timeout, operation: operation)
    }

    func cancel(tag: UInt64) {
        endpoints.cancel(self, tag: tag)
    }

    func cancelAll() {
        endpoints.cancel(self)
    }

    func close() {
        endpoints.remove(self)
        handler.withLock { $0.call = nil }
        awaited.withLock { $0.call = nil }
    }

    func setAwaitedCheck(_ isAwaited: @escaping @Sendable () -> Bool) {
        awaited.withLock { $0.call = isAwaited }
    }

    /// Whether anyone awaits these transfers now: a one-transfer call always does; a stream
    /// while a read (or write) waits on it. Asked outside every lock of the simulation.
    var isAwaited: Bool { awaited.withLock { $0.call }?() ?? true }

    /// The transfer of call `tag` ended (on the device's event queue).
    func completed(_ tag: UInt64, _ completion: TransferCompletion) {
        handler.withLock { $0.call }?(tag, completion)
    }
}
