import AccessoryCore
import Synchronization
import AccessoryLocking

/// A session's one-transfer calls (``AccessorySession/transferIn(_:length:timeout:)`` and
/// ``AccessorySession/transferOut(_:_:timeout:)``): one ``EndpointTransfers`` per endpoint,
/// made at its first call, and the calls waiting on them.
///
/// - Each call is one transfer with the call's timeout. Calls on different endpoints run
///   concurrently. On one endpoint they reach the device in the order they were made (one
///   thread at a time submits an endpoint's queued calls, oldest first), and a call that
///   got data is resumed only after every older call on that endpoint has ended; a call
///   that failed (cancelled, timed out, stalled) is resumed at once.
/// - Nothing is submitted on an endpoint before a call on it; none while its halt is
///   cleared (``beginClearingHalt(_:)``: such a call is `.busy`).
/// - A transfer that finds the device (maybe) gone does what a stream's does: the session is
///   told once (``setDeviceGoneHandler(_:)``), the call waits, and ``fail(_:)`` ends it, and
///   every call after it, with the manager's reason.
/// - A failed IN call drops what its transfer received; ``AccessoryError/bytesTransferred``
///   says how much.
///
/// Locking: one lock guards the calls and the endpoints' lanes (``EndpointCallsState``);
/// transfers are submitted and cancelled, and calls resumed, after releasing it. Completions
/// arrive on the backend's event thread.
final class EndpointCalls: Sendable {
    typealias CallResult = Result<[UInt8], AccessoryError>
    private typealias Effects = EndpointCallsState.Effects

    /// The claimed interface.
    let interfaceNumber: UInt8
    /// Each alternate setting's bulk and interrupt endpoints.
    let settings: [UInt8: [AccessoryEndpoint]]
    /// For messages, such as `session 'x'`.
    let sessionDescription: String
    private let state: Locked<EndpointCallsState>
    private let onGone = Locked(GoneHandler())
    private let ids = Atomic<UInt64>(0)

    /// Who hears of a vanished device; a struct, as ``CompletionHandlerSlot`` is.
    private struct GoneHandler {
        var call: (@Sendable (DeviceGoneSign) -> Void)?
    }

    /// The calls of a session on `interface` of `device`, in alternate setting `alternate`.
    init(
        device: (any USBDeviceConnection)?, interface: UInt8, alternate: UInt8, settings: [UInt8: [AccessoryEndpoint]],
        sessionDescription: String
    ) {
        self.interfaceNumber = interface
        self.settings = settings
        self.sessionDescription = sessionDescription
        self.state = Locked(EndpointCallsState(
            device: device, alternate: alternate, settings: settings, sessionDescription: sessionDescription))
    }

    /// No device, no endpoint: for data planes built without one (tests).
    convenience init() {
        self.init(device: nil, interface: 0, alternate: 0, settings: [:], sessionDescription: "the session")
    }

    /// Sets who is told, once per session, that a transfer found the device (maybe) gone.
    func setDeviceGoneHandler(_ handler: @escaping @Sendable (DeviceGoneSign) -> Void) {
        onGone.withLock { $0.call = handler }
    }

    /// Sets who counts this session's transfer timeouts, and the transfers that worked
    /// between them (automatic recovery).
    func setTimeoutWatch(_ watch: TimeoutWatch) {
        state.withLock { $0.timeoutWatch = watch }
    }

    /// The current alternate setting.
    var alternate: UInt8 { state.withLock { $0.alternate } }

    /// The endpoints of the current alternate setting.
    var endpoints: [AccessoryEndpoint] { settings[alternate] ?? [] }

    /// Calls registered whose transfer has not come back.
    var inFlight: Int { state.withLock { $0.outstanding } }

    /// Runs `body` unless a call is in flight on `endpoint`, holding new calls off while it
    /// runs: a stream starting a read or write on that endpoint, so that it and a call never
    /// both begin. (The streams' lock is taken inside this one, never this one inside theirs.)
    /// - Returns: `nil` when a call is in flight.
    func unlessCalls<R>(on endpoint: UInt8, _ body: () -> R) -> R? {
        state.withLock { s in (s.lanes[endpoint]?.order.isEmpty ?? true) ? body() : nil }
    }

    // MARK: Calls

