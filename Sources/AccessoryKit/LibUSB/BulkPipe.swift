import AccessoryCore
import Synchronization

/// The data plane of a session: one bulk IN and one bulk OUT endpoint, each with a fixed set
/// of ``LibUSBTransfer``s, in the manner of nusb's per-endpoint transfer queues.
///
/// **Input.** Up to `inTransfers` IN transfers are in flight. Each completion is copied into
/// a bounded queue of chunks, in submission order (checked by sequence number), and the
/// transfer is resubmitted at once, from the event thread, while fewer than
/// `bufferCapacity` bytes wait to be read. When the queue is full, completed transfers stay
/// idle until the reader drains it: that is the back-pressure. A read that times out or is
/// cancelled, and an endpoint error (stall, overflow, I/O), *stops* the input: every IN
/// transfer in flight is cancelled, any bytes they got are queued in order, and only then
/// does the read throw (or the error take its place in the queue). The next read starts the
/// transfers again. Nothing is lost or reordered.
///
/// **Output.** A write copies its bytes into up to `outTransfers` OUT transfers of
/// `transferSize` bytes; each completion refills and resubmits its transfer from the event
/// thread, so a write suspends once. A zero-length packet follows when asked for. Writes
/// take turns (first come, first served), so two writes never interleave.
///
/// **Failure.** A vanished device (NO_DEVICE) stops the pipe: no transfer is submitted
/// again, and the pipe tells its owner, who ends it with ``fail(_:)`` and the reason the
/// manager gives (a hotplug event may be saying `unplugged` at that very moment). Failing
/// ends both directions at once: the waiting read and write are resumed with the error
/// without waiting for their transfers, and every later operation throws it.
///
/// Locking: one `Mutex` guards all state. Completions arrive on the libusb event thread and
/// take it; submits and cancels happen while holding it (neither waits for the event thread,
/// so this cannot deadlock), and continuations are resumed after it is released.
final class BulkPipe: TransferCompletionHandler {
    struct Configuration: Sendable {
        var inEndpoint: UInt8
        var outEndpoint: UInt8
        var maxPacketSize: Int
        var inTransfers: Int
        var outTransfers: Int
        var transferSize: Int
        var bufferCapacity: Int
        var sendsZeroLengthPacket: Bool
        var writeTimeout: Duration?
        /// For error messages, such as `session 'x'`.
        var sessionDescription: String
    }

    /// Counters for tests and diagnostics.
    struct Statistics: Sendable, Hashable {
        var inSubmitted: UInt64 = 0
        var outSubmitted: UInt64 = 0
        /// Completions handed on, in submission order: the next one's sequence number.
        var inCompleted: UInt64 = 0
        var outCompleted: UInt64 = 0
        /// Completions that arrived before an older transfer's on the same endpoint.
        var reorderedCompletions = 0
    }

    typealias ReadResult = Result<[UInt8]?, AccessoryError>
    typealias ReadContinuation = CheckedContinuation<ReadResult, Never>
    typealias VoidContinuation = CheckedContinuation<Result<Void, AccessoryError>, Never>

    let configuration: Configuration
    /// The IN transfer size: `transferSize` rounded up to whole packets, so a device that
    /// sends full packets can never overflow a transfer.
    let inTransferSize: Int
    /// Told once (outside the lock) which operation found the device gone; it must end the
    /// pipe with ``fail(_:)``.
    private let onNoDevice: @Sendable (String, BulkPipe) -> Void
    private let state = Mutex(State())

