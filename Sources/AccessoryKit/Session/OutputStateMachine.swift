import DequeModule

/// The output half of a session's data plane, as a value: events go in (a write, a flush, a
/// completion, a timeout), and the actions to perform come out (submit these transfers,
/// cancel everything in flight, resume these calls). No lock, clock or I/O.
///
/// **Queueing.** A write's bytes join a queue of at most `bufferCapacity` bytes, and the
/// write is done once all of them are in it. A larger write waits, and its bytes move in,
/// a whole number of packets at a time, as transfers take bytes out (back-pressure).
///
/// **Transfers.** Up to `transfersInFlight` transfers take bytes from the queue. Each is a
/// whole number of packets of up to `transferSize` bytes, except where a write ends in a
/// short packet: that ends the transfer. A transfer may continue into the next write only
/// where the first ended on a packet boundary without a zero-length packet, which the device
/// cannot tell from one write. A zero-length packet follows a write of zero bytes, and, with
/// `sendsZeroLengthPacket`, a write whose last packet is full.
///
/// **Failure.** A transfer that ends short of its length (a stall, an error, a per-call
/// timeout or cancellation) stops the output: every transfer in flight is cancelled and the
/// queue is dropped, so nothing after the unsent bytes is ever sent (no hole). Once the
/// cancelled transfers have come back, the error, with the count of bytes accepted, goes to
/// every waiting call, or else to the next write or flush. Then the output is usable again.
struct OutputStateMachine: Sendable {
    struct Configuration: Sendable, Hashable {
        var maxPacketSize: Int
        /// Bytes per transfer, a whole number of packets.
        var transferSize: Int
        var transfersInFlight: Int
        /// Bytes queued at most, at least one transfer.
        var bufferCapacity: Int
        var sendsZeroLengthPacket: Bool

        /// Rounds `transferSize` down to whole packets (at least one) and raises the
        /// capacity to at least one transfer.
        init(maxPacketSize: Int, transferSize: Int, transfersInFlight: Int, bufferCapacity: Int, sendsZeroLengthPacket: Bool) {
            self.maxPacketSize = max(maxPacketSize, 1)
            self.transferSize = max(transferSize / self.maxPacketSize, 1) * self.maxPacketSize
            self.transfersInFlight = max(transfersInFlight, 1)
            self.bufferCapacity = max(bufferCapacity, self.transferSize)
            self.sendsZeroLengthPacket = sendsZeroLengthPacket
        }
    }

    /// What the caller must do after an event, in this order: submit, cancel, resume.
    struct Actions: Sendable {
        /// OUT transfers to submit, in this order.
        var submits: [ArraySlice<UInt8>] = []
        /// Cancel every transfer in flight (after the submits).
        var cancelAll = false
        /// Calls to resume.
        var resumptions: [(id: UInt64, result: Result<Void, AccessoryError>)] = []
        /// A transfer found the device (maybe) gone: tell the owner, who ends the output
        /// with ``fail(_:)`` once it knows.
        var deviceGone: DeviceGoneSign?
    }

    /// A piece of queued output.
    struct Segment: Sendable {
        var bytes: ArraySlice<UInt8>
        /// A zero-length packet, sent as a transfer of its own.
        var isZeroLengthPacket = false
        /// Whether this ends a write with a short packet or is a zero-length packet: the end
        /// of a message, which is never held back.
        var endsMessage = false
    }

    /// A write waiting for room: the bytes not yet queued.
    struct Writer: Sendable {
        var id: UInt64
        var rest: ArraySlice<UInt8>
        var zeroLengthPacket: Bool
    }

    /// What every live state carries.
    struct Output: Sendable {
        var queue: Deque<Segment> = []
        var queuedBytes = 0
        /// Queued segments that end a message (see ``Segment/endsMessage``).
        var queuedMessageEnds = 0
        /// The lengths of the transfers in flight, oldest first.
        var inFlight: Deque<Int> = []
        var writers: Deque<Writer> = []
        var flushers: [UInt64] = []
        /// Bytes accepted since the last error was reported.
        var accepted = 0
    }

    enum State: Sendable {
        /// Sending what is queued.
        case sending(Output)
        /// Nothing new is submitted (while a halt is cleared); writes still queue.
        case paused(Output)
        /// Stopped by `error`: transfers in flight are cancelled, the queue is dropped; the
        /// error is reported once they have come back.
        case stopping(Output, AccessoryError)
        /// Stopped and drained; the error waits for the next write or flush.
        case stopped(Output, AccessoryError)
        /// A transfer found the device gone: nothing is submitted, and waiting calls wait
        /// for ``fail(_:)``.
        case gone(Output)
        /// Closed or disconnected: every call gets this error.
        case finished(AccessoryError, inFlight: Int)
    }

