import DequeModule

/// The input half of a session's data plane, as a value: events go in (a read, a
/// completion, a timeout), and the actions to perform come out (submit so many IN
/// transfers, cancel everything in flight, resume a read). No lock, clock or I/O.
///
/// **Buffering.** While running, up to `transfersInFlight` IN transfers of
/// `transferLength` bytes are kept in flight, and each completion's data joins a buffer of
/// chunks in order (a completed empty transfer is a zero-length packet, queued as an empty
/// chunk). No transfer is submitted while `bufferCapacity` bytes wait unread, nor while the
/// chunks waiting and the transfers in flight together reach `bufferedItemLimit`, so tiny
/// or empty packets cannot pile up either: that is the back-pressure.
///
/// **Stopping.** A read that times out or is cancelled, and an endpoint error (stall,
/// overflow, I/O), stop the input: every transfer in flight is cancelled, the data they
/// still bring is buffered in order, and only then does the read get its error (or the
/// endpoint error take its place in the buffer). The next read starts the input again.
/// Nothing is lost or reordered.
struct InputStateMachine: Sendable {
    struct Configuration: Sendable, Hashable {
        /// Bytes asked of each IN transfer, a whole number of the IN endpoint's packets.
        var transferLength: Int
        var transfersInFlight: Int
        var bufferCapacity: Int
        var bufferedItemLimit: Int

        /// Rounds `transferSize` up to whole packets of `maxPacketSize` (the IN endpoint's),
        /// so a device that sends full packets never overflows a transfer.
        init(maxPacketSize: Int, transferSize: Int, transfersInFlight: Int, bufferCapacity: Int, bufferedItemLimit: Int) {
            let packet = max(maxPacketSize, 1)
            self.transferLength = max((transferSize + packet - 1) / packet, 1) * packet
            self.transfersInFlight = max(transfersInFlight, 1)
            self.bufferCapacity = max(bufferCapacity, 1)
            self.bufferedItemLimit = max(bufferedItemLimit, 1)
        }
    }

    typealias ReadResult = Result<[UInt8]?, AccessoryError>

    /// What the caller must do after an event, in this order: submit, cancel, resume.
    struct Actions: Sendable {
        /// IN transfers to submit.
        var submits = 0
        /// Cancel every transfer in flight (after the submits).
        var cancelAll = false
        var resumption: (id: UInt64, result: ReadResult)?
        /// A transfer found the device (maybe) gone: tell the owner, who ends the input
        /// with ``fail(_:)`` once it knows.
        var deviceGone: DeviceGoneSign?
    }

    enum Item: Sendable {
        case data([UInt8])
        case error(AccessoryError)
    }

    /// The waiting read.
    struct Reader: Sendable {
        var id: UInt64
        /// For a read of exactly this many bytes: the bytes gathered so far.
        var exactly: Int?
        var gathered: [UInt8] = []
        /// Set when the read was cancelled or timed out: it ends with this once the stopped
        /// input has drained.
        var abort: AccessoryError?
    }

    /// What every live state carries.
    struct Buffer: Sendable {
        var items: Deque<Item> = []
        /// Bytes of data in ``items``.
        var bytes = 0
        var inFlight = 0
        var reader: Reader?
    }

    enum State: Sendable {
        /// No transfer in flight; the next read starts the input.
        case idle(Buffer)
        /// Keeping transfers in flight while the buffer has room.
        case running(Buffer)
        /// Transfers in flight are cancelled; once drained, `error` (an endpoint error)
        /// joins the buffer and the input is idle.
        case stopping(Buffer, AccessoryError?)
        /// Stopped while a halt is cleared: reads wait.
        case clearingStall(Buffer)
        /// A transfer found the device gone: nothing is submitted until ``fail(_:)``.
        case gone(Buffer)
        /// Disconnected: buffered data is still read first, then every read gets the error.
        case failed(Buffer, AccessoryError)
        /// Closed: reads return `nil`.
        case closed(inFlight: Int)
    }

    let configuration: Configuration
    private(set) var state: State = .idle(Buffer())
    private(set) var submitted: UInt64 = 0
    private(set) var completed: UInt64 = 0

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    var inFlight: Int {
        switch state {
        case .idle(let b), .running(let b), .stopping(let b, _), .clearingStall(let b), .gone(let b), .failed(let b, _): b.inFlight
        case .closed(let n): n
        }
    }

    /// Chunks (and errors) waiting to be read.
    var bufferedItems: Int {
        switch state {
        case .idle(let b), .running(let b), .stopping(let b, _), .clearingStall(let b), .gone(let b), .failed(let b, _): b.items.count
        case .closed: 0
        }
    }

    // MARK: Events

    /// Starts the input, so data is buffered before anyone reads.
    mutating func start() -> Actions {
        var actions = Actions()
        if case .idle(let b) = state {
            state = .running(b)
            settle(&actions)
        }
        return actions
    }