    init(
        device: LibUSBDeviceHandle, configuration: Configuration,
        onNoDevice: @escaping @Sendable (String, BulkPipe) -> Void
    ) throws(AccessoryError) {
        precondition(configuration.inTransfers > 0 && configuration.outTransfers > 0 && configuration.transferSize > 0)
        let packet = max(configuration.maxPacketSize, 1)
        self.configuration = configuration
        self.inTransferSize = (configuration.transferSize + packet - 1) / packet * packet
        self.onNoDevice = onNoDevice
        var ins: [LibUSBTransfer] = []
        var outs: [LibUSBTransfer] = []
        for _ in 0..<configuration.inTransfers {
            ins.append(try LibUSBTransfer(device: device, endpoint: configuration.inEndpoint, capacity: inTransferSize, handler: self))
        }
        for _ in 0..<configuration.outTransfers {
            outs.append(try LibUSBTransfer(device: device, endpoint: configuration.outEndpoint, capacity: configuration.transferSize, handler: self))
        }
        state.withLock { s in
            s.inIdle = ins
            s.outIdle = outs
        }
    }

    var statistics: Statistics { state.withLock { $0.statistics } }

    // MARK: Input

    /// Starts the IN transfers, so data is buffered before anyone reads.
    func startInput() {
        var r = Resumptions()
        state.withLock { s in
            guard !s.inArmed, s.inFlight.isEmpty, !s.closed, s.failure == nil else { return }
            s.inArmed = true
            fillIn(&s, &r)
            settle(&s, &r)
        }
        finish(r)
    }

