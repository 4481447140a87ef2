import AccessoryCore
import Synchronization

/// ``EndpointTransfers`` over libusb: one ``LibUSBTransfer`` per call, each submitted with
/// libusb's own timeout, taken from a small pool of idle ones whose buffers are large enough
/// (or allocated when none is).
///
/// Completions are reported as libusb delivers them, on its event thread, with the tag of the
/// call they belong to.
///
/// Locking: one `Mutex` guards the idle and pending lists and each transfer's tag; submits
/// and cancels happen under it (neither waits for the event thread), and the handler is
/// called after releasing it.
final class LibUSBEndpointTransfers: EndpointTransfers, TransferCompletionHandler {
    let endpoint: UInt8
    let operation: String
    let device: String
    private let type: USBEndpoint.TransferType
    private let maxPacketSize: Int
    private let handle: LibUSBDeviceHandle
    private let handler = Mutex(Handler())
    private let state = Mutex(State())

    /// Idle transfers kept for the next calls, and the largest buffer kept: a call larger
    /// than that gets a transfer of its own, freed once it completes.
    static let idleLimit = 4
    static let keptBufferLimit = 64 * 1024

    /// The completion handler, in a struct (see ``LibUSBTransferQueue``'s: a bare closure in a
    /// `Mutex` grows by two thunks at every access).
    private struct Handler {
        var call: (@Sendable (UInt64, TransferCompletion) -> Void)?
    }

    private struct State {
        var idle: [LibUSBTransfer] = []
        /// In submission order; few at a time, so searched by tag.
        var pending: [LibUSBTransfer] = []
    }

    init(device handle: LibUSBDeviceHandle, endpoint: UInt8, type: USBEndpoint.TransferType, maxPacketSize: Int) {
        self.handle = handle
        self.endpoint = endpoint
        self.type = type
        self.maxPacketSize = max(maxPacketSize, 1)
        self.operation = endpointOperation(endpoint, type)
        self.device = handle.node.description
    }

    func setCompletionHandler(_ handler: @escaping @Sendable (UInt64, TransferCompletion) -> Void) {
        self.handler.withLock { $0.call = handler }
    }

    func submit(_ bytes: [UInt8], timeout: Duration?, tag: UInt64) -> AccessoryError? {
        state.withLock { s in
            let t: LibUSBTransfer
            switch take(capacity: bytes.count, &s) {
            case .success(let transfer): t = transfer
            case .failure(let error): return error
            }
            if !bytes.isEmpty {
                bytes.withUnsafeBytes { t.buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            return submit(t, length: bytes.count, timeout: timeout, tag: tag, &s)
        }
    }

    func submit(length: Int, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        state.withLock { s in
            switch take(capacity: length, &s) {
            case .success(let t): return submit(t, length: length, timeout: timeout, tag: tag, &s)
            case .failure(let error): return error
            }
        }
    }

    /// An idle transfer whose buffer holds `capacity` bytes, or a new one.
    private func take(capacity: Int, _ s: inout State) -> Result<LibUSBTransfer, AccessoryError> {
        if let i = s.idle.lastIndex(where: { $0.buffer.count >= capacity }) {
            return .success(s.idle.remove(at: i))
        }
        do {
            return .success(try LibUSBTransfer(device: handle, endpoint: endpoint, type: type, capacity: max(capacity, maxPacketSize), handler: self))
        } catch {
            return .failure(error)
        }
    }

    private func submit(_ t: LibUSBTransfer, length: Int, timeout: Duration?, tag: UInt64, _ s: inout State) -> AccessoryError? {
        t.tag = tag
        if let error = t.submit(length: length, timeout: timeout) {
            keep(t, &s)
            return error
        }
        s.pending.append(t)
        return nil
    }

    /// Returns a transfer to the pool, unless its buffer is large or the pool is full.
    private func keep(_ t: LibUSBTransfer, _ s: inout State) {
        guard t.buffer.count <= Self.keptBufferLimit else { return }
        s.idle.append(t)
        if s.idle.count > Self.idleLimit { s.idle.removeFirst() }
    }

    func cancel(tag: UInt64) {
        state.withLock { s in
            for t in s.pending where t.tag == tag { t.cancel() }
        }
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
        // Nobody touches the buffer until the transfer is submitted again, which needs it back
        // in the idle list: copy before locking.
        let data = endpoint & 0x80 != 0 && status == .completed ? transfer.copyBytes(length) : []
        let tag: UInt64 = state.withLock { s in
            if let i = s.pending.firstIndex(where: { $0 === transfer }) { s.pending.remove(at: i) }
            keep(transfer, &s)
            return transfer.tag
        }
        handler.withLock { $0.call }?(tag, TransferCompletion(status: status, data: data, length: length))
    }
}
