import AccessoryCore
import Synchronization
import AccessoryLocking

/// A session's data plane: an ``InputStateMachine`` over an IN ``EndpointQueue`` and an
/// ``OutputStateMachine`` over an OUT one, with the continuations of the calls waiting on
/// them. See the two machines for the behaviour.
///
/// Locking: one lock guards both machines and the waiting continuations
/// (``DataPlaneState``). An event takes it, asks a machine, and records the machine's
/// actions; after releasing it, the caller resumes continuations and performs queue
/// operations. Queue operations (submits, cancels) run in the order the machines decided
/// them, one thread at a time: the first thread to find work pending performs it, and any
/// pending when it is done, before it lets go. Completions arrive on the queues' event thread.
///
/// **Failure.** A vanished device (NO_DEVICE) stops submitting, and the data plane tells
/// its owner (once), who ends it with ``fail(_:)`` and the reason the manager gives (a
/// hotplug event may be saying `unplugged` at that very moment). Failing ends both
/// directions at once, and the session's one-transfer calls (``EndpointCalls``), which report
/// a vanished device through the same path.
final class DataPlane: Sendable {
    struct Configuration: Sendable {
        var input: InputStateMachine.Configuration
        var output: OutputStateMachine.Configuration
        /// For error messages, such as `session 'x'`.
        var sessionDescription: String

        init(input: InputStateMachine.Configuration, output: OutputStateMachine.Configuration, sessionDescription: String) {
            self.input = input
            self.output = output
            self.sessionDescription = sessionDescription
        }

        /// A session's: IN transfers in the IN endpoint's packets, OUT transfers in the OUT
        /// endpoint's.
        init(options: AccessorySession.Options, inPacketSize: Int, outPacketSize: Int, sessionDescription: String) {
            self.input = InputStateMachine.Configuration(
                maxPacketSize: inPacketSize, transferSize: options.transferSize, transfersInFlight: options.readsInFlight,
                bufferCapacity: options.readBufferCapacity, bufferedItemLimit: options.readBufferItemLimit)
            self.output = OutputStateMachine.Configuration(
                maxPacketSize: outPacketSize, transferSize: options.transferSize, transfersInFlight: options.writesInFlight,
                bufferCapacity: options.writeBufferCapacity, sendsZeroLengthPacket: options.sendsZeroLengthPacket)
            self.sessionDescription = sessionDescription
        }
    }

    /// Counters for tests and diagnostics.
    struct Statistics: Sendable, Hashable {
        var inSubmitted: UInt64 = 0
        var outSubmitted: UInt64 = 0
        var inCompleted: UInt64 = 0
        var outCompleted: UInt64 = 0
        /// Chunks (and errors) waiting to be read.
        var bufferedItems = 0
    }

    typealias ReadResult = Result<[UInt8]?, AccessoryError>
    typealias WriteResult = Result<Void, AccessoryError>
    private typealias Effects = DataPlaneState.Effects

    let inQueue: any EndpointQueue
    let outQueue: any EndpointQueue
    /// The session's one-transfer calls: they end with the streams.
    let calls: EndpointCalls
    let configuration: Configuration
    /// Told once (outside the lock) which operation found the device (maybe) gone; it must
    /// end the data plane with ``fail(_:)`` once it knows whether the device is gone.
    private let onNoDevice: @Sendable (DeviceGoneSign, DataPlane) -> Void
    private let state: Locked<DataPlaneState>

    /// Waits for a timeout: the manager's clock, so that a simulated session's timeouts fall
    /// due in virtual time.
    private let sleep: @Sendable (Duration) async throws -> Void

    init(
        input: any EndpointQueue, output: any EndpointQueue, configuration: Configuration,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        calls: EndpointCalls = EndpointCalls(),
        onNoDevice: @escaping @Sendable (DeviceGoneSign, DataPlane) -> Void
    ) {
        self.sleep = sleep
        self.calls = calls
        precondition(input.capacity >= configuration.input.transfersInFlight && output.capacity >= configuration.output.transfersInFlight)
        self.inQueue = input
        self.outQueue = output
        self.configuration = configuration
        self.onNoDevice = onNoDevice
        self.state = Locked(DataPlaneState(configuration: configuration))
        input.setCompletionHandler { [weak self] completion in self?.inputCompleted(completion) }
        output.setCompletionHandler { [weak self] completion in self?.outputCompleted(completion) }
        // A transfer is awaited while a read (or a write or flush) waits on the stream.
        input.setAwaitedCheck { [weak self] in self?.state.withLock { !$0.readers.isEmpty } ?? false }
        output.setAwaitedCheck { [weak self] in self?.state.withLock { !$0.writers.isEmpty } ?? false }
        calls.setDeviceGoneHandler { [weak self] sign in self?.reportDeviceGone(sign) }
    }