    /// The next chunk: the data of one IN transfer, in order. An empty chunk is a
    /// zero-length packet. `nil` once the pipe is closed.
    ///
    /// - Parameter timeout: how long to wait for data; `nil` waits forever.
    /// - Returns: `.cancelled` when the task is cancelled, `.timeout` when nothing arrived in
    ///   time (either way after the IN transfers have been stopped; their data stays queued),
    ///   `.busy` when another task is already reading.
    func read(timeout: Duration?) async -> ReadResult {
        var r = Resumptions()
        let start: (ReadResult?, UInt64) = state.withLock { s in
            s.tokens &+= 1
            let result = startRead(&s, &r)
            settle(&s, &r)
            return (result, s.tokens)
        }
        finish(r)
        if let result = start.0 { return result }
        let token = start.1
        let timer = timeout.map { limit in
            Task { [weak self] in
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled, let self else { return }
                self.abortRead(token, AccessoryError(
                    .timeout, "no data from \(self.configuration.sessionDescription) within \(limit)",
                    operation: "bulk IN \(hexByte(self.configuration.inEndpoint))"))
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: ReadContinuation) in
                var r = Resumptions()
                state.withLock { s in
                    if let result = startRead(&s, &r) {
                        r.read = (c, result)
                    } else {
                        s.reader = Reader(token: token, continuation: c)
                        if Task.isCancelled {
                            s.reader?.outcome = cancelledError("read")
                            stopIn(&s)
                        }
                    }
                    settle(&s, &r)
                }
                finish(r)
            }
        } onCancel: {
            abortRead(token, cancelledError("read"))
        }
    }

    /// What a read gets at once, or `nil` when it has to wait.
    private func startRead(_ s: inout State, _ r: inout Resumptions) -> ReadResult? {
        if s.closed { return .success(nil) }
        if let item = popItem(&s, &r) { return item }
        if s.reader != nil {
            return .failure(AccessoryError(.busy, "another task is already reading from \(configuration.sessionDescription)", operation: "read"))
        }
        // After a failure, wait for the cancelled IN transfers: their data comes first.
        if let failure = s.failure { return s.inFlight.isEmpty ? .failure(failure) : nil }
        if !s.inArmed, s.inFlight.isEmpty, !s.clearingStall, s.gone == nil {
            // Stopped by an earlier timeout, cancellation or error: start again.
            s.inArmed = true
            fillIn(&s, &r)
            settleInStop(&s)
            if let item = popItem(&s, &r) { return item }
            if let failure = s.failure { return .failure(failure) }
        }
        return nil
    }

    private func abortRead(_ token: UInt64, _ error: AccessoryError) {
        var r = Resumptions()
        state.withLock { s in
            guard let reader = s.reader, reader.token == token, reader.outcome == nil else { return }
            s.reader?.outcome = error
            stopIn(&s)
            settle(&s, &r)
        }
        finish(r)
    }

    private func fillIn(_ s: inout State, _ r: inout Resumptions) {
        guard s.inArmed, s.failure == nil, s.gone == nil, !s.closed else { return }
        while s.buffered < configuration.bufferCapacity, let t = s.inIdle.popLast() {
            if let error = t.submit(length: inTransferSize, timeout: nil) {
                s.inIdle.append(t)
                inFailed(error, &s, &r)
                return
            }
            t.sequence = s.statistics.inSubmitted
            s.statistics.inSubmitted &+= 1
            s.inFlight.append(t)
        }
    }

    /// Stops the input: no resubmits; every IN transfer in flight is cancelled.
    private func stopIn(_ s: inout State) {
        s.inArmed = false
        for t in s.inFlight { t.cancel() }
    }

    /// An IN transfer failed or could not be submitted.
    private func inFailed(_ error: AccessoryError, _ s: inout State, _ r: inout Resumptions) {
        if case .accessoryDisconnected = error.code {
            deviceGone(error.operation, &s, &r)
            return
        }
        if s.inStopError == nil { s.inStopError = error }
        stopIn(&s)
    }

    /// Once a stopped input has drained, its error takes its place in the queue.
    private func settleInStop(_ s: inout State) {
        guard !s.inArmed, s.inFlight.isEmpty, let error = s.inStopError else { return }
        s.inStopError = nil
        if !s.closed, s.failure == nil { s.items.append(.error(error)) }
    }

    private func popItem(_ s: inout State, _ r: inout Resumptions) -> ReadResult? {
        guard let item = s.items.popFirst() else { return nil }
        switch item {
        case .data(let bytes):
            s.buffered -= bytes.count
            fillIn(&s, &r)
            return .success(bytes)
        case .error(let error):
            return .failure(error)
        }
    }

    private func inTransferCompleted(_ t: LibUSBTransfer, status: TransferStatus, length: Int) {
        // The transfer is not in flight and nobody else touches its buffer until it is
        // resubmitted under the lock, so the copy can happen before taking it.
        let bytes = t.copyBytes(length)
        var r = Resumptions()
        state.withLock { s in
            t.pending = (status, length, bytes)
            if s.inFlight.first !== t { s.statistics.reorderedCompletions += 1 }
            while let head = s.inFlight.first, let done = head.pending {
                s.inFlight.removeFirst()
                head.pending = nil
                assert(head.sequence == s.statistics.inCompleted, "IN completion out of submission order")
                s.statistics.inCompleted &+= 1
                s.inIdle.append(head)
                guard !s.closed else { continue }
                guard s.failure == nil else {
                    // The device sent this before it went away: the reader still gets it.
                    if !done.bytes.isEmpty {
                        s.items.append(.data(done.bytes))
                        s.buffered += done.bytes.count
                    }
                    continue
                }
                if !done.bytes.isEmpty || done.status == .completed {
                    // A completed zero-length transfer is a zero-length packet: queue it too.
                    s.items.append(.data(done.bytes))
                    s.buffered += done.bytes.count
                }
                switch done.status {
                case .completed, .cancelled, .timedOut:
                    break
                default:
                    if let error = done.status.error(operation: head.operation, device: head.device.node, timeout: nil) {
                        inFailed(error, &s, &r)
                    }
                }
            }
            fillIn(&s, &r)
            settle(&s, &r)
        }
        finish(r)
    }

    // MARK: Output

    /// Sends `bytes` and returns once the device has accepted all of them. An empty write
    /// sends a zero-length packet; so does a write of a nonzero multiple of the packet size
    /// when `sendsZeroLengthPacket` is set.
    ///
    /// - Returns: `.cancelled` when the task is cancelled (after the OUT transfers in flight
    ///   have been cancelled and have completed: part of the data may have been sent).
    func write(_ bytes: [UInt8]) async -> Result<Void, AccessoryError> {
        let token = state.withLock { s in
            s.tokens &+= 1
            return s.tokens
        }
        if case .failure(let error) = await acquireTurn(token) { return .failure(error) }
        defer { releaseTurn() }
        let zeroLengthPacket = bytes.isEmpty
            || (configuration.sendsZeroLengthPacket && bytes.count % max(configuration.maxPacketSize, 1) == 0)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: VoidContinuation) in
                var r = Resumptions()
                state.withLock { s in
                    if let error = s.closed ? closedError("write") : s.failure {
                        r.voids.append((c, .failure(error)))
                        return
                    }
                    if Task.isCancelled {
                        r.voids.append((c, .failure(cancelledError("write"))))
                        return
                    }
                    s.write = WriteOperation(token: token, source: bytes, zeroLengthPending: zeroLengthPacket, continuation: c)
                    fillOut(&s, &r)
                    settle(&s, &r)
                }
                finish(r)
            }
        } onCancel: {
            abortWrite(token, cancelledError("write"))
        }
    }

    private func abortWrite(_ token: UInt64, _ error: AccessoryError) {
        var r = Resumptions()
        state.withLock { s in
            guard let op = s.write, op.token == token, op.error == nil else { return }
            s.write?.error = error
            for t in s.outFlight { t.cancel() }
            settle(&s, &r)
        }
        finish(r)
    }

    private func fillOut(_ s: inout State, _ r: inout Resumptions) {
        guard var op = s.write, op.error == nil, s.failure == nil, s.gone == nil, !s.closed else { return }
        var failure: AccessoryError?
        while !op.isFinished, let t = s.outIdle.last {
            let n = min(configuration.transferSize, op.source.count - op.offset)
            if n > 0 {
                let offset = op.offset
                op.source.withUnsafeBytes { source in
                    t.buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: n)
                }
            }
            if let error = t.submit(length: n, timeout: configuration.writeTimeout) {
                failure = error
                break
            }
            s.outIdle.removeLast()
            t.requestedLength = n
            t.sequence = s.statistics.outSubmitted
            s.statistics.outSubmitted &+= 1
            s.outFlight.append(t)
            op.offset += n
            if n == 0 { op.zeroLengthPending = false }
        }
        s.write = op
        if let failure { outFailed(failure, &s, &r) }
    }

    private func outFailed(_ error: AccessoryError, _ s: inout State, _ r: inout Resumptions) {
        if case .accessoryDisconnected = error.code {
            deviceGone(error.operation, &s, &r)
            return
        }
        if s.write != nil, s.write?.error == nil { s.write?.error = error }
        for t in s.outFlight { t.cancel() }
    }

    private func outTransferCompleted(_ t: LibUSBTransfer, status: TransferStatus, length: Int) {
        var r = Resumptions()
        state.withLock { s in
            t.pending = (status, length, [])
            if s.outFlight.first !== t { s.statistics.reorderedCompletions += 1 }
            while let head = s.outFlight.first, let done = head.pending {
                s.outFlight.removeFirst()
                head.pending = nil
                assert(head.sequence == s.statistics.outCompleted, "OUT completion out of submission order")
                s.statistics.outCompleted &+= 1
                s.outIdle.append(head)
                guard s.write != nil else { continue }
                if done.status == .completed && done.length == head.requestedLength { continue }
                let error = done.status.error(operation: head.operation, device: head.device.node, timeout: configuration.writeTimeout)
                    ?? AccessoryError(.io, "\(head.operation) sent \(done.length) of \(head.requestedLength) bytes", operation: head.operation)
                outFailed(error, &s, &r)
            }
            fillOut(&s, &r)
            settle(&s, &r)
        }
        finish(r)
    }

    // MARK: Turns

    private func acquireTurn(_ token: UInt64) async -> Result<Void, AccessoryError> {
        let immediate: Result<Void, AccessoryError>? = state.withLock { s in
            if let error = s.closed ? closedError("write") : s.failure { return .failure(error) }
            guard s.turnHeld else {
                s.turnHeld = true
                return .success(())
            }
            return nil
        }
        if let immediate { return immediate }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: VoidContinuation) in
                let now: Result<Void, AccessoryError>? = state.withLock { s in
                    if let error = s.closed ? closedError("write") : s.failure { return .failure(error) }
                    guard s.turnHeld else {
                        s.turnHeld = true
                        return .success(())
                    }
                    if Task.isCancelled { return .failure(cancelledError("write")) }
                    s.turnWaiters.append((token, c))
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            let waiter: VoidContinuation? = state.withLock { s in
                guard let i = s.turnWaiters.firstIndex(where: { $0.token == token }) else { return nil }
                return s.turnWaiters.remove(at: i).continuation
            }
            waiter?.resume(returning: .failure(cancelledError("write")))
        }
    }

    private func releaseTurn() {
        let next: VoidContinuation? = state.withLock { s in
            guard !s.turnWaiters.isEmpty else {
                s.turnHeld = false
                return nil
            }
            return s.turnWaiters.removeFirst().continuation
        }
        next?.resume(returning: .success(()))
    }

    // MARK: Stall recovery

    /// Takes the write turn, stops the input and waits until no transfer is in flight, so the
    /// endpoints can be cleared. Call ``endClearingStall()`` afterwards in every case.
    func beginClearingStall() async -> Result<Void, AccessoryError> {
        let token = state.withLock { s in
            s.tokens &+= 1
            return s.tokens
        }
        if case .failure(let error) = await acquireTurn(token) { return .failure(error) }
        var r = Resumptions()
        state.withLock { s in
            s.clearingStall = true
            s.inStopError = nil
            stopIn(&s)
            settle(&s, &r)
        }
        finish(r)
        await waitUntilDrained()
        return .success(())
    }

    /// Drops queued stall errors, starts the input again and gives back the write turn.
    func endClearingStall() {
        var r = Resumptions()
        state.withLock { s in
            s.clearingStall = false
            s.items.removeErrors { $0.code == .stall }
            if !s.inArmed, s.inFlight.isEmpty {
                s.inArmed = true
                fillIn(&s, &r)
            }
            settle(&s, &r)
        }
        finish(r)
        releaseTurn()
    }

    // MARK: Ending

    /// Ends both directions with `error` (a disconnection): the waiting read and write get it
    /// at once, transfers in flight are cancelled, and every later operation throws it.
    /// The first failure wins; nothing happens after ``close()``.
    func fail(_ error: AccessoryError) {
        var r = Resumptions()
        state.withLock { s in
            fail(error, &s, &r)
            settle(&s, &r)
        }
        finish(r)
    }

    private func fail(_ error: AccessoryError, _ s: inout State, _ r: inout Resumptions) {
        guard s.failure == nil, !s.closed else { return }
        s.failure = error
        s.inArmed = false
        for t in s.inFlight { t.cancel() }
        for t in s.outFlight { t.cancel() }
        if s.write != nil, s.write?.error == nil { s.write?.error = error }
        for waiter in s.turnWaiters { r.voids.append((waiter.continuation, .failure(error))) }
        s.turnWaiters.removeAll()
    }

    /// A transfer found the device gone: stop submitting, cancel what is in flight, and tell
    /// the owner (once), who fails the pipe with the manager's reason. The waiting read and
    /// write wait for that; data already buffered is still read first.
    private func deviceGone(_ operation: String?, _ s: inout State, _ r: inout Resumptions) {
        guard s.failure == nil, !s.closed, s.gone == nil else { return }
        let operation = operation ?? "transfer"
        s.gone = operation
        r.noDevice = operation
        s.inArmed = false
        for t in s.inFlight { t.cancel() }
        for t in s.outFlight { t.cancel() }
    }

    /// The failure the pipe ended with, if any.
    var failure: AccessoryError? { state.withLock { $0.failure } }

    /// Closes the pipe: a waiting read returns `nil`, a write in progress and waiting writes
    /// throw `.sessionClosed`, every transfer in flight is cancelled, and this returns once
    /// all of them have completed. Idempotent.
    func close() async {
        var r = Resumptions()
        state.withLock { s in
            guard !s.closed else { return }
            s.closed = true
            s.inArmed = false
            s.inStopError = nil
            for t in s.inFlight { t.cancel() }
            for t in s.outFlight { t.cancel() }
            s.items.removeAll()
            s.buffered = 0
            if s.write != nil, s.write?.error == nil { s.write?.error = closedError("write") }
            for waiter in s.turnWaiters { r.voids.append((waiter.continuation, .failure(closedError("write")))) }
            s.turnWaiters.removeAll()
            settle(&s, &r)
        }
        finish(r)
        await waitUntilDrained()
    }

    /// Frees every transfer. Call it once closed and drained; the pipe is useless afterwards.
    func releaseTransfers() {
        state.withLock { s in
            precondition(s.closed && s.inFlight.isEmpty && s.outFlight.isEmpty, "transfers released while in flight")
            s.inIdle.removeAll()
            s.outIdle.removeAll()
        }
    }

    /// Waits until no transfer is in flight in either direction.
    func waitUntilDrained() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if s.inFlight.isEmpty && s.outFlight.isEmpty { return true }
                s.drainWaiters.append(c)
                return false
            }
            if ready { c.resume() }
        }
    }

    // MARK: Completions

    func transferCompleted(_ transfer: LibUSBTransfer, status: TransferStatus, length: Int) {
        if transfer.endpoint & 0x80 != 0 {
            inTransferCompleted(transfer, status: status, length: length)
        } else {
            outTransferCompleted(transfer, status: status, length: length)
        }
    }

    // MARK: Settling

    /// Resolves whatever the last change made ready: the reader, the write, drain waiters.
    private func settle(_ s: inout State, _ r: inout Resumptions) {
        settleInStop(&s)
        settleReader(&s, &r)
        settleWrite(&s, &r)
        if s.inFlight.isEmpty && s.outFlight.isEmpty && !s.drainWaiters.isEmpty {
            r.drains.append(contentsOf: s.drainWaiters)
            s.drainWaiters.removeAll()
        }
    }

    private func settleReader(_ s: inout State, _ r: inout Resumptions) {
        guard let reader = s.reader, r.read == nil else { return }
        if let failure = s.failure {
            // Data that came before the failure is delivered first, including what the
            // cancelled IN transfers still bring: they complete at once, the device being
            // gone (or the transfers cancelled). A read waiting when the pipe fails gets the
            // failure even if the pipe is closed right after.
            if let item = popItem(&s, &r) {
                s.reader = nil
                r.read = (reader.continuation, item)
            } else if s.inFlight.isEmpty || s.closed {
                s.reader = nil
                r.read = (reader.continuation, .failure(failure))
            }
        } else if s.closed {
            s.reader = nil
            r.read = (reader.continuation, .success(nil))
        } else if let outcome = reader.outcome {
            // A cancelled or timed-out read ends once its transfers have drained.
            guard s.inFlight.isEmpty else { return }
            s.reader = nil
            r.read = (reader.continuation, .failure(outcome))
        } else if let item = popItem(&s, &r) {
            s.reader = nil
            r.read = (reader.continuation, item)
        }
    }

    private func settleWrite(_ s: inout State, _ r: inout Resumptions) {
        guard let op = s.write else { return }
        if let failure = s.failure {
            // The transfer buffers are the pipe's, not the caller's: no need to wait.
            s.write = nil
            r.voids.append((op.continuation, .failure(failure)))
            return
        }
        guard s.outFlight.isEmpty, op.error != nil || op.isFinished else { return }
        s.write = nil
        r.voids.append((op.continuation, op.error.map { .failure($0) } ?? .success(())))
    }

    private func finish(_ r: Resumptions) {
        let noDevice = r.noDevice
        r.run()
        if let noDevice { onNoDevice(noDevice, self) }
    }

    private func closedError(_ operation: String) -> AccessoryError {
        AccessoryError(.sessionClosed, "\(configuration.sessionDescription) is closed", operation: operation)
    }

    private func cancelledError(_ operation: String) -> AccessoryError {
        AccessoryError(.cancelled, "\(operation) on \(configuration.sessionDescription) was cancelled", operation: operation)
    }
}

