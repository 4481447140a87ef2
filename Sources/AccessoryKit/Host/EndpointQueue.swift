import AccessoryCore

/// One endpoint's queue of transfers, in the manner of nusb's `Queue`: transfers are
/// submitted, and their completions are reported one at a time, in submission order.
///
/// A session's data plane drives one queue per direction: a ``TransferQueue`` over the
/// backend's transfer primitive (``EndpointTransfers``), or an ``AbsentEndpointQueue`` where
/// the interface has no endpoint in that direction.
///
/// Rules for an implementation:
/// - Completions go to the handler given to ``setCompletionHandler(_:)``, exactly one per
///   submitted transfer, in submission order, one at a time (on the queue's event thread),
///   and never from inside ``submit(_:)``, ``submit(length:)`` or ``cancelAll()``.
/// - The handler must not block and must not call user code; it may submit and cancel.
/// - At most ``capacity`` transfers are pending at once; the caller keeps to that.
package protocol EndpointQueue: AnyObject, Sendable {
    /// The endpoint address, such as `0x81`; bit 7 is set for IN.
    var endpoint: UInt8 { get }
    /// The endpoint's packet size (`wMaxPacketSize`).
    var maxPacketSize: Int { get }
    /// How many transfers can be pending at once.
    var capacity: Int { get }
    /// Transfers submitted whose completion has not been reported yet.
    var pending: Int { get }
    /// The endpoint, for errors: `bulk IN 0x81`.
    var operation: String { get }
    /// The device, for errors: `bus 1 address 5`.
    var device: String { get }

    /// Sets who is told of completions. Call it once, before the first submit.
    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void)
    /// OUT: submits one transfer that sends `bytes` (empty: a zero-length packet).
    /// - Returns: `nil` when submitted; otherwise the error, and nothing is pending for it.
    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError?
    /// IN: submits one transfer that receives up to `length` bytes.
    /// - Returns: `nil` when submitted; otherwise the error, and nothing is pending for it.
    func submit(length: Int) -> AccessoryError?
    /// Cancels every pending transfer, newest first, so that none of them starts after an
    /// older one was cancelled. Each is still reported, as `.cancelled` or however it ended.
    func cancelAll()
    /// Frees the queue's resources. Call it once nothing is pending; the queue is unusable
    /// afterwards.
    func close()
}

/// How one transfer ended.
package struct TransferCompletion: Sendable, Hashable {
    package var status: TransferStatus
    /// IN: the bytes received, whatever the status: a cancelled, timed-out or failed transfer
    /// may have received some. A stream keeps them (its bytes have no gap); a failed
    /// one-transfer call drops them and says how many in ``AccessoryError/bytesTransferred``.
    /// OUT: empty.
    package var data: [UInt8]
    /// The bytes moved: sent (OUT) or received (IN), also when the transfer failed.
    package var length: Int

    package init(status: TransferStatus, data: [UInt8] = [], length: Int? = nil) {
        self.status = status
        self.data = data
        self.length = length ?? data.count
    }
}

/// How one transfer ended (libusb's `libusb_transfer_status`, without libusb).
package enum TransferStatus: Hashable, Sendable {
    case completed
    /// Cancelled; any bytes moved before still count.
    case cancelled
    case timedOut
    case stall
    case noDevice
    case overflow
    case error
    /// Ended with this error, which a simulated device chose (a replayed recording's
    /// divergence); hardware never reports it.
    indirect case failed(AccessoryError)

    /// The error this status means, or `nil` for `.completed`: the one table from a
    /// transfer's status to an error, for streams, one-transfer calls and control transfers.
    /// A vanished device is reported as a ghost found by the operation; the session turns
    /// that into the manager's verdict. The message does not repeat the operation:
    /// ``AccessoryError/description`` adds it.
    /// - Parameters:
    ///   - operation: such as `bulk IN 0x81`.
    ///   - device: such as `bus 1 address 5`.
    ///   - endpoint: the endpoint, when the transfer was on one (not a control transfer).
    ///   - timeout: the transfer's limit, for a timeout's message.
    ///   - session: such as `session 'x'`, when a session made the transfer.
    package func error(
        operation: String, device: String, endpoint: UInt8? = nil, timeout: Duration? = nil, session: String? = nil
    ) -> AccessoryError? {
        switch self {
        case .completed:
            return nil
        case .cancelled:
            return AccessoryError(.cancelled, "\(operation) on \(session ?? device) was cancelled", operation: operation)
        case .timedOut:
            let limit = timeout.map { " within \($0)" } ?? ""
            let what = endpoint.map { $0 & 0x80 != 0 ? "no data came from \(device)" : "\(device) did not take the data" }
                ?? "\(device) did not answer"
            return AccessoryError(.timeout, "\(session.map { "\($0): " } ?? "")\(what)\(limit)", operation: operation)
        case .stall:
            let clear = endpoint.map { "clearHalt(\(hexByte($0)))" } ?? "clearHalt"
            return AccessoryError(.stall, "the endpoint on \(device) stalled; call \(clear) to go on", operation: operation)
        case .noDevice:
            return .noDevice(operation: operation, device: device)
        case .overflow:
            return AccessoryError(.overflow, "\(device) sent more data than asked for", operation: operation)
        case .error:
            return AccessoryError(.io, "the transfer on \(device) failed (LIBUSB_TRANSFER_ERROR)", operation: operation)
        case .failed(let error):
            return error
        }
    }
}

extension AccessoryError {
    /// NO_DEVICE: `operation` found the device gone, which the manager is yet to confirm.
    /// Every backend's NO_DEVICE, transfer or call, is this error.
    /// - Parameter seen: what said so, such as `LIBUSB_ERROR_NO_DEVICE`.
    package static func noDevice(operation: String, device: String, seen: String = "NO_DEVICE", rawValue: Int32? = nil) -> AccessoryError {
        AccessoryError(
            .accessoryDisconnected(.ghostEvicted(.noDevice(operation: operation))),
            "the device is gone (\(device)): \(seen)", operation: operation, rawValue: rawValue)
    }
}

/// A transfer's sign that its device may be gone: NO_DEVICE (ESHUTDOWN or ENODEV) or, as
/// IN transfers end on a real unplug before sysfs and the hotplug event catch up, a transfer
/// error (EPROTO). The manager confirms it against sysfs and its hotplug events.
package struct DeviceGoneSign: Hashable, Sendable {
    /// The operation that saw it, such as `bulk IN 0x81`.
    package var operation: String
    /// `.noDevice` or `.error`.
    package var status: TransferStatus

    package init(operation: String, status: TransferStatus = .noDevice) {
        self.operation = operation
        self.status = status
    }

    /// `NO_DEVICE`, or what the transfer error was.
    package var seen: String {
        status == .noDevice ? "NO_DEVICE" : "a transfer error (LIBUSB_TRANSFER_ERROR)"
    }
}

/// An endpoint's name in errors and logs: `bulk IN 0x81`, `interrupt OUT 0x01`.
package func endpointOperation(_ endpoint: UInt8, _ type: USBEndpoint.TransferType = .bulk) -> String {
    "\(type) \(endpoint & 0x80 != 0 ? "IN" : "OUT") \(hexByte(endpoint))"
}

/// A control transfer's name in errors and logs: `control IN vendor device request 51 (value 0, index 0)`.
package func controlOperation(_ request: ControlRequest, isIn: Bool) -> String {
    "control \(isIn ? "IN" : "OUT") \(request)"
}

/// `0x81`: a byte as two lowercase hexadecimal digits.
package func hexByte(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return "0x" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xf)])
}