    let configuration: Configuration
    private(set) var state: State = .sending(Output())
    /// Stands in for the state while an event changes the payload it took out; every event
    /// puts a real state back.
    private static let placeholder = State.sending(Output())
    /// Transfers submitted and completed, for statistics.
    private(set) var submitted: UInt64 = 0
    private(set) var completed: UInt64 = 0

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Transfers submitted (or decided) and not yet completed.
    var inFlight: Int {
        switch state {
        case .sending(let o), .paused(let o), .stopping(let o, _), .stopped(let o, _), .gone(let o): o.inFlight.count
        case .finished(_, let n): n
        }
    }

    /// Bytes queued and not yet in a transfer.
    var queuedBytes: Int {
        switch state {
        case .sending(let o), .paused(let o), .stopping(let o, _), .stopped(let o, _), .gone(let o): o.queuedBytes
        case .finished: 0
        }
    }

    // MARK: Events

    /// A write of `bytes` by call `id`. The call is done when the actions resume it.
    mutating func write(_ id: UInt64, _ bytes: ArraySlice<UInt8>) -> Actions {
        var actions = Actions()
        let zlp = bytes.isEmpty || (configuration.sendsZeroLengthPacket && bytes.count % configuration.maxPacketSize == 0)
        let writer = Writer(id: id, rest: bytes, zeroLengthPacket: zlp)
        switch state {
        case .sending(var o):
            state = Self.placeholder  // so that `o` is unique and mutating it copies nothing
            o.writers.append(writer)
            pump(&o, &actions, eager: o.writers.count == 1)
            state = .sending(o)
        case .paused(var o):
            o.writers.append(writer)
            admit(&o, &actions, eager: o.writers.count == 1)
            state = .paused(o)
        case .stopping(var o, let error):
            // Bytes written after the failure, before it was reported, are dropped too.
            o.writers.append(Writer(id: id, rest: [], zeroLengthPacket: false))
            state = .stopping(o, error)
        case .stopped(var o, let error):
            actions.resumptions.append((id, .failure(reported(error, &o))))
            state = .sending(o)
        case .gone(var o):
            o.writers.append(Writer(id: id, rest: [], zeroLengthPacket: false))
            state = .gone(o)
        case .finished(let error, _):
            actions.resumptions.append((id, .failure(error)))
        }
        return actions
    }

    /// Call `id` waits until everything queued has been sent.
    mutating func flush(_ id: UInt64) -> Actions {
        var actions = Actions()
        switch state {
        case .sending(var o):
            state = Self.placeholder
            o.flushers.append(id)
            pump(&o, &actions)
            state = .sending(o)
        case .paused(var o):
            o.flushers.append(id)
            state = .paused(o)
        case .stopping(var o, let error):
            o.flushers.append(id)
            state = .stopping(o, error)
        case .stopped(var o, let error):
            actions.resumptions.append((id, .failure(reported(error, &o))))
            state = .sending(o)
        case .gone(var o):
            o.flushers.append(id)
            state = .gone(o)
        case .finished(let error, _):
            actions.resumptions.append((id, .failure(error)))
        }
        return actions
    }

    /// Waiting call `id` was cancelled or timed out: stop the output with `error`. Nothing
    /// happens when the call is not waiting any more.
    mutating func abort(_ id: UInt64, _ error: AccessoryError) -> Actions {
        var actions = Actions()
        switch state {
        case .sending(var o), .paused(var o):
            guard o.writers.contains(where: { $0.id == id }) || o.flushers.contains(id) else { return actions }
            stop(&o, error, &actions)
        case .stopping, .stopped, .gone, .finished:
            break
        }
        return actions
    }

