import AccessoryCapture
import AccessoryCore

/// An endpoint queue whose transfers are recorded in a capture: a submission when it is
/// submitted, its completion before the data plane hears of it. Completions come in
/// submission order, so the URBs wait in a first-in, first-out line.
final class CapturingEndpointQueue: EndpointQueue {
    private let inner: any EndpointQueue
    private let site: CaptureSite
    /// The URBs submitted and not yet completed, oldest first.
    private let urbs = Locked<[CaptureRecorder.URB]>([])

    init(_ inner: any EndpointQueue, site: CaptureSite) {
        self.inner = inner
        self.site = site
    }

    var endpoint: UInt8 { inner.endpoint }
    var maxPacketSize: Int { inner.maxPacketSize }
    var capacity: Int { inner.capacity }
    var pending: Int { inner.pending }
    var operation: String { inner.operation }
    var device: String { inner.device }

    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void) {
        inner.setCompletionHandler { [recorder = site.recorder, urbs] completion in
            let urb = urbs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let urb { recorder.complete(urb, completion) }
            handler(completion)
        }
    }

    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError? {
        submitting(data: bytes, length: bytes.count) { inner.submit(bytes) }
    }

    func submit(length: Int) -> AccessoryError? {
        submitting(data: [], length: length) { inner.submit(length: length) }
    }

    func cancelAll() { inner.cancelAll() }
    func close() { inner.close() }

    private func submitting(data: ArraySlice<UInt8>, length: Int, _ submit: () -> AccessoryError?) -> AccessoryError? {
        site.submit(
            endpoint: inner.endpoint, data: data, length: length, hold: { urb in urbs.withLock { $0.append(urb) } },
            release: { urb in urbs.withLock { $0.removeAll { $0.id == urb.id } } }, submit)
    }
}
