import AccessoryCore
import DequeModule
import Synchronization

/// An ``EndpointQueue`` over libusb: a fixed set of ``LibUSBTransfer``s for one bulk or
/// interrupt endpoint, each with its own buffer.
///
/// libusb may call back out of order (two transfers finishing in one event-handling pass);
/// this queue holds an early completion until every older one has been reported, so the
/// handler always sees submission order. Completions arrive on the libusb event thread.
///
/// Locking: one `Mutex` guards the idle and pending lists; submits and cancels happen under
/// it (neither waits for the event thread), and the handler is called after releasing it.
final class LibUSBTransferQueue: EndpointQueue, TransferCompletionHandler {
    let endpoint: UInt8
    let maxPacketSize: Int
    let capacity: Int
    let operation: String
    let device: String
    private let handler = Mutex(Handler())
    private let state = Mutex(State())

    /// The completion handler, in a struct: a closure stored in a `Mutex` as its whole value is
    /// reabstracted on every `withLock` (the inout access writes back a wrapped closure), so each
    /// completion would add two thunks to every later call. A struct field is not.
    private struct Handler {
        var call: (@Sendable (TransferCompletion) -> Void)?
    }

    private struct State {
        var idle: [LibUSBTransfer] = []
        /// Pending transfers, oldest submission first.
        var pending: Deque<LibUSBTransfer> = []
        /// Completions that arrived before an older transfer's.
        var reordered = 0
    }

    /// Allocates `transfers` transfers of `transferSize` bytes each for `endpoint`.
    init(
        device handle: LibUSBDeviceHandle, endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int, transfers: Int,
        transferSize: Int
    ) throws(AccessoryError) {
        precondition(transfers > 0 && transferSize > 0)
        self.endpoint = endpoint
        self.maxPacketSize = max(maxPacketSize, 1)
        self.capacity = transfers
        self.operation = endpointOperation(endpoint, type)
        self.device = handle.node.description
        var idle: [LibUSBTransfer] = []
        for _ in 0..<transfers {
            idle.append(try LibUSBTransfer(device: handle, endpoint: endpoint, type: type, capacity: transferSize, handler: self))
        }
        state.withLock { $0.idle = idle }
    }

    var pending: Int { state.withLock { $0.pending.count } }

    /// Completions libusb delivered out of submission order (and this queue put back in order).
    var reorderedCompletions: Int { state.withLock { $0.reordered } }

    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void) {
        self.handler.withLock { $0.call = handler }
    }

    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError? {
        state.withLock { s in
            guard let t = s.idle.popLast() else { preconditionFailure("more than \(capacity) transfers submitted on \(operation)") }
            precondition(bytes.count <= t.buffer.count, "an OUT transfer of \(bytes.count) bytes exceeds its buffer")
            if !bytes.isEmpty {
                bytes.withUnsafeBytes { t.buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            return submit(t, length: bytes.count, &s)
        }
    }

    func submit(length: Int) -> AccessoryError? {
        state.withLock { s in
            guard let t = s.idle.popLast() else { preconditionFailure("more than \(capacity) transfers submitted on \(operation)") }
            return submit(t, length: length, &s)
        }
    }

    private func submit(_ t: LibUSBTransfer, length: Int, _ s: inout State) -> AccessoryError? {
        if let error = t.submit(length: length) {
            s.idle.append(t)
            return error
        }
        s.pending.append(t)
        return nil
    }

    func cancelAll() {
        state.withLock { s in
            for t in s.pending.reversed() { t.cancel() }
        }
    }

    func close() {
        state.withLock { s in
            precondition(s.pending.isEmpty, "transfers freed while pending on \(operation)")
            s.idle.removeAll()
        }
        handler.withLock { $0.call = nil }
    }

    func transferCompleted(_ transfer: LibUSBTransfer, status: TransferStatus, length: Int) {
        // The transfer is not pending for libusb any more and nobody touches its buffer until
        // it is submitted again, which needs it back in the idle list: copy before locking.
        let isIn = endpoint & 0x80 != 0
        let completion = TransferCompletion(status: status, data: isIn ? transfer.copyBytes(length) : [], length: length)
        let ready: [TransferCompletion] = state.withLock { s in
            transfer.pending = completion
            if s.pending.first !== transfer { s.reordered += 1 }
            var ready: [TransferCompletion] = []
            while let head = s.pending.first, let done = head.pending {
                s.pending.removeFirst()
                head.pending = nil
                s.idle.append(head)
                ready.append(done)
            }
            return ready
        }
        guard !ready.isEmpty, let handler = handler.withLock({ $0.call }) else { return }
        for completion in ready { handler(completion) }
    }
}