    /// The oldest transfer in flight completed, having sent `length` bytes.
    mutating func completed(
        _ status: TransferStatus, length: Int, operation: String, device: String, endpoint: UInt8? = nil
    ) -> Actions {
        var actions = Actions()
        completed &+= 1
        switch state {
        case .sending(var o), .paused(var o):
            let paused = if case .paused = state { true } else { false }
            state = Self.placeholder
            let requested = o.inFlight.removeFirst()
            o.accepted += length
            if status == .noDevice || status == .error {
                goneAway(&o, DeviceGoneSign(operation: operation, status: status), &actions)
            } else if status == .completed && length == requested {
                if paused { admit(&o, &actions, eager: false); state = .paused(o) } else { pump(&o, &actions); state = .sending(o) }
            } else {
                let error = status.error(operation: operation, device: device, endpoint: endpoint)
                    ?? AccessoryError(.io, "sent \(length) of \(requested) bytes", operation: operation)
                stop(&o, error, &actions)
            }
        case .stopping(var o, let error):
            o.inFlight.removeFirst()
            o.accepted += length
            if status == .noDevice || status == .error {
                goneAway(&o, DeviceGoneSign(operation: operation, status: status), &actions)
            } else {
                state = .stopping(o, error)
                settleStop(&actions)
            }
        case .gone(var o):
            o.inFlight.removeFirst()
            state = .gone(o)
        case .stopped(var o, let error):
            o.inFlight.removeFirst()
            state = .stopped(o, error)
        case .finished(let error, let n):
            state = .finished(error, inFlight: max(n - 1, 0))
        }
        return actions
    }

    /// The newest `count` submits decided were not made: the first of them failed with
    /// `error`, and the rest were dropped unsubmitted.
    mutating func submitFailed(count: Int, _ error: AccessoryError) -> Actions {
        var actions = Actions()
        switch state {
        case .sending(var o), .paused(var o), .stopping(var o, _):
            o.inFlight.removeLast(min(count, o.inFlight.count))
            if error.code.disconnectReason != nil {
                goneAway(&o, DeviceGoneSign(operation: error.operation ?? "submit"), &actions)
            } else if case .stopping(_, let first) = state {
                state = .stopping(o, first)
                settleStop(&actions)
            } else {
                stop(&o, error, &actions)
            }
        case .gone(var o):
            o.inFlight.removeLast(min(count, o.inFlight.count))
            state = .gone(o)
        case .stopped(var o, let e):
            o.inFlight.removeLast(min(count, o.inFlight.count))
            state = .stopped(o, e)
        case .finished(let e, let n):
            state = .finished(e, inFlight: max(n - count, 0))
        }
        return actions
    }

    /// Stops submitting (to clear a halt); queued bytes stay.
    mutating func pause() {
        if case .sending(let o) = state { state = .paused(o) }
    }

    /// Starts submitting again after ``pause()``.
    mutating func resume() -> Actions {
        var actions = Actions()
        if case .paused(var o) = state {
            pump(&o, &actions)
            state = .sending(o)
        }
        return actions
    }

    /// Ends the output with `error` (closed or disconnected): every waiting call gets it at
    /// once, transfers in flight are cancelled, and every later call gets it. The first end
    /// wins, unless `replacing` (a close after a disconnection: later calls get `error`).
    mutating func finish(_ error: AccessoryError, replacing: Bool = false) -> Actions {
        var actions = Actions()
        switch state {
        case .sending(let o), .paused(let o), .stopping(let o, _), .stopped(let o, _), .gone(let o):
            var failure = error
            failure.bytesTransferred = o.accepted
            for w in o.writers { actions.resumptions.append((w.id, .failure(failure))) }
            for f in o.flushers { actions.resumptions.append((f, .failure(failure))) }
            actions.cancelAll = !o.inFlight.isEmpty
            state = .finished(error, inFlight: o.inFlight.count)
        case .finished(_, let n):
            if replacing { state = .finished(error, inFlight: n) }
        }
        return actions
    }

    // MARK: Internals

    /// Moves waiting writes into the queue, submits transfers, and resolves flushes.
    private mutating func pump(_ o: inout Output, _ actions: inout Actions, eager: Bool = false) {
        admit(&o, &actions, eager: eager)
        while o.inFlight.count < configuration.transfersInFlight,
            let transfer = nextTransfer(&o, allowShort: o.inFlight.isEmpty || !o.flushers.isEmpty || o.queuedMessageEnds > 0)
        {
            actions.submits.append(transfer)
            o.inFlight.append(transfer.count)
            submitted &+= 1
            admit(&o, &actions, eager: eager)
        }
        if o.queue.isEmpty, o.inFlight.isEmpty, o.writers.isEmpty, !o.flushers.isEmpty {
            for f in o.flushers { actions.resumptions.append((f, .success(()))) }
            o.flushers.removeAll()
        }
    }