    var statistics: Statistics {
        state.withLock { s in
            Statistics(
                inSubmitted: s.input.submitted, outSubmitted: s.output.submitted, inCompleted: s.input.completed,
                outCompleted: s.output.completed, bufferedItems: s.input.bufferedItems)
        }
    }

    /// The failure the data plane ended with, if any.
    var failure: AccessoryError? { state.withLock { $0.failure } }

    /// How many reads are suspended waiting for data (tests wait on it before acting on a
    /// pending read).
    var waitingReads: Int { state.withLock { $0.readers.count } }

    /// Whether the input has IN transfers in flight or a read waiting: a one-transfer call on
    /// its endpoint would race it for the data.
    var isReading: Bool { state.withLock { $0.input.inFlight > 0 || !$0.readers.isEmpty } }

    /// Whether the output has bytes queued or in flight, or a write waiting: a one-transfer
    /// call on its endpoint would cut into them.
    var isWriting: Bool {
        state.withLock { $0.output.inFlight > 0 || $0.output.queuedBytes > 0 || !$0.writers.isEmpty }
    }

    // MARK: Input

    /// Starts the IN transfers, so data is buffered before anyone reads.
    func startInput() {
        event { s, fx in s.absorb(s.input.start(), &fx) }
    }

    /// The next chunk (or with `exactly`, that many bytes): `nil` once closed.
    ///
    /// - Parameter timeout: how long to wait; `nil` waits forever.
    /// - Returns: `.cancelled` when the task is cancelled, `.timeout` when nothing arrived
    ///   in time (either way after the IN transfers have been stopped; their data stays
    ///   buffered), `.busy` when another task is already reading or a one-transfer call is
    ///   in flight on the IN endpoint.
    func read(exactly: Int? = nil, timeout: Duration?) async -> ReadResult {
        // Begun while no call uses the endpoint, or not at all.
        let begun = calls.unlessCalls(on: inQueue.endpoint) { event { s, fx -> (UInt64, ReadResult?) in
            let id = s.newID()
            var actions = s.input.read(id, exactly: exactly)
            // Data at once (the common case): no continuation, no table entry.
            var mine: ReadResult?
            if let r = actions.resumption, r.id == id {
                mine = r.result
                actions.resumption = nil
            }
            s.absorb(actions, &fx)
            return (id, mine)
        } }
        guard let (id, immediate) = begun else {
            return .failure(AccessoryError(
                .busy, "transferIn calls are in flight on \(inQueue.operation) of \(configuration.sessionDescription); read once they have ended",
                operation: "read"))
        }
        if let immediate { return decorated(immediate) }
        let timer = timeout.map { limit in
            Task { [weak self] in
                // A clock that cannot move (a simulation nobody advances) ends the read with its error.
                let stalled = await self?.sleepOrStall(limit)
                guard !Task.isCancelled, let self else { return }
                self.abortRead(id, stalled ?? AccessoryError(
                    .timeout, "no data from \(self.configuration.sessionDescription) within \(limit)", operation: self.inQueue.operation))
            }
        }
        defer { timer?.cancel() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: DataPlaneState.ReadContinuation) in
                if let ready = state.withLock({ $0.awaitRead(id, c) }) { c.resume(returning: ready) }
            }
        } onCancel: {
            abortRead(id, cancelledError("read"))
        }
        return decorated(result)
    }

    /// Sleeps for a timeout; returns the error of a clock that cannot move, if it says so.
    private func sleepOrStall(_ limit: Duration) async -> AccessoryError? {
        do {
            try await sleep(limit)
        } catch let stalled as AccessoryError {
            return stalled
        } catch {}
        return nil
    }

    private func abortRead(_ id: UInt64, _ error: AccessoryError) {
        event { s, fx in s.absorb(s.input.abort(id, error), &fx) }
    }

    private func decorated(_ result: ReadResult) -> ReadResult {
        guard case .failure(var error) = result, error.code == .busy else { return result }
        error.message = "another task is already reading from \(configuration.sessionDescription)"
        return .failure(error)
    }

    private func inputCompleted(_ c: TransferCompletion) {
        event { s, fx in
            s.absorb(
                s.input.completed(
                    c.status, data: c.data, operation: inQueue.operation, device: inQueue.device, endpoint: inQueue.endpoint),
                &fx)
        }
    }

    // MARK: Output

    /// Queues `bytes` and returns once all of them are queued (see ``OutputStateMachine``).
    ///
    /// - Parameter timeout: how long to wait for room; `nil` waits forever.
    /// - Returns: an earlier failure not yet reported, `.timeout` or `.cancelled` when the
    ///   call had to wait and ran out of time or was cancelled (the output is then stopped,
    ///   with `bytesTransferred`).
    func write(_ bytes: ArraySlice<UInt8>, timeout: Duration?) async -> WriteResult {
        let busy = AccessoryError(
            .busy, "transferOut calls are in flight on \(outQueue.operation) of \(configuration.sessionDescription); write once they have ended",
            operation: "write")
        return await wait(timeout: timeout, operation: "write", unlessCallsOn: outQueue.endpoint, busy: busy) { id, s in
            s.output.write(id, bytes)
        }
    }

    /// Waits until everything queued has been sent, or throws what stopped it.
    func flush(timeout: Duration?) async -> WriteResult {
        await wait(timeout: timeout, operation: "flush") { id, s in s.output.flush(id) }
    }

    /// - Parameter endpoint: with `busy`: the call begins only while no one-transfer call
    ///   uses that endpoint, and is `busy` otherwise.
    private func wait(
        timeout: Duration?, operation: String, unlessCallsOn endpoint: UInt8? = nil, busy: AccessoryError? = nil,
        _ body: (UInt64, inout DataPlaneState) -> OutputStateMachine.Actions
    ) async -> WriteResult {
        func begin() -> (UInt64, WriteResult?) {
            event { s, fx -> (UInt64, WriteResult?) in
                let id = s.newID()
                var actions = body(id, &s)
                // Done at once (the common case): no continuation, no table entry.
                let mine = actions.resumptions.firstIndex { $0.id == id }.map { actions.resumptions.remove(at: $0).result }
                s.absorb(actions, &fx)
                return (id, mine)
            }
        }
        let begun = if let endpoint { calls.unlessCalls(on: endpoint, begin) } else { begin() }
        guard let (id, immediate) = begun else { return .failure(busy ?? closedError(operation)) }
        if let immediate { return immediate }
        let timer = timeout.map { limit in
            Task { [weak self] in
                let stalled = await self?.sleepOrStall(limit)
                guard !Task.isCancelled, let self else { return }
                self.abortWrite(id, stalled ?? AccessoryError(
                    .timeout, "\(self.configuration.sessionDescription): the accessory did not take the data within \(limit)",
                    operation: self.outQueue.operation))
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: DataPlaneState.WriteContinuation) in
                if let ready = state.withLock({ $0.awaitWrite(id, c) }) { c.resume(returning: ready) }
            }
        } onCancel: {
            abortWrite(id, cancelledError(operation))
        }
    }

    private func abortWrite(_ id: UInt64, _ error: AccessoryError) {
        event { s, fx in s.absorb(s.output.abort(id, error), &fx) }
    }

    private func outputCompleted(_ c: TransferCompletion) {
        event { s, fx in
            s.absorb(
                s.output.completed(
                    c.status, length: c.length, operation: outQueue.operation, device: outQueue.device, endpoint: outQueue.endpoint),
                &fx)
        }
    }

    // MARK: Stall recovery

    /// Stops the input, pauses the output and waits until no transfer is in flight, so the
    /// endpoints can be cleared. Call ``endClearingStall()`` afterwards in every case.
    func beginClearingStall() async -> Result<Void, AccessoryError> {
        let failure: AccessoryError? = event { s, fx in
            if let error = s.closed ? closedError("clear stall") : s.failure { return error }
            s.output.pause()
            s.absorb(s.input.beginClearingStall(), &fx)
            return nil
        }
        if let failure { return .failure(failure) }
        await waitUntilDrained()
        return .success(())
    }

    /// Drops the stall errors, starts the input and the output again.
    func endClearingStall() {
        event { s, fx in
            s.absorb(s.input.endClearingStall(), &fx)
            s.absorb(s.output.resume(), &fx)
        }
    }

    // MARK: Ending

    /// Ends both directions with `error` (a disconnection): the waiting read and writes get
    /// it at once, transfers in flight are cancelled, and every later call gets it (the
    /// input first delivers what it had buffered). The first failure wins; nothing happens
    /// after ``close()``.
    func fail(_ error: AccessoryError) {
        event { s, fx in
            guard s.failure == nil, !s.closed else { return }
            s.failure = error
            s.absorb(s.input.fail(error), &fx)
            s.absorb(s.output.finish(error), &fx)
            fx.verdicts += s.verdictWaiters.map { ($0, error) }
            s.verdictWaiters.removeAll()
        }
        calls.fail(error)
    }

    /// A one-transfer call found the device (maybe) gone: the owner is told, once per
    /// session, as for the streams' own transfers.
    private func reportDeviceGone(_ sign: DeviceGoneSign) {
        event { s, fx in s.gone(sign, &fx) }
    }

    /// A call on the device (clear halt, SET_INTERFACE) found it (maybe) gone: the owner is
    /// told, as for a transfer, and this returns the verdict it ends the data plane with
    /// (``fail(_:)``), or `.sessionClosed` when the data plane closes first.
    func deviceGone(_ sign: DeviceGoneSign) async -> AccessoryError {
        await withCheckedContinuation { (c: CheckedContinuation<AccessoryError, Never>) in
            event { s, fx in
                if let ended = s.failure ?? (s.closed ? closedError(sign.operation) : nil) {
                    fx.verdicts.append((c, ended))
                    return
                }
                s.verdictWaiters.append(c)
                s.gone(sign, &fx)
            }
        }
    }

    /// Closes: a waiting read returns `nil`, waiting writes and flushes throw
    /// `.sessionClosed`, queued output is dropped, every transfer in flight is cancelled,
    /// and this returns once all of them have completed. Idempotent.
    func close() async {
        event { s, fx in
            guard !s.closed else { return }
            s.closed = true
            fx.verdicts += s.verdictWaiters.map { ($0, s.failure ?? closedError("close")) }
            s.verdictWaiters.removeAll()
            s.absorb(s.input.close(), &fx)
            s.absorb(s.output.finish(closedError("write"), replacing: true), &fx)
        }
        await calls.close()
        await waitUntilDrained()
    }

    /// Frees both queues and the one-transfer calls' transfers. Call it once closed and drained.
    func releaseTransfers() {
        inQueue.close()
        outQueue.close()
        calls.release()
    }

    /// Waits until no transfer is in flight in either direction.
    func waitUntilDrained() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if s.isDrained { return true }
                s.drainWaiters.append(c)
                return false
            }
            if ready { c.resume() }
        }
    }

    // MARK: Events and effects

    /// Runs `body` under the lock, then does what it recorded.
    @discardableResult
    private func event<R>(_ body: (inout DataPlaneState, inout Effects) -> R) -> R {
        state.withLock(Effects(), { s, fx in
            let r = body(&s, &fx)
            s.finalize(&fx)
            return r
        }, then: run)
    }

    private func run(_ fx: Effects) {
        for (c, result) in fx.reads { c.resume(returning: result) }
        for (c, result) in fx.writes { c.resume(returning: result) }
        for c in fx.drains { c.resume() }
        for (c, verdict) in fx.verdicts { c.resume(returning: verdict) }
        if fx.perform { perform() }
        if let sign = fx.gone { onNoDevice(sign, self) }
    }

    /// Performs pending queue operations in order until none is left.
    private func perform() {
        while true {
            let (next, drains) = state.withLock { $0.nextWork() }
            guard let work = next else {
                for c in drains { c.resume() }
                return
            }
            switch work {
            case .submitIn(let count):
                for i in 0..<count {
                    guard let error = inQueue.submit(length: configuration.input.transferLength) else { continue }
                    event { s, fx in s.inputSubmitFailed(count: count - i, error, &fx) }
                    break
                }
            case .submitOut(let bytes):
                if let error = outQueue.submit(bytes) {
                    event { s, fx in s.outputSubmitFailed(error, &fx) }
                }
            case .cancelIn:
                inQueue.cancelAll()
            case .cancelOut:
                outQueue.cancelAll()
            }
        }
    }

    private func closedError(_ operation: String) -> AccessoryError {
        AccessoryError(.sessionClosed, "\(configuration.sessionDescription) is closed", operation: operation)
    }

    private func cancelledError(_ operation: String) -> AccessoryError {
        AccessoryError(.cancelled, "\(operation) on \(configuration.sessionDescription) was cancelled", operation: operation)
    }
}