    /// Read `id`: the next chunk, or with `exactly`, that many bytes (empty chunks skipped).
    mutating func read(_ id: UInt64, exactly: Int? = nil) -> Actions {
        var actions = Actions()
        switch state {
        case .idle(var b), .running(var b), .stopping(var b, _), .clearingStall(var b), .gone(var b), .failed(var b, _):
            if b.reader != nil {
                actions.resumption = (id, .failure(AccessoryError(.busy, "another task is already reading", operation: "read")))
                return actions
            }
            b.reader = Reader(id: id, exactly: exactly.map { max($0, 0) })
            replace(b)
            if case .idle(let b) = state { state = .running(b) }
            settle(&actions)
        case .closed:
            actions.resumption = (id, .success(nil))
        }
        return actions
    }

    /// Read `id` was cancelled or timed out: stop the input; the read ends with `error` once
    /// the input has drained. Nothing happens when the read is not waiting any more.
    mutating func abort(_ id: UInt64, _ error: AccessoryError) -> Actions {
        var actions = Actions()
        guard var b = buffer, var reader = b.reader, reader.id == id, reader.abort == nil else { return actions }
        reader.abort = error
        b.reader = reader
        replace(b)
        if case .running(let b) = state {
            state = .stopping(b, nil)
            actions.cancelAll = b.inFlight > 0
        }
        settle(&actions)
        return actions
    }

    /// The oldest IN transfer in flight completed with `data`.
    mutating func completed(
        _ status: TransferStatus, data: [UInt8], operation: String, device: String, endpoint: UInt8? = nil
    ) -> Actions {
        var actions = Actions()
        completed &+= 1
        guard var b = buffer else {
            if case .closed(let n) = state { state = .closed(inFlight: max(n - 1, 0)) }
            return actions
        }
        replace(Buffer())  // so that `b` is unique and mutating it copies nothing
        b.inFlight -= 1
        if case .failed = state {
            // The device sent this before it went away: the reader still gets it.
            if !data.isEmpty { append(.data(data), &b) }
        } else if !data.isEmpty || status == .completed {
            append(.data(data), &b)
        }
        replace(b)
        switch status {
        case .completed, .cancelled, .timedOut:
            break
        case .noDevice, .error:
            // NO_DEVICE, or EPROTO as IN transfers get on a real unplug: the owner confirms.
            goneAway(DeviceGoneSign(operation: operation, status: status), &actions)
        default:
            if let error = status.error(operation: operation, device: device, endpoint: endpoint) { endpointFailed(error, &actions) }
        }
        settle(&actions)
        return actions
    }

    /// The newest `count` IN submits decided were not made: the first failed with `error`.
    mutating func submitFailed(count: Int, _ error: AccessoryError) -> Actions {
        var actions = Actions()
        guard var b = buffer else {
            if case .closed(let n) = state { state = .closed(inFlight: max(n - count, 0)) }
            return actions
        }
        b.inFlight = max(b.inFlight - count, 0)
        replace(b)
        if error.code.disconnectReason != nil {
            goneAway(DeviceGoneSign(operation: error.operation ?? "submit"), &actions)
        } else {
            endpointFailed(error, &actions)
        }
        settle(&actions)
        return actions
    }

    /// Stops the input to clear a halt: transfers in flight are cancelled; reads wait.
    mutating func beginClearingStall() -> Actions {
        var actions = Actions()
        switch state {
        case .idle(let b), .running(let b), .stopping(let b, _):
            actions.cancelAll = b.inFlight > 0
            state = .clearingStall(b)
        default:
            break
        }
        return actions
    }

    /// Drops buffered stall errors; starts the input again if a read waits (else the next
    /// read does, so that nothing is read before the code asks).
    mutating func endClearingStall() -> Actions {
        var actions = Actions()
        guard case .clearingStall(var b) = state else { return actions }
        b.items.removeAll { if case .error(let e) = $0 { e.code == .stall } else { false } }
        state = b.reader == nil ? .idle(b) : .running(b)
        settle(&actions)
        return actions
    }

    /// Ends the input with `error` (a disconnection): transfers in flight are cancelled;
    /// buffered data is read first, then every read gets the error. The first end wins.
    mutating func fail(_ error: AccessoryError) -> Actions {
        var actions = Actions()
        switch state {
        case .idle(let b), .running(let b), .stopping(let b, _), .clearingStall(let b), .gone(let b):
            actions.cancelAll = b.inFlight > 0
            state = .failed(b, error)
            settle(&actions)
        case .failed, .closed:
            break
        }
        return actions
    }

    /// Closes the input: a waiting read gets `nil` (or the failure, after ``fail(_:)``), the
    /// buffer is dropped, transfers in flight are cancelled.
    mutating func close() -> Actions {
        var actions = Actions()
        guard let b = buffer else { return actions }
        actions.cancelAll = b.inFlight > 0
        if let reader = b.reader {
            // A read waiting when the input failed gets the failure, even if closed right after.
            if case .failed(_, let error) = state {
                actions.resumption = (reader.id, .failure(error))
            } else {
                actions.resumption = (reader.id, .success(nil))
            }
        }
        state = .closed(inFlight: b.inFlight)
        return actions
    }

    // MARK: Internals

    private var buffer: Buffer? {
        switch state {
        case .idle(let b), .running(let b), .stopping(let b, _), .clearingStall(let b), .gone(let b), .failed(let b, _): b
        case .closed: nil
        }
    }

