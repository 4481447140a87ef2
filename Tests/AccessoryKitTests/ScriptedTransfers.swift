import AccessoryCore
import Synchronization
@testable import AccessoryKit
import AccessoryLocking

/// A test-only implementation of the transfer primitive (``EndpointTransfers``): it records
/// every submission with its tag, and the test ends each one when it likes, in any order
/// (``complete(_:_:data:)``), acting as the event thread. Cancelling only marks a transfer.
final class ScriptedTransfers: EndpointTransfers {
    let endpoint: UInt8
    let operation: String
    let device = "scripted device"

    struct Submission: Sendable, Hashable {
        var tag: UInt64
        /// OUT: the bytes. IN: empty.
        var bytes: [UInt8]
        var length: Int
        var cancelled = false
    }

    private struct State {
        var handler: (@Sendable (UInt64, TransferCompletion) -> Void)?
        var pending: [Submission] = []
        var history: [Submission] = []
        var submitErrors: [AccessoryError] = []
        /// Runs inside the next submit, before it is recorded.
        var duringSubmit: (@Sendable () -> Void)?
    }

    private let state = Locked(State())

    init(endpoint: UInt8) {
        self.endpoint = endpoint
        self.operation = endpointOperation(endpoint)
    }

    /// Every submission so far, in the order submit was called.
    var history: [Submission] { state.withLock { $0.history } }
    var pending: [Submission] { state.withLock { $0.pending } }

    func failNextSubmit(_ error: AccessoryError) {
        state.withLock { $0.submitErrors.append(error) }
    }

    /// Runs `body` inside the next submit (on the submitting thread), before it is recorded.
    func duringNextSubmit(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.duringSubmit = body }
    }

    func setCompletionHandler(_ handler: @escaping @Sendable (UInt64, TransferCompletion) -> Void) {
        state.withLock { $0.handler = handler }
    }

    func submit(_ bytes: ArraySlice<UInt8>, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        submit(Submission(tag: tag, bytes: Array(bytes), length: bytes.count))
    }

    func submit(length: Int, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        submit(Submission(tag: tag, bytes: [], length: length))
    }

    private func submit(_ submission: Submission) -> AccessoryError? {
        let hook = state.withLock { s in
            defer { s.duringSubmit = nil }
            return s.duringSubmit
        }
        hook?()
        return state.withLock { s in
            if !s.submitErrors.isEmpty { return s.submitErrors.removeFirst() }
            s.pending.append(submission)
            s.history.append(submission)
            return nil
        }
    }

    func cancel(tag: UInt64) {
        state.withLock { s in
            for i in s.pending.indices where s.pending[i].tag == tag { s.pending[i].cancelled = true }
        }
    }

    func cancelAll() {
        state.withLock { s in
            for i in s.pending.indices { s.pending[i].cancelled = true }
        }
    }

    func close() {}

    /// Ends the pending transfer with `tag` and reports it; `false` when there is none.
    @discardableResult
    func complete(_ tag: UInt64, _ status: TransferStatus = .completed, data: [UInt8] = []) -> Bool {
        let handler: (@Sendable (UInt64, TransferCompletion) -> Void)? = state.withLock { s in
            guard let i = s.pending.firstIndex(where: { $0.tag == tag }) else { return nil }
            s.pending.remove(at: i)
            return s.handler
        }
        guard let handler else { return false }
        handler(tag, TransferCompletion(status: status, data: data))
        return true
    }

    /// Reports every cancelled pending transfer as `.cancelled`.
    func completeCancelled() {
        for s in pending where s.cancelled { complete(s.tag, .cancelled) }
    }
}

/// A device whose only use is to hand out ``ScriptedTransfers``, one per endpoint.
final class ScriptedConnection: USBDeviceConnection {
    let transfers: [UInt8: ScriptedTransfers]

    init(transfers: [ScriptedTransfers]) {
        self.transfers = Dictionary(uniqueKeysWithValues: transfers.map { ($0.endpoint, $0) })
    }

    func claimInterface(_ number: UInt8) throws(AccessoryError) {}
    func releaseInterface(_ number: UInt8) throws(AccessoryError) {}
    func setAlternateSetting(_ alternate: UInt8, interface number: UInt8) throws(AccessoryError) {}
    func isKernelDriverActive(interface number: UInt8) throws(AccessoryError) -> Bool { false }
    func detachKernelDriver(interface number: UInt8) throws(AccessoryError) {}
    func attachKernelDriver(interface number: UInt8) throws(AccessoryError) {}
    func clearHalt(endpoint: UInt8) throws(AccessoryError) {}
    func reset() throws(AccessoryError) {}

    func makeEndpointTransfers(
        endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int
    ) throws(AccessoryError) -> any EndpointTransfers {
        guard let t = transfers[endpoint] else { throw AccessoryError(.notFound, "no endpoint \(hexByte(endpoint))") }
        return t
    }

    func controlTransfer(_ request: ControlRequest, _ data: ControlData, timeout: Duration) async throws(AccessoryError) -> [UInt8] {
        []
    }

    func configurationWithInterfaceNames(timeout: Duration) -> USBConfiguration? { nil }
}