extension BulkPipe {
    /// Everything the lock guards.
    struct State {
        var failure: AccessoryError?
        /// The operation that found the device gone, while the owner has not yet failed
        /// the pipe: nothing is submitted.
        var gone: String?
        var closed = false
        var tokens: UInt64 = 0
        var statistics = Statistics()

        var inIdle: [LibUSBTransfer] = []
        /// IN transfers in flight, oldest submission first.
        var inFlight: [LibUSBTransfer] = []
        var inArmed = false
        /// Set while ``beginClearingStall()`` … ``endClearingStall()`` runs: reads wait
        /// instead of starting the input again.
        var clearingStall = false
        /// The error of a stopping input, queued once its transfers have drained.
        var inStopError: AccessoryError?
        var items = ItemQueue()
        /// Bytes of data in ``items``.
        var buffered = 0
        var reader: Reader?

        var outIdle: [LibUSBTransfer] = []
        /// OUT transfers in flight, oldest submission first.
        var outFlight: [LibUSBTransfer] = []
        var write: WriteOperation?
        var turnHeld = false
        var turnWaiters: [(token: UInt64, continuation: VoidContinuation)] = []

        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    struct Reader {
        var token: UInt64
        var continuation: ReadContinuation
        /// Set when the read was cancelled or timed out: it ends with this error once the
        /// stopped input has drained.
        var outcome: AccessoryError?
    }

