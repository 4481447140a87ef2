internal import CLibUSB
import AccessoryCore

/// Receives transfer completions.
///
/// Runs on the libusb event thread, inside libusb's event handling: it must not block, must
/// not close a device and must never call user code. Taking a short lock, submitting or
/// cancelling transfers, and resuming a continuation are fine.
protocol TransferCompletionHandler: AnyObject, Sendable {
    func transferCompleted(_ transfer: LibUSBTransfer, status: TransferStatus, length: Int)
}

/// One asynchronous bulk, interrupt or control transfer on one endpoint, with its own data
/// buffer.
///
/// This object is the single owner of the `libusb_transfer` and of the buffer: both are
/// freed exactly once, in `deinit`. libusb's `user_data` points at this object without a
/// retain, so the owner (a ``LibUSBEndpointTransfers``) must keep it alive while it is in
/// flight; it holds every transfer it submitted until it has seen it complete. The transfer
/// holds its device handle, so the handle pointer libusb keeps in it stays valid.
///
/// `@unchecked Sendable` is safe: the libusb structure is written (``submit(length:timeout:)``)
/// only while the transfer is not in flight, and read by libusb and by the completion
/// callback only while it is. Locks order the two: a submit happens under the handler's
/// lock, and the callback, before the transfer can be submitted again, hands it back through
/// a lock that the next submit takes first (``LibUSBEndpointTransfers``' `finished`, drained
/// under its lock; for a control transfer the handler is ``LibUSBControlTransfer``'s waiter,
/// whose lock the submit holds and the callback takes, and which submits once). ``tag`` is
/// written with the structure and read by the callback before that hand-back. Every other
/// stored property is immutable.
final class LibUSBTransfer: @unchecked Sendable {
    private let raw: UnsafeMutablePointer<libusb_transfer>
    /// The data buffer, owned by this object. Fill it before an OUT submit; read it after an
    /// IN completion, before the next submit.
    let buffer: UnsafeMutableRawBufferPointer
    let device: LibUSBDeviceHandle
    let endpoint: UInt8
    /// The handler outlives its transfers: it owns them.
    unowned let handler: any TransferCompletionHandler
    /// The endpoint's name for errors, such as `bulk IN 0x81`.
    let operation: String
    /// A control transfer's buffer starts with the 8-byte setup packet.
    let isControl: Bool

    /// The call this transfer is submitted for, for ``LibUSBEndpointTransfers`` (written
    /// under its lock, read by its completion; see above).
    var tag: UInt64 = 0

    /// Allocates a transfer and a buffer of `capacity` bytes for an endpoint of `type` (for a
    /// control transfer, endpoint 0 and the setup packet included in `capacity`).
    init(
        device: LibUSBDeviceHandle, endpoint: UInt8, type: USBEndpoint.TransferType = .bulk, capacity: Int,
        handler: any TransferCompletionHandler, operation: String? = nil
    ) throws(AccessoryError) {
        guard let transfer = libusb_alloc_transfer(0) else {
            throw AccessoryError(.io, "cannot allocate a libusb transfer", operation: "libusb_alloc_transfer")
        }
        self.raw = transfer
        self.buffer = .allocate(byteCount: max(capacity, 1), alignment: 64)
        self.device = device
        self.endpoint = endpoint
        self.handler = handler
        self.operation = operation ?? endpointOperation(endpoint, type)
        self.isControl = type == .control
        device.withUnsafeHandle { transfer.pointee.dev_handle = $0 }
        transfer.pointee.endpoint = endpoint
        switch type {
        case .control: transfer.pointee.type = UInt8(LIBUSB_TRANSFER_TYPE_CONTROL.rawValue)
        case .interrupt: transfer.pointee.type = UInt8(LIBUSB_TRANSFER_TYPE_INTERRUPT.rawValue)
        case .bulk, .isochronous: transfer.pointee.type = UInt8(LIBUSB_TRANSFER_TYPE_BULK.rawValue)
        }
        transfer.pointee.buffer = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        transfer.pointee.callback = libusbTransferCallback
        transfer.pointee.user_data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        libusb_free_transfer(raw)
        buffer.deallocate()
    }

    /// Submits the first `length` bytes of the buffer (OUT) or asks for up to `length` bytes
    /// (IN). Call it only while the transfer is not in flight.
    ///
    /// - Parameter timeout: libusb's per-transfer timeout; `nil` waits forever.
    /// - Returns: `nil` when submitted, else the error (the transfer is then not in flight).
    func submit(length: Int, timeout: Duration? = nil) -> AccessoryError? {
        precondition(length >= 0 && length <= buffer.count, "transfer length \(length) outside the buffer")
        raw.pointee.length = Int32(length)
        raw.pointee.timeout = timeout.map(LibUSBDeviceHandle.milliseconds) ?? 0
        raw.pointee.flags = 0
        raw.pointee.status = LIBUSB_TRANSFER_COMPLETED
        raw.pointee.actual_length = 0
        let status = libusb_submit_transfer(raw)
        guard status != 0 else { return nil }
        return LibUSB.error(status, operation: operation, device: device.node)
    }

    /// Asks libusb to cancel the transfer. Its completion still comes, with `.cancelled` (or
    /// with whatever it finished with first). Cancelling a transfer that is not in flight
    /// does nothing.
    func cancel() {
        _ = libusb_cancel_transfer(raw)
    }

    /// A copy of the first `length` data bytes of the buffer (after a control transfer's
    /// setup packet).
    func copyBytes(_ length: Int) -> [UInt8] {
        let start = isControl ? 8 : 0
        let length = min(length, buffer.count - start)
        guard length > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: length) { out, count in
            out.baseAddress!.update(from: buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + start, count: length)
            count = length
        }
    }

    fileprivate func complete(_ status: libusb_transfer_status, length: Int32) {
        let mapped: TransferStatus
        switch status {
        case LIBUSB_TRANSFER_COMPLETED: mapped = .completed
        case LIBUSB_TRANSFER_CANCELLED: mapped = .cancelled
        case LIBUSB_TRANSFER_TIMED_OUT: mapped = .timedOut
        case LIBUSB_TRANSFER_STALL: mapped = .stall
        case LIBUSB_TRANSFER_NO_DEVICE: mapped = .noDevice
        case LIBUSB_TRANSFER_OVERFLOW: mapped = .overflow
        default: mapped = .error
        }
        handler.transferCompleted(self, status: mapped, length: Int(max(length, 0)))
    }
}

/// The C callback of every transfer. It runs on the libusb event thread and only hands the
/// result to the transfer's handler.
private let libusbTransferCallback: libusb_transfer_cb_fn = { raw in
    guard let raw, let userData = raw.pointee.user_data else { return }
    let transfer = Unmanaged<LibUSBTransfer>.fromOpaque(userData).takeUnretainedValue()
    transfer.complete(raw.pointee.status, length: raw.pointee.actual_length)
}
