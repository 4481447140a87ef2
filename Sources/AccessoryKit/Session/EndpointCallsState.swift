import AccessoryCore
import DequeModule

/// Everything an ``EndpointCalls``' lock guards: each endpoint's lane (its transfers, its
/// calls in call order, the transfers waiting to be submitted), every call not yet ended,
/// and what holds new calls off (a halt being cleared, an alternate setting being selected,
/// a vanished device, the end). Its methods are the steps an event takes under the lock;
/// what must happen after the lock is released (resuming, cancelling, telling the session)
/// they record in ``Effects``. No lock, clock or I/O in here: a lane's transfers are made
/// by the caller of ``start(_:_:_:_:makeLane:)``.
struct EndpointCallsState {
    typealias Continuation = CheckedContinuation<EndpointCalls.CallResult, Never>

    /// One call: queued for its submit, in flight, or parked until the session fails.
    struct Call {
        var endpoint: UInt8
        var timeout: Duration?
        var continuation: Continuation
        var submitted = false
        /// Cancellation asked for before the transfer was submitted.
        var cancelRequested = false
        /// Parked: its transfer found the device gone; ``EndpointCalls/fail(_:)`` ends it.
        var parked = false
    }

    /// A call's transfer, waiting for its endpoint's submitting thread.
    struct Submission {
        var id: UInt64
        var bytes: [UInt8]?
        var length: Int
        var timeout: Duration?
    }

    /// One endpoint's transfers and its calls, oldest first.
    struct Lane {
        let transfers: any EndpointTransfers
        /// Calls not yet ended (queued, in flight or parked), in call order.
        var order: Deque<UInt64> = []
        /// Results that wait for an older call to end first.
        var held: [UInt64: EndpointCalls.CallResult] = [:]
        /// Transfers to submit, in call order.
        var queued: Deque<Submission> = []
        /// Whether a thread is submitting ``queued``.
        var submitting = false
    }

    /// What to do once the lock is released.
    struct Effects {
        var resume: [(Continuation, EndpointCalls.CallResult)] = []
        var cancel: [(any EndpointTransfers, UInt64)] = []
        var cancelAll: [any EndpointTransfers] = []
        var drains: [CheckedContinuation<Void, Never>] = []
        var gone: DeviceGoneSign?
        /// A transfer that worked (`nil`) or timed out (its endpoint), for the timeout watch.
        var outcome: (watch: TimeoutWatch, timedOut: UInt8?)?
    }

    /// For messages, such as `session 'x'`.
    let sessionDescription: String
    /// Each alternate setting's bulk and interrupt endpoints, for messages.
    let settings: [UInt8: [AccessoryEndpoint]]
    /// The open device; `nil` once released (the session's close drops the last reference).
    var device: (any USBDeviceConnection)?
    var alternate: UInt8
    var lanes: [UInt8: Lane] = [:]
    var calls: [UInt64: Call] = [:]
    /// Calls registered whose transfer has not come back (or was never submitted).
    var outstanding = 0
    var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// A transfer found the device gone: new calls park until ``EndpointCalls/fail(_:)``.
    var gone = false
    /// ``EndpointCalls/beginSwitching()`` holds the calls off.
    var switching = false
    /// Endpoints whose halt is being cleared: calls on them are `.busy`.
    var clearingHalt: Set<UInt8> = []
    var failure: AccessoryError?
    var closed = false
    /// Who counts timeouts for automatic recovery (``EndpointCalls/setTimeoutWatch(_:)``).
    var timeoutWatch: TimeoutWatch?

    init(device: (any USBDeviceConnection)?, alternate: UInt8, settings: [UInt8: [AccessoryEndpoint]], sessionDescription: String) {
        self.device = device
        self.alternate = alternate
        self.settings = settings
        self.sessionDescription = sessionDescription
    }

    // MARK: Calls

    /// Registers a call and queues its transfer, or ends it at once.
    /// - Parameter makeLane: makes the endpoint's lane at its first call.
    /// - Returns: the endpoint, when this thread is to submit its queued transfers.
    mutating func start(
        _ submission: Submission, _ endpoint: AccessoryEndpoint, _ c: Continuation, _ fx: inout Effects,
        makeLane: (AccessoryEndpoint, (any USBDeviceConnection)?) -> Result<Lane, AccessoryError>
    ) -> UInt8? {
        let (id, address) = (submission.id, endpoint.address)
        if let refusal = refusal() ?? haltRefusal(address) {
            fx.resume.append((c, .failure(refusal)))
            return nil
        }
        if gone {
            calls[id] = Call(endpoint: address, timeout: submission.timeout, continuation: c, parked: true)
            return nil
        }
        if lanes[address] == nil {
            switch makeLane(endpoint, device) {
            case .success(let lane): lanes[address] = lane
            case .failure(let error):
                fx.resume.append((c, .failure(error)))
                return nil
            }
        }
        calls[id] = Call(endpoint: address, timeout: submission.timeout, continuation: c, cancelRequested: Task.isCancelled)
        outstanding += 1
        lanes[address]!.order.append(id)
        lanes[address]!.queued.append(submission)
        guard !lanes[address]!.submitting else { return nil }
        lanes[address]!.submitting = true
        return address
    }

