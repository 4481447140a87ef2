import AccessoryCore
import DequeModule
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
/// Locking: one lock guards the calls; transfers are submitted and cancelled, and calls
/// resumed, after releasing it. Completions arrive on the backend's event thread.
final class EndpointCalls: Sendable {
    typealias CallResult = Result<[UInt8], AccessoryError>
    private typealias Continuation = CheckedContinuation<CallResult, Never>

    /// The claimed interface.
    let interfaceNumber: UInt8
    /// Each alternate setting's bulk and interrupt endpoints.
    let settings: [UInt8: [AccessoryEndpoint]]
    /// For messages, such as `session 'x'`.
    let sessionDescription: String
    private let state: Locked<State>
    private let onGone = Locked(GoneHandler())
    private let ids = Atomic<UInt64>(0)

    /// Who hears of a vanished device; a struct, as ``CompletionHandlerSlot`` is.
    private struct GoneHandler {
        var call: (@Sendable (DeviceGoneSign) -> Void)?
    }

    /// One call: queued for its submit, in flight, or parked until the session fails.
    private struct Call {
        var endpoint: UInt8
        var timeout: Duration?
        var continuation: Continuation
        var submitted = false
        /// Cancellation asked for before the transfer was submitted.
        var cancelRequested = false
        /// Parked: its transfer found the device gone; ``fail(_:)`` ends it.
        var parked = false
    }

    /// A call's transfer, waiting for its endpoint's submitting thread.
    private struct Submission {
        var id: UInt64
        var bytes: [UInt8]?
        var length: Int
        var timeout: Duration?
    }

    /// One endpoint's transfers and its calls, oldest first.
    private struct Lane {
        let transfers: any EndpointTransfers
        /// Calls not yet ended (queued, in flight or parked), in call order.
        var order: Deque<UInt64> = []
        /// Results that wait for an older call to end first.
        var held: [UInt64: CallResult] = [:]
        /// Transfers to submit, in call order.
        var queued: Deque<Submission> = []
        /// Whether a thread is submitting ``queued``.
        var submitting = false
    }

    private struct State {
        /// The open device; `nil` once released (the session's close drops the last reference).
        var device: (any USBDeviceConnection)?
        var alternate: UInt8
        var lanes: [UInt8: Lane] = [:]
        var calls: [UInt64: Call] = [:]
        /// Calls registered whose transfer has not come back (or was never submitted).
        var outstanding = 0
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
        /// A transfer found the device gone: new calls park until ``fail(_:)``.
        var gone = false
        /// ``beginSwitching()`` holds the calls off.
        var switching = false
        /// Endpoints whose halt is being cleared: calls on them are `.busy`.
        var clearingHalt: Set<UInt8> = []
        var failure: AccessoryError?
        var closed = false
        /// Who counts timeouts for automatic recovery (``setTimeoutWatch(_:)``).
        var timeoutWatch: TimeoutWatch?
    }

    /// What to do once the lock is released.
    private struct Effects {
        var resume: [(Continuation, CallResult)] = []
        var cancel: [(any EndpointTransfers, UInt64)] = []
        var cancelAll: [any EndpointTransfers] = []
        var drains: [CheckedContinuation<Void, Never>] = []
        var gone: DeviceGoneSign?
        /// The endpoint whose queued transfers this thread now submits.
        var submit: UInt8?
        /// A transfer that worked (`nil`) or timed out (its endpoint), for the timeout watch.
        var outcome: (watch: TimeoutWatch, timedOut: UInt8?)?

        func run(_ onGone: Locked<GoneHandler>) {
            for (c, r) in resume { c.resume(returning: r) }
            for (t, tag) in cancel { t.cancel(tag: tag) }
            for t in cancelAll { t.cancelAll() }
            for c in drains { c.resume() }
            if let gone, let report = onGone.withLock({ $0.call }) { report(gone) }
            if let outcome {
                if let endpoint = outcome.timedOut { outcome.watch.timedOut(on: endpoint) } else { outcome.watch.succeeded() }
            }
        }
    }

