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
    /// Says how to ask whether anyone awaits this queue's transfers now (see
    /// ``EndpointTransfers/setAwaitedCheck(_:)``).
    func setAwaitedCheck(_ isAwaited: @escaping @Sendable () -> Bool)
}

extension EndpointQueue {
    /// Nobody asks.
    package func setAwaitedCheck(_ isAwaited: @escaping @Sendable () -> Bool) {}
}

/// An endpoint's name in errors and logs: `bulk IN 0x81`, `interrupt OUT 0x01`.
package func endpointOperation(_ endpoint: UInt8, _ type: USBEndpoint.TransferType = .bulk) -> String {
    "\(type) \(endpoint & 0x80 != 0 ? "IN" : "OUT") \(hexByte(endpoint))"
}

/// A control transfer's name in errors and logs: `control IN vendor device request 51 (value 0, index 0)`.
package func controlOperation(_ request: ControlRequest, isIn: Bool) -> String {
    "control \(isIn ? "IN" : "OUT") \(request)"
}