    /// The caller of call `id` on `endpoint` was cancelled: a parked call ends, a call in
    /// flight has its transfer cancelled, a queued one is not submitted.
    mutating func cancel(_ id: UInt64, on endpoint: AccessoryEndpoint, _ fx: inout Effects) {
        guard let call = calls[id] else { return }
        if call.parked {
            finish(id, .failure(cancelledError(endpoint)), &fx)
        } else if call.submitted, let lane = lanes[call.endpoint] {
            fx.cancel.append((lane.transfers, id))
        } else {
            calls[id]!.cancelRequested = true
        }
    }

    /// The next queued transfer to submit, ending the calls that must not be submitted.
    mutating func nextSubmission(_ address: UInt8, _ fx: inout Effects) -> (Submission, any EndpointTransfers)? {
        while let next = lanes[address]?.queued.popFirst() {
            guard let call = calls[next.id] else { continue }
            if let refusal = refusal() ?? (call.cancelRequested ? cancelledError(address) : nil) {
                outstanding -= 1
                finish(next.id, .failure(refusal), &fx)
            } else if gone {
                outstanding -= 1
                calls[next.id]!.parked = true
            } else {
                return (next, lanes[address]!.transfers)
            }
        }
        lanes[address]?.submitting = false
        settleDrain(&fx)
        return nil
    }

    /// Call `id`'s transfer was submitted, or failed to be (`error`).
    mutating func submitted(_ id: UInt64, _ error: AccessoryError?, _ transfers: any EndpointTransfers, _ fx: inout Effects) {
        if let error {
            outstanding -= 1
            if error.code.disconnectReason != nil {
                deviceGone(id, DeviceGoneSign(operation: error.operation ?? transfers.operation), &fx)
            } else {
                finish(id, .failure(error), &fx)
            }
            settleDrain(&fx)
            return
        }
        guard calls[id] != nil else { return }  // completed already
        calls[id]!.submitted = true
        // A cancel, a close or a failure that came during the submit found nothing to cancel.
        if calls[id]!.cancelRequested || closed || failure != nil { fx.cancel.append((transfers, id)) }
    }

    /// The transfer of call `tag` ended.
    mutating func completed(_ tag: UInt64, _ c: TransferCompletion, operation: String, device: String, _ fx: inout Effects) {
        outstanding -= 1
        defer { settleDrain(&fx) }
        guard let call = calls[tag] else { return }
        switch c.status {
        case .completed:
            if let watch = timeoutWatch { fx.outcome = (watch, nil) }
            finish(tag, .success(c.data), &fx)
        case .noDevice, .error:
            // NO_DEVICE, or EPROTO as transfers get on a real unplug: the manager confirms.
            deviceGone(tag, DeviceGoneSign(operation: operation, status: c.status), &fx)
        case _ where gone:
            // Cancelled while the manager confirms: it waits for the verdict too.
            deviceGone(tag, DeviceGoneSign(operation: operation, status: c.status), &fx)
        default:
            var error = failure ?? (closed ? closedError() : c.status.error(
                operation: operation, device: device, endpoint: call.endpoint, timeout: call.timeout,
                session: sessionDescription) ?? AccessoryError(.io, "the transfer on \(device) failed", operation: operation))
            if failure == nil, !closed, c.status == .cancelled || c.status == .timedOut { error.bytesTransferred = c.length }
            if c.status == .timedOut, failure == nil, !closed, let watch = timeoutWatch { fx.outcome = (watch, call.endpoint) }
            finish(tag, .failure(error), &fx)
        }
    }