    /// The calls of a session on `interface` of `device`, in alternate setting `alternate`.
    init(
        device: (any USBDeviceConnection)?, interface: UInt8, alternate: UInt8, settings: [UInt8: [AccessoryEndpoint]],
        sessionDescription: String
    ) {
        self.interfaceNumber = interface
        self.settings = settings
        self.sessionDescription = sessionDescription
        self.state = Locked(State(device: device, alternate: alternate))
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

    /// Whether ``close()`` has begun.
    var isClosed: Bool { state.withLock { $0.closed } }

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
            await withCheckedContinuation { (c: Continuation) in
                let submission = Submission(id: id, bytes: bytes, length: length, timeout: timeout)
                let lane: UInt8? = event { s, fx in
                    if let refusal = streamRefusal() {
                        fx.resume.append((c, .failure(refusal)))
                        return nil
                    }
                    return start(submission, endpoint, c, &s, &fx)
                }
                if let lane { submitQueued(lane) }
            }
        } onCancel: {
            event { s, fx in
                guard let call = s.calls[id] else { return }
                if call.parked {
                    finish(id, .failure(cancelledError(endpoint)), &s, &fx)
                } else if call.submitted, let lane = s.lanes[call.endpoint] {
                    fx.cancel.append((lane.transfers, id))
                } else {
                    s.calls[id]!.cancelRequested = true
                }
            }
        }
    }

    /// Registers a call and queues its transfer, or ends it at once.
    /// - Returns: the endpoint, when this thread is to submit its queued transfers.
    private func start(
        _ submission: Submission, _ endpoint: AccessoryEndpoint, _ c: Continuation, _ s: inout State, _ fx: inout Effects
    ) -> UInt8? {
        let (id, address) = (submission.id, endpoint.address)
        if let refusal = refusal(s) ?? haltRefusal(address, s) {
            fx.resume.append((c, .failure(refusal)))
            return nil
        }
        if s.gone {
            s.calls[id] = Call(endpoint: address, timeout: submission.timeout, continuation: c, parked: true)
            return nil
        }
        if s.lanes[address] == nil {
            switch makeLane(endpoint, on: s.device) {
            case .success(let lane): s.lanes[address] = lane
            case .failure(let error):
                fx.resume.append((c, .failure(error)))
                return nil
            }
        }
        s.calls[id] = Call(endpoint: address, timeout: submission.timeout, continuation: c, cancelRequested: Task.isCancelled)
        s.outstanding += 1
        s.lanes[address]!.order.append(id)
        s.lanes[address]!.queued.append(submission)
        guard !s.lanes[address]!.submitting else { return nil }
        s.lanes[address]!.submitting = true
        return address
    }

    /// Submits the endpoint's queued transfers, oldest first, until none is left: one thread
    /// at a time, so that they reach the device in call order.
    private func submitQueued(_ address: UInt8) {
        while let work = event({ s, fx in nextSubmission(address, &s, &fx) }) {
            let (next, transfers) = work
            let error =
                if let bytes = next.bytes { transfers.submit(bytes[...], timeout: next.timeout, tag: next.id) } else {
                    transfers.submit(length: next.length, timeout: next.timeout, tag: next.id)
                }
            event { s, fx in submitted(next.id, error, transfers, &s, &fx) }
        }
    }

    /// The next queued transfer to submit, ending the calls that must not be submitted.
    private func nextSubmission(_ address: UInt8, _ s: inout State, _ fx: inout Effects) -> (Submission, any EndpointTransfers)? {
        while let next = s.lanes[address]?.queued.popFirst() {
            guard let call = s.calls[next.id] else { continue }
            if let refusal = refusal(s) ?? (call.cancelRequested ? cancelledError(address, s) : nil) {
                s.outstanding -= 1
                finish(next.id, .failure(refusal), &s, &fx)
            } else if s.gone {
                s.outstanding -= 1
                s.calls[next.id]!.parked = true
            } else {
                return (next, s.lanes[address]!.transfers)
            }
        }
        s.lanes[address]?.submitting = false
        settleDrain(&s, &fx)
        return nil
    }

    /// Call `id`'s transfer was submitted, or failed to be (`error`).
    private func submitted(_ id: UInt64, _ error: AccessoryError?, _ transfers: any EndpointTransfers, _ s: inout State, _ fx: inout Effects) {
        if let error {
            s.outstanding -= 1
            if error.code.disconnectReason != nil {
                deviceGone(id, DeviceGoneSign(operation: error.operation ?? transfers.operation), &s, &fx)
            } else {
                finish(id, .failure(error), &s, &fx)
            }
            settleDrain(&s, &fx)
            return
        }
        guard s.calls[id] != nil else { return }  // completed already
        s.calls[id]!.submitted = true
        // A cancel, a close or a failure that came during the submit found nothing to cancel.
        if s.calls[id]!.cancelRequested || s.closed || s.failure != nil { fx.cancel.append((transfers, id)) }
    }

    /// Why a new call cannot start now, if it cannot.
    private func refusal(_ s: State) -> AccessoryError? {
        if s.closed { return closedError() }
        if let failure = s.failure { return failure }
        if s.switching {
            return AccessoryError(.busy, "\(sessionDescription) is selecting an alternate setting", operation: "transfer")
        }
        return nil
    }

    private func haltRefusal(_ address: UInt8, _ s: State) -> AccessoryError? {
        guard s.clearingHalt.contains(address) else { return nil }
        return AccessoryError(
            .busy, "the halt on \(hexByte(address)) of \(sessionDescription) is being cleared; call again once clearHalt has returned",
            operation: "transfer")
    }

    private func makeLane(_ endpoint: AccessoryEndpoint, on device: (any USBDeviceConnection)?) -> Result<Lane, AccessoryError> {
        guard let device else {
            return .failure(AccessoryError(.notFound, "\(sessionDescription) has no device", operation: "\(endpoint)"))
        }
        do {
            let transfers = try device.makeEndpointTransfers(
                endpoint: endpoint.address, type: endpoint.transferType, maxPacketSize: endpoint.maxPacketSize)
            transfers.setCompletionHandler { [weak self] tag, completion in
                self?.completed(tag, completion, operation: transfers.operation, device: transfers.device)
            }
            return .success(Lane(transfers: transfers))
        } catch {
            return .failure(error)
        }
    }

    /// The transfer of call `tag` ended.
    private func completed(_ tag: UInt64, _ c: TransferCompletion, operation: String, device: String) {
        event { s, fx in
            s.outstanding -= 1
            defer { settleDrain(&s, &fx) }
            guard let call = s.calls[tag] else { return }
            switch c.status {
            case .completed:
                if let watch = s.timeoutWatch { fx.outcome = (watch, nil) }
                finish(tag, .success(c.data), &s, &fx)
            case .noDevice, .error:
                // NO_DEVICE, or EPROTO as transfers get on a real unplug: the manager confirms.
                deviceGone(tag, DeviceGoneSign(operation: operation, status: c.status), &s, &fx)
            case _ where s.gone:
                // Cancelled while the manager confirms: it waits for the verdict too.
                deviceGone(tag, DeviceGoneSign(operation: operation, status: c.status), &s, &fx)
            default:
                var error = s.failure ?? (s.closed ? closedError() : c.status.error(
                    operation: operation, device: device, endpoint: call.endpoint, timeout: call.timeout,
                    session: sessionDescription) ?? AccessoryError(.io, "the transfer on \(device) failed", operation: operation))
                if s.failure == nil, !s.closed, c.status == .cancelled || c.status == .timedOut { error.bytesTransferred = c.length }
                if c.status == .timedOut, s.failure == nil, !s.closed, let watch = s.timeoutWatch { fx.outcome = (watch, call.endpoint) }
                finish(tag, .failure(error), &s, &fx)
            }
        }
    }

    /// Ends call `id` with `result`: a failure at once, data once every older call on its
    /// endpoint has ended. Then resumes the held calls that were waiting for it.
    private func finish(_ id: UInt64, _ result: CallResult, _ s: inout State, _ fx: inout Effects) {
        guard let call = s.calls[id] else { return }
        let address = call.endpoint
        if case .success = result, let order = s.lanes[address]?.order, order.first != id, order.contains(id) {
            s.lanes[address]!.held[id] = result
            return
        }
        s.calls[id] = nil
        fx.resume.append((call.continuation, result))
        guard s.lanes[address] != nil else { return }
        s.lanes[address]!.order.removeAll { $0 == id }
        s.lanes[address]!.held[id] = nil
        // Data goes out in call order.
        while let first = s.lanes[address]!.order.first, let ready = s.lanes[address]!.held.removeValue(forKey: first) {
            s.lanes[address]!.order.removeFirst()
            if let c = s.calls.removeValue(forKey: first)?.continuation { fx.resume.append((c, ready)) }
        }
    }

    /// Call `id` found the device (maybe) gone: it waits for ``fail(_:)``, in its place in
    /// call order, and so does every call after it; the session is told once.
    private func deviceGone(_ id: UInt64, _ sign: DeviceGoneSign, _ s: inout State, _ fx: inout Effects) {
        if let failure = s.failure ?? (s.closed ? closedError() : nil) {
            finish(id, .failure(failure), &s, &fx)
            return
        }
        s.calls[id]?.parked = true
        guard !s.gone else { return }
        s.gone = true
        fx.gone = sign
        // What is still in flight would only wait for the verdict.
        fx.cancelAll = s.lanes.values.filter { !$0.order.isEmpty }.map(\.transfers)
    }

    private func cancelledError(_ endpoint: AccessoryEndpoint) -> AccessoryError {
        AccessoryError(.cancelled, "\(endpoint) on \(sessionDescription) was cancelled", operation: "\(endpoint)")
    }

    /// Under the lock: it reads the alternate setting from `s`.
    private func cancelledError(_ address: UInt8, _ s: State) -> AccessoryError {
        let endpoint = settings[s.alternate]?.first { $0.address == address }.map { "\($0)" } ?? hexByte(address)
        return AccessoryError(.cancelled, "\(endpoint) on \(sessionDescription) was cancelled", operation: endpoint)
    }

    private func closedError() -> AccessoryError {
        AccessoryError(.sessionClosed, "\(sessionDescription) is closed", operation: "transfer")
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
            endAll(error, &s, &fx)
        }
    }

    /// Closes: every call ends (`.sessionClosed`, or the failure that came first), transfers
    /// in flight are cancelled, and this returns once all of them are back. Idempotent.
    func close() async {
        event { s, fx in
            guard !s.closed else { return }
            s.closed = true
            endAll(s.failure ?? closedError(), &s, &fx)
        }
        await waitUntilDrained()
    }

    /// Parked calls end now; queued ones when their endpoint's submitting thread reaches
    /// them; those in flight once their cancelled transfers are back.
    private func endAll(_ error: AccessoryError, _ s: inout State, _ fx: inout Effects) {
        for (id, call) in s.calls where call.parked { finish(id, .failure(error), &s, &fx) }
        fx.cancelAll = s.lanes.values.filter { !$0.order.isEmpty }.map(\.transfers)
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

    private func settleDrain(_ s: inout State, _ fx: inout Effects) {
        guard s.outstanding == 0, !s.drainWaiters.isEmpty else { return }
        fx.drains = s.drainWaiters
        s.drainWaiters.removeAll()
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
        state.withLock { s in
            if let refusal = refusal(s) ?? haltRefusal(endpoint, s) { return refusal }
            if !(s.lanes[endpoint]?.order.isEmpty ?? true) {
                return AccessoryError(
                    .busy, "calls are in flight on \(hexByte(endpoint)) of \(sessionDescription); clear the halt once they have ended",
                    operation: "clear halt")
            }
            s.clearingHalt.insert(endpoint)
            return nil
        }
    }

    /// Lets calls on `endpoint` in again.
    func endClearingHalt(_ endpoint: UInt8) {
        state.withLock { _ = $0.clearingHalt.remove(endpoint) }
    }

    // MARK: Alternate settings

    /// Holds new calls off (`.busy`) while an alternate setting is selected.
    /// - Returns: why it cannot be done now: calls in flight (`.busy`), or the session's end.
    func beginSwitching() -> AccessoryError? {
        state.withLock { s in
            if let refusal = refusal(s) { return refusal }
            if let busy = s.lanes.first(where: { !$0.value.order.isEmpty })?.key {
                return AccessoryError(
                    .busy, "calls are in flight on \(hexByte(busy)) of \(sessionDescription); let them end first",
                    operation: "select alternate setting")
            }
            s.switching = true
            return nil
        }
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
    private func event<R>(_ body: (inout State, inout Effects) -> R) -> R {
        state.withLock(Effects(), body) { $0.run(onGone) }
    }
}