    struct WriteOperation {
        var token: UInt64
        var source: [UInt8]
        var offset = 0
        var zeroLengthPending: Bool
        var error: AccessoryError?
        var continuation: VoidContinuation

        init(token: UInt64, source: [UInt8], zeroLengthPending: Bool, continuation: VoidContinuation) {
            self.token = token
            self.source = source
            self.zeroLengthPending = zeroLengthPending
            self.continuation = continuation
        }

        var isFinished: Bool { offset == source.count && !zeroLengthPending }
    }

    enum Item {
        case data([UInt8])
        case error(AccessoryError)
    }

    /// A FIFO of items: an array and a read index, compacted now and then.
    struct ItemQueue {
        private var storage: [Item] = []
        private var head = 0

        var isEmpty: Bool { head == storage.count }

        mutating func append(_ item: Item) { storage.append(item) }

        mutating func popFirst() -> Item? {
            guard head < storage.count else { return nil }
            let item = storage[head]
            head += 1
            if head == storage.count {
                storage.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= storage.count {
                storage.removeFirst(head)
                head = 0
            }
            return item
        }

        mutating func removeAll() {
            storage.removeAll()
            head = 0
        }

        mutating func removeErrors(where predicate: (AccessoryError) -> Bool) {
            storage.removeSubrange(0..<head)
            head = 0
            storage.removeAll { if case .error(let e) = $0 { predicate(e) } else { false } }
        }
    }

    /// Continuations to resume once the lock is released.
    struct Resumptions {
        var read: (ReadContinuation, ReadResult)?
        var voids: [(VoidContinuation, Result<Void, AccessoryError>)] = []
        var drains: [CheckedContinuation<Void, Never>] = []
        var noDevice: String?

        func run() {
            if let (c, result) = read { c.resume(returning: result) }
            for (c, result) in voids { c.resume(returning: result) }
            for c in drains { c.resume() }
        }
    }
}