    /// Ends call `id` with `result`: a failure at once, data once every older call on its
    /// endpoint has ended. Then resumes the held calls that were waiting for it.
    mutating func finish(_ id: UInt64, _ result: EndpointCalls.CallResult, _ fx: inout Effects) {
        guard let call = calls[id] else { return }
        let address = call.endpoint
        if case .success = result, let order = lanes[address]?.order, order.first != id, order.contains(id) {
            lanes[address]!.held[id] = result
            return
        }
        calls[id] = nil
        fx.resume.append((call.continuation, result))
        guard lanes[address] != nil else { return }
        lanes[address]!.order.removeAll { $0 == id }
        lanes[address]!.held[id] = nil
        // Data goes out in call order.
        while let first = lanes[address]!.order.first, let ready = lanes[address]!.held.removeValue(forKey: first) {
            lanes[address]!.order.removeFirst()
            if let c = calls.removeValue(forKey: first)?.continuation { fx.resume.append((c, ready)) }
        }
    }

    /// Call `id` found the device (maybe) gone: it waits for ``EndpointCalls/fail(_:)``, in
    /// its place in call order, and so does every call after it; the session is told once.
    mutating func deviceGone(_ id: UInt64, _ sign: DeviceGoneSign, _ fx: inout Effects) {
        if let failure = failure ?? (closed ? closedError() : nil) {
            finish(id, .failure(failure), &fx)
            return
        }
        calls[id]?.parked = true
        guard !gone else { return }
        gone = true
        fx.gone = sign
        // What is still in flight would only wait for the verdict.
        fx.cancelAll = lanes.values.filter { !$0.order.isEmpty }.map(\.transfers)
    }

    // MARK: Refusals

    /// Why a new call cannot start now, if it cannot.
    func refusal() -> AccessoryError? {
        if closed { return closedError() }
        if let failure { return failure }
        if switching {
            return AccessoryError(.busy, "\(sessionDescription) is selecting an alternate setting", operation: "transfer")
        }
        return nil
    }

    /// Why a call on `address` cannot start now: its halt is being cleared.
    func haltRefusal(_ address: UInt8) -> AccessoryError? {
        guard clearingHalt.contains(address) else { return nil }
        return AccessoryError(
            .busy, "the halt on \(hexByte(address)) of \(sessionDescription) is being cleared; call again once clearHalt has returned",
            operation: "transfer")
    }

    /// Holds new calls on `endpoint` off while its halt is cleared.
    /// - Returns: why it cannot be done now: calls in flight on it, a clear already under
    ///   way (`.busy`), or the session's end.
    mutating func beginClearingHalt(_ endpoint: UInt8) -> AccessoryError? {
        if let refusal = refusal() ?? haltRefusal(endpoint) { return refusal }
        if !(lanes[endpoint]?.order.isEmpty ?? true) {
            return AccessoryError(
                .busy, "calls are in flight on \(hexByte(endpoint)) of \(sessionDescription); clear the halt once they have ended",
                operation: "clear halt")
        }
        clearingHalt.insert(endpoint)
        return nil
    }

    /// Holds new calls off while an alternate setting is selected.
    /// - Returns: why it cannot be done now: calls in flight (`.busy`), or the session's end.
    mutating func beginSwitching() -> AccessoryError? {
        if let refusal = refusal() { return refusal }
        if let busy = lanes.first(where: { !$0.value.order.isEmpty })?.key {
            return AccessoryError(
                .busy, "calls are in flight on \(hexByte(busy)) of \(sessionDescription); let them end first",
                operation: "select alternate setting")
        }
        switching = true
        return nil
    }

    // MARK: Ending

    /// Parked calls end now; queued ones when their endpoint's submitting thread reaches
    /// them; those in flight once their cancelled transfers are back.
    mutating func endAll(_ error: AccessoryError, _ fx: inout Effects) {
        for (id, call) in calls where call.parked { finish(id, .failure(error), &fx) }
        fx.cancelAll = lanes.values.filter { !$0.order.isEmpty }.map(\.transfers)
    }

    /// Releases the drain waiters once no call's transfer is outstanding.
    mutating func settleDrain(_ fx: inout Effects) {
        guard outstanding == 0, !drainWaiters.isEmpty else { return }
        fx.drains = drainWaiters
        drainWaiters.removeAll()
    }

    // MARK: Errors

    func cancelledError(_ endpoint: AccessoryEndpoint) -> AccessoryError {
        AccessoryError(.cancelled, "\(endpoint) on \(sessionDescription) was cancelled", operation: "\(endpoint)")
    }

    /// Names the endpoint as the current alternate setting has it.
    func cancelledError(_ address: UInt8) -> AccessoryError {
        let endpoint = settings[alternate]?.first { $0.address == address }.map { "\($0)" } ?? hexByte(address)
        return AccessoryError(.cancelled, "\(endpoint) on \(sessionDescription) was cancelled", operation: endpoint)
    }

    func closedError() -> AccessoryError {
        AccessoryError(.sessionClosed, "\(sessionDescription) is closed", operation: "transfer")
    }
}
