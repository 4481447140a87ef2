import DequeModule
import Synchronization
@testable import AccessoryKit
import AccessoryLocking

/// An ``EndpointQueue`` in memory, for data-plane tests: it records every submission, and
/// the test decides how each one ends (``complete(_:data:length:)``), acting as the event
/// thread. ``cancelAll()`` only marks the pending transfers; the next completions report
/// them cancelled, as libusb does.
final class MemoryEndpointQueue: EndpointQueue {
    let endpoint: UInt8
    let maxPacketSize: Int
    let capacity: Int
    let operation: String
    let device = "memory device"

    /// One submitted transfer.
    struct Submission: Sendable, Hashable {
        /// OUT: the bytes to send. IN: empty.
        var bytes: [UInt8]
        /// OUT: the byte count. IN: the length asked for.
        var length: Int
        var cancelled = false
    }

    private struct State {
        var handler: (@Sendable (TransferCompletion) -> Void)?
        var pending: Deque<Submission> = []
        var history: [Submission] = []
        /// Errors that the next submits return, in order.
        var submitErrors: [AccessoryError] = []
        var closed = false
    }

    private let state = Locked(State())

    init(endpoint: UInt8, maxPacketSize: Int, capacity: Int) {
        self.endpoint = endpoint
        self.maxPacketSize = maxPacketSize
        self.capacity = capacity
        self.operation = "bulk \(endpoint & 0x80 != 0 ? "IN" : "OUT") \(hexByte(endpoint))"
    }

    var pending: Int { state.withLock { $0.pending.count } }
    /// The pending transfers, oldest first.
    var pendingSubmissions: [Submission] { state.withLock { Array($0.pending) } }
    /// Every submission so far, in order.
    var history: [Submission] { state.withLock { $0.history } }
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Makes the next submit fail with `error`.
    func failNextSubmit(_ error: AccessoryError) {
        state.withLock { $0.submitErrors.append(error) }
    }

    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void) {
        state.withLock { $0.handler = handler }
    }

    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError? {
        submit(Submission(bytes: Array(bytes), length: bytes.count))
    }

    func submit(length: Int) -> AccessoryError? {
        submit(Submission(bytes: [], length: length))
    }

    private func submit(_ submission: Submission) -> AccessoryError? {
        state.withLock { s in
            precondition(!s.closed, "submit after close")
            precondition(s.pending.count < capacity, "more than \(capacity) transfers pending on \(operation)")
            if !s.submitErrors.isEmpty { return s.submitErrors.removeFirst() }
            s.pending.append(submission)
            s.history.append(submission)
            return nil
        }
    }

    func cancelAll() {
        state.withLock { s in
            for i in s.pending.indices { s.pending[i].cancelled = true }
        }
    }

    func close() {
        state.withLock { s in
            precondition(s.pending.isEmpty, "closed while transfers are pending")
            s.closed = true
        }
    }

    /// Ends the oldest pending transfer with `status` and reports it. Without a status, a
    /// cancelled transfer ends `.cancelled` with nothing moved, and any other `.completed`.
    /// Returns it, or `nil` when none is pending.
    @discardableResult
    func complete(_ status: TransferStatus? = nil, data: [UInt8] = [], length: Int? = nil) -> Submission? {
        let (submission, handler) = state.withLock { s in (s.pending.popFirst(), s.handler) }
        guard let submission else { return nil }
        let completion = status == nil && submission.cancelled
            ? TransferCompletion(status: .cancelled)
            : TransferCompletion(
                status: status ?? .completed, data: data, length: length ?? (endpoint & 0x80 != 0 ? data.count : submission.length))
        handler?(completion)
        return submission
    }

    /// Reports every pending transfer that was cancelled, oldest first, while the oldest is.
    func completeCancelled() {
        while let first = state.withLock({ $0.pending.first }), first.cancelled { complete() }
    }
}

/// Two memory queues joined as a loopback accessory: what each OUT transfer sends comes
/// back as the data of one IN transfer, as accessory-sim's loopback does.
final class MemoryLoopback: Sendable {
    let input: MemoryEndpointQueue
    let output: MemoryEndpointQueue
    private let echoes = Locked<Deque<[UInt8]>>([])
    /// Every byte the device accepted, in order.
    private let received = Locked<[UInt8]>([])

    init(inPacketSize: Int = 512, outPacketSize: Int = 512, transfers: Int = 4) {
        input = MemoryEndpointQueue(endpoint: 0x81, maxPacketSize: inPacketSize, capacity: transfers)
        output = MemoryEndpointQueue(endpoint: 0x01, maxPacketSize: outPacketSize, capacity: transfers)
    }

    var stream: [UInt8] { received.withLock { $0 } }

    /// Reports the cancelled transfers at the head of both queues, as a device that accepts
    /// nothing does.
    func runCancellations() {
        input.completeCancelled()
        output.completeCancelled()
    }

    /// Accepts the oldest pending OUT transfer, if any.
    func acceptOne() {
        guard let sent = output.pendingSubmissions.first else { return }
        if !sent.cancelled {
            received.withLock { $0 += sent.bytes }
            echoes.withLock { $0.append(sent.bytes) }
        }
        output.complete()
    }

    /// Accepts every pending OUT transfer and answers pending IN transfers with the echoes,
    /// until nothing more happens. Cancelled transfers end `.cancelled`.
    func run() {
        var progress = true
        while progress {
            progress = false
            while output.pending > 0 {
                acceptOne()
                progress = true
            }
            while let asked = input.pendingSubmissions.first {
                if asked.cancelled {
                    input.complete()
                } else if let echo = echoes.withLock({ $0.popFirst() }) {
                    input.complete(data: echo)
                } else {
                    break
                }
                progress = true
            }
        }
    }
}
