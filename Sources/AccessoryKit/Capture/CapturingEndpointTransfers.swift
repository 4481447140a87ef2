import AccessoryCapture
import AccessoryCore
import AccessoryLocking

/// An endpoint's transfers (a stream's or one-transfer calls'), recorded in a capture: each
/// submission as it is submitted, so in submission order, and its completion before the
/// caller hears of it, matched by its tag (on libusb's event thread, the completions of one
/// pass are written together, then handed on).
final class CapturingEndpointTransfers: EndpointTransfers {
    private let inner: any EndpointTransfers
    private let site: CaptureSite
    /// The URBs submitted and not yet completed, by tag.
    private let urbs = Locked<[UInt64: CaptureRecorder.URB]>([:])

    init(_ inner: any EndpointTransfers, site: CaptureSite) {
        self.inner = inner
        self.site = site
    }

    var endpoint: UInt8 { inner.endpoint }
    var operation: String { inner.operation }
    var device: String { inner.device }

    func setCompletionHandler(_ handler: @escaping @Sendable (_ tag: UInt64, TransferCompletion) -> Void) {
        inner.setCompletionHandler { [recorder = site.recorder, urbs] tag, completion in
            guard let urb = urbs.withLock({ $0.removeValue(forKey: tag) }) else { return handler(tag, completion) }
            recorder.complete(urb, completion) { handler(tag, completion) }
        }
    }

    func reserve(_ count: Int, size: Int) throws(AccessoryError) {
        try inner.reserve(count, size: size)
    }

    func submit(_ bytes: ArraySlice<UInt8>, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        submitting(data: bytes, length: bytes.count, tag: tag) { inner.submit(bytes, timeout: timeout, tag: tag) }
    }

    func submit(length: Int, timeout: Duration?, tag: UInt64) -> AccessoryError? {
        submitting(data: [], length: length, tag: tag) { inner.submit(length: length, timeout: timeout, tag: tag) }
    }

    func cancel(tag: UInt64) { inner.cancel(tag: tag) }
    func cancelAll() { inner.cancelAll() }
    func close() { inner.close() }
    func setAwaitedCheck(_ isAwaited: @escaping @Sendable () -> Bool) { inner.setAwaitedCheck(isAwaited) }

    private func submitting(data: ArraySlice<UInt8>, length: Int, tag: UInt64, _ submit: () -> AccessoryError?) -> AccessoryError? {
        site.submit(
            endpoint: inner.endpoint, data: data, length: length, hold: { urb in urbs.withLock { $0[tag] = urb } },
            release: { _ in urbs.withLock { _ = $0.removeValue(forKey: tag) } }, submit)
    }
}
