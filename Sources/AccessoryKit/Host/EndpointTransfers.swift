import AccessoryLocking
/// The transfer primitive: one endpoint's transfers, in the manner of nusb's `Queue`. Each
/// transfer is a tagged buffer submitted with its own timeout; one or all can be cancelled;
/// each ends in one tagged completion. Every backend (libusb, the simulation, the capture
/// that wraps either) implements it once, and both paths are built on it: a session's
/// streams through ``TransferQueue``, its one-transfer calls through ``EndpointCalls``.
///
/// Rules for an implementation:
/// - Completions go to the handler given to ``setCompletionHandler(_:)``, exactly one per
///   submitted transfer, with its tag, on the backend's event thread, one at a time, and
///   never from inside ``submit(_:timeout:tag:)``, ``submit(length:timeout:tag:)``,
///   ``cancel(tag:)`` or ``cancelAll()``. The device completes the transfers of one
///   endpoint in the order they were submitted; a cancelled or timed-out one may end before
///   older ones.
/// - A completion of an IN transfer carries the bytes received, whatever its status
///   (``TransferCompletion/data``): the caller decides whether to keep them.
/// - A timeout ends the transfer with `.timedOut` (and the bytes moved before it).
/// - The handler must not block and must not call user code; it may submit and cancel.
package protocol EndpointTransfers: AnyObject, Sendable {
    /// The endpoint address, such as `0x83`; bit 7 is set for IN.
    var endpoint: UInt8 { get }
    /// The endpoint, for errors: `interrupt IN 0x83`.
    var operation: String { get }
    /// The device, for errors: `bus 1 address 5`.
    var device: String { get }

    /// Sets who is told of completions. Call it once, before the first submit.
    func setCompletionHandler(_ handler: @escaping @Sendable (_ tag: UInt64, TransferCompletion) -> Void)
    /// Keeps `count` transfers of `size` bytes ready, for a stream that keeps that many in
    /// flight, so that they are reused rather than made at each submit.
    func reserve(_ count: Int, size: Int) throws(AccessoryError)
    /// OUT: submits one transfer that sends `bytes` (empty: a zero-length packet).
    /// - Parameter timeout: `nil` waits forever.
    /// - Returns: `nil` when submitted; otherwise the error, and nothing is pending for it.
    func submit(_ bytes: ArraySlice<UInt8>, timeout: Duration?, tag: UInt64) -> AccessoryError?
    /// IN: submits one transfer that receives up to `length` bytes.
    /// - Returns: `nil` when submitted; otherwise the error, and nothing is pending for it.
    func submit(length: Int, timeout: Duration?, tag: UInt64) -> AccessoryError?
    /// Cancels the pending transfer with this tag; does nothing when there is none. It is
    /// still reported, as `.cancelled` or however it ended.
    func cancel(tag: UInt64)
    /// Cancels every pending transfer, newest first, so that none of them starts after an
    /// older one was cancelled. Each is still reported.
    func cancelAll()
    /// Frees what the transfers hold. Call it once nothing is pending; unusable afterwards.
    func close()
    /// Says how to ask whether anyone awaits these transfers now: a stream's read-ahead that
    /// nobody reads is not awaited; a one-transfer call always is (the default, unset). Only
    /// a simulation asks: it fails a replayed transfer that its recording cannot answer only
    /// where someone waits for it. The check takes its owner's lock: call it outside yours.
    func setAwaitedCheck(_ isAwaited: @escaping @Sendable () -> Bool)
}

extension EndpointTransfers {
    /// Nothing to keep ready: transfers cost nothing to make.
    package func reserve(_ count: Int, size: Int) throws(AccessoryError) {}

    /// Nobody asks: real hardware answers or not, whoever waits.
    package func setAwaitedCheck(_ isAwaited: @escaping @Sendable () -> Bool) {}
}

/// A transfer primitive's completion handler, kept in a lock. A struct field, not the lock's
/// whole value: a closure stored as a `Mutex`'s or `Locked`'s value is reabstracted at every
/// `withLock` (the inout access writes back a wrapped closure), so each completion would add
/// two thunks to every later call. A struct field is not.
package struct CompletionHandlerSlot: Sendable {
    package var call: (@Sendable (_ tag: UInt64, TransferCompletion) -> Void)?

    package init() {}
}
