import DequeModule
import AccessoryLocking

/// A stream's ``EndpointQueue`` on the transfer primitive, ``EndpointTransfers``: each
/// transfer is tagged with its submission number, and a completion that comes before an
/// older one's is held until every older one has been reported, so the data plane sees them
/// in submission order. Every backend's streams go through this one type; a backend
/// implements only the primitive.
///
/// Completions arrive on the backend's event thread, one at a time, and are passed on after
/// releasing the lock.
final class TransferQueue: EndpointQueue {
    let transfers: any EndpointTransfers
    let maxPacketSize: Int
    let capacity: Int
    private let state = Locked(State())

    private struct State {
        var nextTag: UInt64 = 0
        /// Tags submitted and not yet reported, oldest first.
        var pending: Deque<UInt64> = []
        /// Completions that came before an older one's.
        var early: [UInt64: TransferCompletion] = [:]
        /// A struct field, as ``CompletionHandlerSlot``'s is.
        var handler: (@Sendable (TransferCompletion) -> Void)?
    }

    /// A queue of at most `capacity` transfers of up to `transferSize` bytes on `transfers`,
    /// which keeps that many ready (``EndpointTransfers/reserve(_:size:)``).
    init(_ transfers: any EndpointTransfers, maxPacketSize: Int, capacity: Int, transferSize: Int) throws(AccessoryError) {
        self.transfers = transfers
        self.maxPacketSize = max(maxPacketSize, 1)
        self.capacity = capacity
        try transfers.reserve(capacity, size: transferSize)
        transfers.setCompletionHandler { [weak self] tag, completion in self?.completed(tag, completion) }
    }

    var endpoint: UInt8 { transfers.endpoint }
    var operation: String { transfers.operation }
    var device: String { transfers.device }
    var pending: Int { state.withLock { $0.pending.count } }

    func setCompletionHandler(_ handler: @escaping @Sendable (TransferCompletion) -> Void) {
        state.withLock { $0.handler = handler }
    }

    func submit(_ bytes: ArraySlice<UInt8>) -> AccessoryError? {
        let tag = newTag()
        return submitted(tag, transfers.submit(bytes, timeout: nil, tag: tag))
    }

    func submit(length: Int) -> AccessoryError? {
        let tag = newTag()
        return submitted(tag, transfers.submit(length: length, timeout: nil, tag: tag))
    }

    private func newTag() -> UInt64 {
        state.withLock { s in
            precondition(s.pending.count < capacity, "more than \(capacity) transfers submitted on \(operation)")
            s.nextTag &+= 1
            s.pending.append(s.nextTag)
            return s.nextTag
        }
    }

    /// A failed submit leaves nothing pending (the data plane submits one at a time, so the
    /// tag is the newest).
    private func submitted(_ tag: UInt64, _ error: AccessoryError?) -> AccessoryError? {
        if error != nil { state.withLock { $0.pending.removeAll { $0 == tag } } }
        return error
    }

    func cancelAll() { transfers.cancelAll() }
    func close() { transfers.close() }
    func setAwaitedCheck(_ isAwaited: @escaping @Sendable () -> Bool) { transfers.setAwaitedCheck(isAwaited) }

    private func completed(_ tag: UInt64, _ completion: TransferCompletion) {
        let (ready, handler): ([TransferCompletion], (@Sendable (TransferCompletion) -> Void)?) = state.withLock { s in
            guard s.pending.first == tag else {
                s.early[tag] = completion
                return ([], nil)
            }
            s.pending.removeFirst()
            var ready = [completion]
            while let head = s.pending.first, let done = s.early.removeValue(forKey: head) {
                s.pending.removeFirst()
                ready.append(done)
            }
            return (ready, s.handler)
        }
        guard let handler else { return }
        for completion in ready { handler(completion) }
    }
}