    /// Moves the waiting writes' bytes into the queue while there is room, whole packets at
    /// a time; a write is done once its last byte is in. A write that had to wait moves in
    /// only once the queue is down to half its capacity (`eager`: at once), so that a
    /// writer of small pieces wakes once per half a queue, not once per transfer.
    private func admit(_ o: inout Output, _ actions: inout Actions, eager: Bool) {
        let packet = configuration.maxPacketSize
        if !eager, o.queuedBytes > configuration.bufferCapacity / 2 { return }
        while var w = o.writers.first {
            let room = configuration.bufferCapacity - o.queuedBytes
            if w.rest.count <= room {
                let short = w.rest.count % packet != 0
                if !w.rest.isEmpty { o.queue.append(Segment(bytes: w.rest, endsMessage: short)) }
                if w.zeroLengthPacket { o.queue.append(Segment(bytes: [], isZeroLengthPacket: true, endsMessage: true)) }
                o.queuedMessageEnds += (short ? 1 : 0) + (w.zeroLengthPacket ? 1 : 0)
                o.queuedBytes += w.rest.count
                o.writers.removeFirst()
                actions.resumptions.append((w.id, .success(())))
                continue
            }
            let n = room / packet * packet
            guard n > 0 else { return }
            o.queue.append(Segment(bytes: w.rest.prefix(n)))
            o.queuedBytes += n
            w.rest = w.rest.dropFirst(n)
            o.writers[0] = w
            return
        }
    }

    /// Takes the next transfer's bytes from the queue.
    ///
    /// - Parameter allowShort: whether less than a whole transfer may go. While transfers
    ///   are in flight it may not, unless a flush waits or a write's end (a short packet, a
    ///   zero-length packet) is queued: small writes of whole packets then gather into whole
    ///   transfers, as Nagle's algorithm gathers segments, and go at the next completion at
    ///   the latest. A lone small write, and the end of every message, go at once.
    private func nextTransfer(_ o: inout Output, allowShort: Bool) -> ArraySlice<UInt8>? {
        guard let first = o.queue.first else { return nil }
        if !allowShort, o.queuedBytes < configuration.transferSize { return nil }
        if first.isZeroLengthPacket {
            o.queue.removeFirst()
            o.queuedMessageEnds -= 1
            return []
        }
        let size = configuration.transferSize
        var parts: [ArraySlice<UInt8>] = []
        var length = 0
        while length < size, let segment = o.queue.first, !segment.isZeroLengthPacket {
            let take = min(segment.bytes.count, size - length)
            parts.append(segment.bytes.prefix(take))
            length += take
            o.queuedBytes -= take
            if take < segment.bytes.count {
                o.queue[0].bytes = segment.bytes.dropFirst(take)
                break
            }
            o.queue.removeFirst()
            if segment.endsMessage { o.queuedMessageEnds -= 1 }
            // A short packet ends a write, and the transfer with it.
            if length % configuration.maxPacketSize != 0 { break }
        }
        if parts.count == 1 { return parts[0] }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        for part in parts { bytes.append(contentsOf: part) }
        return bytes[...]
    }

    /// Stops the output with `error` (see the type's doc).
    private mutating func stop(_ o: inout Output, _ error: AccessoryError, _ actions: inout Actions) {
        o.queue.removeAll()
        o.queuedMessageEnds = 0
        o.queuedBytes = 0
        for i in o.writers.indices { o.writers[i].rest = [] }
        actions.cancelAll = !o.inFlight.isEmpty
        state = .stopping(o, error)
        settleStop(&actions)
    }

    /// Once a stopping output has drained, reports its error to every waiting call, or
    /// keeps it for the next one.
    private mutating func settleStop(_ actions: inout Actions) {
        guard case .stopping(var o, let error) = state, o.inFlight.isEmpty else { return }
        let waiting = o.writers.map(\.id) + o.flushers
        o.writers.removeAll()
        o.flushers.removeAll()
        if waiting.isEmpty {
            state = .stopped(o, error)
        } else {
            let failure = reported(error, &o)
            for id in waiting { actions.resumptions.append((id, .failure(failure))) }
            state = .sending(o)
        }
    }

    /// `error` with the bytes accepted since the last report; starts counting again.
    private func reported(_ error: AccessoryError, _ o: inout Output) -> AccessoryError {
        var failure = error
        failure.bytesTransferred = o.accepted
        o.accepted = 0
        return failure
    }

    private mutating func goneAway(_ o: inout Output, _ sign: DeviceGoneSign, _ actions: inout Actions) {
        o.queue.removeAll()
        o.queuedMessageEnds = 0
        o.queuedBytes = 0
        for i in o.writers.indices { o.writers[i].rest = [] }
        actions.cancelAll = !o.inFlight.isEmpty
        actions.deviceGone = sign
        state = .gone(o)
    }
}
