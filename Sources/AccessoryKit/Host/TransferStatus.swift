import AccessoryCore

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