    /// One transfer on `endpoint`: IN when `bytes` is `nil` (up to `length` bytes), else OUT.
    /// - Parameter streamRefusal: why a stream's use of the endpoint refuses the call, asked
    ///   under this lock (see ``unlessCalls(on:_:)``).
    /// - Returns: the bytes received (IN) or `[]` (OUT); the failure otherwise.
    func transfer(
        _ endpoint: AccessoryEndpoint, bytes: [UInt8]?, length: Int, timeout: Duration?,
        streamRefusal: () -> AccessoryError? = { nil }
    ) async -> CallResult {
        let id = ids.add(1, ordering: .relaxed).newValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: EndpointCallsState.Continuation) in
                let submission = EndpointCallsState.Submission(id: id, bytes: bytes, length: length, timeout: timeout)
                let lane: UInt8? = event { s, fx in
                    if let refusal = streamRefusal() {
                        fx.resume.append((c, .failure(refusal)))
                        return nil
                    }
                    return s.start(submission, endpoint, c, &fx, makeLane: makeLane)
                }
                if let lane { submitQueued(lane) }
            }
        } onCancel: {
            event { s, fx in s.cancel(id, on: endpoint, &fx) }
        }
    }

    /// Submits the endpoint's queued transfers, oldest first, until none is left: one thread
    /// at a time, so that they reach the device in call order.
    private func submitQueued(_ address: UInt8) {
        while let work = event({ s, fx in s.nextSubmission(address, &fx) }) {
            let (next, transfers) = work
            let error =
                if let bytes = next.bytes { transfers.submit(bytes[...], timeout: next.timeout, tag: next.id) } else {
                    transfers.submit(length: next.length, timeout: next.timeout, tag: next.id)
                }
            event { s, fx in s.submitted(next.id, error, transfers, &fx) }
        }
    }

    /// Makes `endpoint`'s transfers on `device`, their completions reported to this object.
    private func makeLane(
        _ endpoint: AccessoryEndpoint, on device: (any USBDeviceConnection)?
    ) -> Result<EndpointCallsState.Lane, AccessoryError> {
        guard let device else {
            return .failure(AccessoryError(.notFound, "\(sessionDescription) has no device", operation: "\(endpoint)"))
        }
        do {
            let transfers = try device.makeEndpointTransfers(
                endpoint: endpoint.address, type: endpoint.transferType, maxPacketSize: endpoint.maxPacketSize)
            transfers.setCompletionHandler { [weak self] tag, completion in
                self?.completed(tag, completion, operation: transfers.operation, device: transfers.device)
            }
            return .success(EndpointCallsState.Lane(transfers: transfers))
        } catch {
            return .failure(error)
        }
    }

    /// The transfer of call `tag` ended.
    private func completed(_ tag: UInt64, _ c: TransferCompletion, operation: String, device: String) {
        event { s, fx in s.completed(tag, c, operation: operation, device: device, &fx) }
    }

    // MARK: Ending

    /// Ends every call with `error` (a disconnection, or the manager's verdict that the
    /// device is still there): parked calls at once, calls in flight once their cancelled
    /// transfers are back (data that came first is still delivered), later calls at once.
    /// The first failure wins.
    func fail(_ error: AccessoryError) {
        event { s, fx in
            guard s.failure == nil, !s.closed else { return }
            s.failure = error
            s.endAll(error, &fx)
        }
    }

    /// Closes: every call ends (`.sessionClosed`, or the failure that came first), transfers
    /// in flight are cancelled, and this returns once all of them are back. Idempotent.
    func close() async {
        event { s, fx in
            guard !s.closed else { return }
            s.closed = true
            s.endAll(s.failure ?? s.closedError(), &fx)
        }
        await waitUntilDrained()
    }

    /// Waits until no transfer is in flight.
    func waitUntilDrained() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if s.outstanding == 0 { return true }
                s.drainWaiters.append(c)
                return false
            }
            if ready { c.resume() }
        }
    }

    /// Frees every endpoint's transfers and lets go of the device. Call it once closed and
    /// drained.
    func release() {
        let lanes = state.withLock { s in
            defer {
                s.lanes.removeAll()
                s.device = nil
            }
            return s.lanes.values.map(\.transfers)
        }
        for t in lanes { t.close() }
    }

    // MARK: Halts

    /// Holds new calls on `endpoint` off (`.busy`) while its halt is cleared. Call
    /// ``endClearingHalt(_:)`` afterwards in every case.
    /// - Returns: why it cannot be done now: calls in flight on it, a clear already under
    ///   way (`.busy`), or the session's end.
    func beginClearingHalt(_ endpoint: UInt8) -> AccessoryError? {
        state.withLock { $0.beginClearingHalt(endpoint) }
    }

    /// Lets calls on `endpoint` in again.
    func endClearingHalt(_ endpoint: UInt8) {
        state.withLock { _ = $0.clearingHalt.remove(endpoint) }
    }

    // MARK: Alternate settings

    /// Holds new calls off (`.busy`) while an alternate setting is selected.
    /// - Returns: why it cannot be done now: calls in flight (`.busy`), or the session's end.
    func beginSwitching() -> AccessoryError? {
        state.withLock { $0.beginSwitching() }
    }

    /// Lets calls in again, in `alternate` when the switch was made (each endpoint's
    /// transfers are made anew there: an address may have another type).
    func endSwitching(to alternate: UInt8?) {
        let idle: [any EndpointTransfers] = state.withLock { s in
            s.switching = false
            guard let alternate else { return [] }
            s.alternate = alternate
            defer { s.lanes.removeAll() }
            return s.lanes.values.map(\.transfers)
        }
        for t in idle { t.close() }
    }

    // MARK: Events

    /// Runs `body` under the lock, then does what it recorded.
    @discardableResult
    private func event<R>(_ body: (inout EndpointCallsState, inout Effects) -> R) -> R {
        state.withLock(Effects(), body, then: run)
    }

    private func run(_ fx: Effects) {
        for (c, r) in fx.resume { c.resume(returning: r) }
        for (t, tag) in fx.cancel { t.cancel(tag: tag) }
        for t in fx.cancelAll { t.cancelAll() }
        for c in fx.drains { c.resume() }
        if let gone = fx.gone, let report = onGone.withLock({ $0.call }) { report(gone) }
        if let outcome = fx.outcome {
            if let endpoint = outcome.timedOut { outcome.watch.timedOut(on: endpoint) } else { outcome.watch.succeeded() }
        }
    }
}
