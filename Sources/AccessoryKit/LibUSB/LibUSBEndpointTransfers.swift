import AccessoryCore
import Synchronization

/// The transfer primitive (``EndpointTransfers``) over libusb, for streams and one-transfer
/// calls alike: one ``LibUSBTransfer`` per submit, with libusb's own timeout, taken from a
/// pool of idle ones whose buffers are large enough (or allocated when none is). A stream
/// reserves its transfers in the pool (``reserve(_:size:)``), so it never allocates.
///
/// Completions are reported as libusb delivers them, on its event thread, with their tags.
/// An IN completion carries the bytes received whatever its status.
///
/// Locking: one `Mutex` guards the idle and pending lists and each transfer's tag; submits
/// and cancels happen under it (neither waits for the event thread). A completion never
/// waits for it, so the event thread never waits for another thread's submit (an ioctl): it
/// hands the transfer back through a second, short lock (`finished`), which everything under
/// the first drains before it looks at the lists and again after it lets go of them; the
/// completion drains it itself only when the first is free, then calls the handler.
final class LibUSBEndpointTransfers: EndpointTransfers, TransferCompletionHandler {
    let endpoint: UInt8
    let operation: String
    let device: String
    private let type: USBEndpoint.TransferType
    private let maxPacketSize: Int
    private let handle: LibUSBDeviceHandle
    private let handler = Mutex(CompletionHandlerSlot())
    private let state = Mutex(State())
    /// Transfers completed since `state` was last taken, in completion order: still in
    /// `pending`, to go back to the pool. Taken after `state`, never before it.
    private let finished = Mutex<[LibUSBTransfer]>([])

    /// Idle transfers kept for the next calls, and the largest buffer kept: a call larger
    /// than that gets a transfer of its own, freed once it completes. A stream's
    /// ``reserve(_:size:)`` raises both.
    static let idleLimit = 4
    static let keptBufferLimit = 64 * 1024

    private struct State {
        var idleLimit = LibUSBEndpointTransfers.idleLimit
        var keptBufferLimit = LibUSBEndpointTransfers.keptBufferLimit
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

    func reserve(_ count: Int, size: Int) throws(AccessoryError) {
        var made: [LibUSBTransfer] = []
        for _ in 0..<count {
            made.append(try LibUSBTransfer(device: handle, endpoint: endpoint, type: type, capacity: max(size, maxPacketSize), handler: self))
        }
        withLists { s in
            s.idleLimit = max(s.idleLimit, count)
            s.keptBufferLimit = max(s.keptBufferLimit, size)
            s.idle += made
        }
    }

    func submit(_ bytes: ArraySlice<UInt8>, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        withLists { s in
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
        withLists { s in
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

    /// Runs `body` on the lists, with the transfers completed since they were last looked at
    /// back in the pool first, and those that completed meanwhile back in it after.
    private func withLists<R>(_ body: (inout State) -> R) -> R {
        let result = state.withLock { s in
            drain(&s)
            return body(&s)
        }
        settle()
        return result
    }

    /// Drains `finished` until it is empty or the lists are held. A completion that found
    /// the lists held appended its transfer before the holder let go, so the holder's call
    /// here, after it let go, sees it: no transfer waits in `finished` for the next submit.
    private func settle() {
        while finished.withLock({ !$0.isEmpty }) {
            guard state.withLockIfAvailable({ drain(&$0) }) != nil else { return }
        }
    }

    /// Moves the transfers that completed since the last look from `pending` to the pool.
    private func drain(_ s: inout State) {
        let done = finished.withLock { f in
            defer { f = [] }
            return f
        }
        for transfer in done {
            if let i = s.pending.firstIndex(where: { $0 === transfer }) { s.pending.remove(at: i) }
            keep(transfer, &s)
        }
    }

    /// Returns a transfer to the pool, unless its buffer is large or the pool is full.
    private func keep(_ t: LibUSBTransfer, _ s: inout State) {
        guard t.buffer.count <= s.keptBufferLimit else { return }
        s.idle.append(t)
        if s.idle.count > s.idleLimit { s.idle.removeFirst() }
    }

    func cancel(tag: UInt64) {
        withLists { s in
            for t in s.pending where t.tag == tag { t.cancel() }
        }
    }

    func cancelAll() {
        withLists { s in
            for t in s.pending.reversed() { t.cancel() }
        }
    }

    func close() {
        withLists { s in
            precondition(s.pending.isEmpty, "transfers freed while pending on \(operation)")
            s.idle.removeAll()
        }
        handler.withLock { $0.call = nil }
    }

    func transferCompleted(_ transfer: LibUSBTransfer, status: TransferStatus, length: Int) {
        // Nobody touches the buffer or the tag until the transfer is submitted again, which
        // needs it back in the idle list, so through `finished`: read both before handing it
        // back there.
        let data = endpoint & 0x80 != 0 ? transfer.copyBytes(length) : []
        let tag = transfer.tag
        finished.withLock { $0.append(transfer) }
        // Back to the pool now (a large buffer freed now) unless a submit or a cancel holds
        // the lists: then the holder drains them as it lets go (`settle`), and this thread
        // does not wait for its ioctl.
        settle()
        handler.withLock { $0.call }?(tag, TransferCompletion(status: status, data: data, length: length))
    }
}