    /// Puts `b` back into the current state.
    private mutating func replace(_ b: Buffer) {
        switch state {
        case .idle: state = .idle(b)
        case .running: state = .running(b)
        case .stopping(_, let e): state = .stopping(b, e)
        case .clearingStall: state = .clearingStall(b)
        case .gone: state = .gone(b)
        case .failed(_, let e): state = .failed(b, e)
        case .closed: break
        }
    }

    private func append(_ item: Item, _ b: inout Buffer) {
        if case .data(let d) = item { b.bytes += d.count }
        b.items.append(item)
    }

    /// An endpoint error stops a running input; it joins the buffer once drained.
    private mutating func endpointFailed(_ error: AccessoryError, _ actions: inout Actions) {
        switch state {
        case .running(let b):
            actions.cancelAll = b.inFlight > 0
            state = .stopping(b, error)
        case .stopping(let b, let first):
            state = .stopping(b, first ?? error)
        case .idle(var b):
            append(.error(error), &b)
            state = .idle(b)
        case .clearingStall(var b):
            if error.code != .stall { append(.error(error), &b) }
            state = .clearingStall(b)
        case .gone, .failed, .closed:
            break
        }
    }

    private mutating func goneAway(_ sign: DeviceGoneSign, _ actions: inout Actions) {
        switch state {
        case .idle(let b), .running(let b), .stopping(let b, _), .clearingStall(let b):
            actions.cancelAll = b.inFlight > 0
            actions.deviceGone = sign
            state = .gone(b)
        case .gone, .failed, .closed:
            break
        }
    }

    /// Submits what the buffer has room for, finishes a drained stop, and serves the
    /// waiting read.
    private mutating func settle(_ actions: inout Actions) {
        if case .stopping(var b, let error) = state, b.inFlight == 0 {
            if let error { append(.error(error), &b) }
            state = .idle(b)
        }
        if case .running(var b) = state {
            while b.inFlight < configuration.transfersInFlight, b.bytes < configuration.bufferCapacity,
                b.items.count + b.inFlight < configuration.bufferedItemLimit
            {
                b.inFlight += 1
                actions.submits += 1
                submitted &+= 1
            }
            state = .running(b)
        }
        serveReader(&actions)
    }

    private mutating func serveReader(_ actions: inout Actions) {
        guard actions.resumption == nil, var b = buffer, var reader = b.reader else { return }
        replace(Buffer())
        defer { replace(b) }
        if let abort = reader.abort {
            // A cancelled or timed-out read ends once its transfers have drained; what it
            // had gathered goes back in front of the buffer.
            guard b.inFlight == 0 || isFailed else { return }
            if !reader.gathered.isEmpty {
                b.bytes += reader.gathered.count
                b.items.prepend(.data(reader.gathered))
            }
            b.reader = nil
            actions.resumption = (reader.id, .failure(abort))
            return
        }
        while let item = b.items.first {
            switch item {
            case .error(let error):
                b.items.removeFirst()
                if !reader.gathered.isEmpty {
                    b.bytes += reader.gathered.count
                    b.items.prepend(.data(reader.gathered))
                }
                b.reader = nil
                actions.resumption = (reader.id, .failure(error))
                return
            case .data(let data):
                b.items.removeFirst()
                b.bytes -= data.count
                guard let want = reader.exactly else {
                    b.reader = nil
                    actions.resumption = (reader.id, .success(data))
                    refill(&b, &actions)
                    return
                }
                let need = want - reader.gathered.count
                if data.count > need {
                    reader.gathered += data.prefix(need)
                    let rest = Array(data.dropFirst(need))
                    b.bytes += rest.count
                    b.items.prepend(.data(rest))
                } else {
                    reader.gathered += data
                }
                if reader.gathered.count == want {
                    b.reader = nil
                    actions.resumption = (reader.id, .success(reader.gathered))
                    refill(&b, &actions)
                    return
                }
            }
        }
        if reader.exactly == 0 {
            b.reader = nil
            actions.resumption = (reader.id, .success([]))
            return
        }
        b.reader = reader
        refill(&b, &actions)
        switch state {
        case .failed(_, let error) where b.inFlight == 0:
            if !reader.gathered.isEmpty {
                b.bytes += reader.gathered.count
                b.items.prepend(.data(reader.gathered))
            }
            b.reader = nil
            actions.resumption = (reader.id, .failure(error))
        case .idle:
            // Stopped by an earlier timeout, cancellation or error: start again.
            state = .running(b)
            refill(&b, &actions)
        default:
            break
        }
    }

    private var isFailed: Bool { if case .failed = state { true } else { false } }

    /// Submits more while running and the buffer has room (after a read took data out).
    private mutating func refill(_ b: inout Buffer, _ actions: inout Actions) {
        guard case .running = state else { return }
        while b.inFlight < configuration.transfersInFlight, b.bytes < configuration.bufferCapacity,
            b.items.count + b.inFlight < configuration.bufferedItemLimit
        {
            b.inFlight += 1
            actions.submits += 1
            submitted &+= 1
        }
    }
}
