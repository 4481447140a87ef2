/// One endpoint's transfers for one-transfer calls (``AccessorySession/transferIn(_:length:timeout:)``
/// and ``AccessorySession/transferOut(_:_:timeout:)``): each is submitted at once, with its own
/// timeout and a tag the caller chooses, and can be cancelled alone.
///
/// Unlike an ``EndpointQueue`` (a session's streams), it holds no fixed set of transfers and
/// does not put completions back in submission order: the caller does that, so that a
/// cancelled or timed-out call ends at once, whatever older call is still waiting.
///
/// Rules for an implementation:
/// - Completions go to the handler given to ``setCompletionHandler(_:)``, exactly one per
///   submitted transfer, with its tag, on the backend's event thread, and never from inside
///   ``submit(_:timeout:tag:)``, ``submit(length:timeout:tag:)``, ``cancel(tag:)`` or
///   ``cancelAll()``. The device completes the transfers of one endpoint in the order they
///   were submitted; a cancelled or timed-out one may end before older ones.
/// - A timeout ends the transfer with `.timedOut` (and the bytes moved before it).
/// - The handler must not block and must not call user code.
package protocol EndpointTransfers: AnyObject, Sendable {
    /// The endpoint address, such as `0x83`; bit 7 is set for IN.
    var endpoint: UInt8 { get }
    /// The endpoint, for errors: `interrupt IN 0x83`.
    var operation: String { get }
    /// The device, for errors: `bus 1 address 5`.
    var device: String { get }

    /// Sets who is told of completions. Call it once, before the first submit.
    func setCompletionHandler(_ handler: @escaping @Sendable (_ tag: UInt64, TransferCompletion) -> Void)
    /// OUT: submits one transfer that sends `bytes` (empty: a zero-length packet).
    /// - Parameter timeout: `nil` waits forever.
    /// - Returns: `nil` when submitted; otherwise the error, and nothing is pending for it.
    func submit(_ bytes: [UInt8], timeout: Duration?, tag: UInt64) -> AccessoryError?
    /// IN: submits one transfer that receives up to `length` bytes.
    /// - Returns: `nil` when submitted; otherwise the error, and nothing is pending for it.
    func submit(length: Int, timeout: Duration?, tag: UInt64) -> AccessoryError?
    /// Cancels the pending transfer with this tag; does nothing when there is none. It is
    /// still reported, as `.cancelled` or however it ended.
    func cancel(tag: UInt64)
    /// Cancels every pending transfer, newest first.
    func cancelAll()
    /// Frees what the transfers hold. Call it once nothing is pending; unusable afterwards.
    func close()
}
