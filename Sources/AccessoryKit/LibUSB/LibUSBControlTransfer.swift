import AccessoryCore
import Synchronization

/// One asynchronous control transfer, awaited: libusb's event thread completes it, and
/// cancelling the awaiting task cancels it (`libusb_cancel_transfer`). Unlike
/// `libusb_control_transfer`, no thread blocks while the device answers.
///
/// ``run(timeout:)`` keeps the object, and so its ``LibUSBTransfer`` and the waiter the
/// transfer reports to, alive until the completion has come: libusb never calls back into
/// freed memory.
final class LibUSBControlTransfer: Sendable {
    private let transfer: LibUSBTransfer
    private let waiter: Waiter
    private let length: Int
    let operation: String

    init(device: LibUSBDeviceHandle, request: ControlRequest, data: ControlData) throws(AccessoryError) {
        let operation = controlOperation(request, isIn: data.isIn)
        // Before the buffer is sized: a negative length would make it smaller than the setup
        // packet. libusb itself refuses more than usbfs's page (INVALID_PARAM); say why first.
        try ArgumentCheck.controlLength(data.length, operation: operation)
        let waiter = Waiter(isIn: data.isIn)
        let transfer = try LibUSBTransfer(
            device: device, endpoint: 0, type: .control, capacity: 8 + data.length, handler: waiter, operation: operation)
        let setup = request.setupPacket(isIn: data.isIn, length: data.length)
        setup.withUnsafeBytes { transfer.buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 8) }
        if case .send(let bytes) = data, !bytes.isEmpty {
            bytes.withUnsafeBytes { (transfer.buffer.baseAddress! + 8).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        self.transfer = transfer
        self.waiter = waiter
        self.length = data.length
        self.operation = operation
    }

    /// Submits the transfer and waits for it to end.
    /// - Returns: the bytes received (IN) or `[]` (OUT).
    func run(timeout: Duration) async throws(AccessoryError) -> [UInt8] {
        let device = transfer.device.node.description
        // `nil` (libusb's 0) for a timeout longer than libusb can count: forever.
        let limit = try ArgumentCheck.timeout(timeout, operation: operation)
        let result: Result<(TransferStatus, [UInt8]), AccessoryError> = await withTaskCancellationHandler {
            await withCheckedContinuation { c in
                let failure = waiter.state.withLock { s -> AccessoryError? in
                    guard !s.cancelled else {
                        return AccessoryError(.cancelled, "the control transfer was cancelled", operation: operation)
                    }
                    if let error = transfer.submit(length: 8 + length, timeout: limit) { return error }
                    s.continuation = c
                    return nil
                }
                if let failure { c.resume(returning: .failure(failure)) }
            }
        } onCancel: {
            let inFlight = waiter.state.withLock { s in
                s.cancelled = true
                return s.continuation != nil
            }
            if inFlight { transfer.cancel() }
        }
        let (status, bytes) = try result.get()
        if let error = Self.error(status, operation: operation, device: device, timeout: timeout) { throw error }
        return bytes
    }

    /// The error a control transfer's status means: a STALL is the device refusing the
    /// request, not a halted endpoint.
    static func error(_ status: TransferStatus, operation: String, device: String, timeout: Duration) -> AccessoryError? {
        switch status {
        case .stall:
            return AccessoryError(.stall, "\(device) refused the request (STALL)", operation: operation)
        case .timedOut:
            return AccessoryError(.timeout, "\(device) did not answer within \(timeout)", operation: operation)
        default:
            return status.error(operation: operation, device: device, timeout: timeout)
        }
    }

    /// Where the transfer's completion goes: it resumes the task that waits.
    private final class Waiter: TransferCompletionHandler {
        struct State {
            var continuation: CheckedContinuation<Result<(TransferStatus, [UInt8]), AccessoryError>, Never>?
            var cancelled = false
        }

        let state = Mutex(State())
        let isIn: Bool

        init(isIn: Bool) { self.isIn = isIn }

        func transferCompleted(_ transfer: LibUSBTransfer, status: TransferStatus, length: Int) {
            let bytes = isIn && status == .completed ? transfer.copyBytes(length) : []
            let c = state.withLock { s in
                defer { s.continuation = nil }
                return s.continuation
            }
            c?.resume(returning: .success((status, bytes)))
        }
    }
}
