import AccessoryCore
import DequeModule

/// One element of ``AccessoryManager/updates(includingCurrent:bufferLimit:)``: a
/// notification, or the mark that the subscriber fell behind and what it missed was
/// collapsed.
public enum AccessoryUpdate: Sendable, Hashable {
    case event(AccessoryEvent)
    /// More than the buffer limit waited unread: `missed` notifications were dropped, and
    /// the events that follow are the difference between what the subscriber had seen and
    /// the accessories connected now (`.disconnected` with its real reason for each that
    /// left, then `.connected` for each that is new, in ID order).
    case resynchronized(missed: Int)
}

/// A bounded stream of ``AccessoryUpdate``s for one subscriber. The manager never waits
/// for it: when more than `bufferLimit` notifications wait unread, they collapse into a
/// ``AccessoryUpdate/resynchronized(missed:)`` mark and the difference from the current
/// state. The stream's promise still holds: one `.connected` per ID before at most one
/// `.disconnected`, and never a disconnect of an ID the subscriber was not told of.
public struct AccessoryUpdates: AsyncSequence, Sendable {
    public typealias Element = AccessoryUpdate
    public typealias Failure = Never

    let buffer: UpdateBuffer

    public func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

    /// How many updates wait unread now.
    package var bufferedCount: Int { buffer.bufferedCount }

    public struct Iterator: AsyncIteratorProtocol {
        let buffer: UpdateBuffer
        public mutating func next() async -> AccessoryUpdate? { await buffer.next() }
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Never) -> AccessoryUpdate? {
            await buffer.next()
        }
    }
}

/// The buffer behind ``AccessoryUpdates``: the manager pushes, one consumer pulls.
final class UpdateBuffer: Sendable {
    private struct State {
        var queue: Deque<AccessoryEvent> = []
        var limit: Int
        /// What the consumer has been told is connected (as of what it has taken).
        var seen: [ConnectionID: Accessory] = [:]
        /// What is connected now, as the pushed events say, and why the ones the consumer
        /// still believes connected have left.
        var current: [ConnectionID: Accessory] = [:]
        var leftReasons: [ConnectionID: (Accessory, DisconnectReason)] = [:]
        /// Dropped since the last mark; non-nil while a mark is due.
        var missed: Int?
        /// The difference still to deliver after a mark.
        var pendingDiff: Deque<AccessoryEvent> = []
        var waiter: CheckedContinuation<AccessoryUpdate?, Never>?
        var finished = false
    }

    private let state: Locked<State>
    /// Called once the consumer goes away.
    let onTermination: Locked<(@Sendable () -> Void)?> = Locked(nil)

    init(limit: Int, current: [Accessory]) {
        var s = State(limit: max(limit, 1))
        for a in current { s.current[a.connectionID] = a }
        state = Locked(s)
    }

    /// How many updates wait unread, a due mark included (for tests and diagnostics).
    var bufferedCount: Int { state.withLock { $0.queue.count + $0.pendingDiff.count + ($0.missed == nil ? 0 : 1) } }

    /// Adds a notification; never waits.
    func push(_ event: AccessoryEvent) {
        let resume: (CheckedContinuation<AccessoryUpdate?, Never>, AccessoryUpdate)? = state.withLock { s in
            guard !s.finished else { return nil }
            switch event {
            case .connected(let a): s.current[a.connectionID] = a
            case .disconnected(let a, let reason):
                s.current[a.connectionID] = nil
                // Kept for a difference to come: only what the consumer may have seen (while
                // it is behind, only what it has seen), so this stays bounded.
                if s.missed == nil || s.seen[a.connectionID] != nil { s.leftReasons[a.connectionID] = (a, reason) }
            }
            if let waiter = s.waiter, s.queue.isEmpty, s.missed == nil, s.pendingDiff.isEmpty {
                s.waiter = nil
                Self.take(event, &s)
                return (waiter, .event(event))
            }
            if s.missed != nil {
                s.missed! += 1
            } else if s.queue.count >= s.limit {
                // Fallen behind: collapse what waits into a mark and the difference.
                s.missed = s.queue.count + 1
                s.queue.removeAll()
                s.pendingDiff.removeAll()
                s.leftReasons = s.leftReasons.filter { s.seen[$0.key] != nil }
            } else {
                s.queue.append(event)
            }
            return nil
        }
        if let (c, update) = resume { c.resume(returning: update) }
    }

    /// Ends the stream: the consumer gets what waits, then `nil`.
    func finish() {
        let waiter: CheckedContinuation<AccessoryUpdate?, Never>? = state.withLock { s in
            s.finished = true
            defer { s.waiter = nil }
            return s.queue.isEmpty && s.missed == nil && s.pendingDiff.isEmpty ? s.waiter : nil
        }
        waiter?.resume(returning: nil)
    }

    func next() async -> AccessoryUpdate? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<AccessoryUpdate?, Never>) in
                let ready: AccessoryUpdate?? = state.withLock { s in
                    if let update = Self.dequeue(&s) { return .some(update) }
                    if s.finished || Task.isCancelled { return .some(nil) }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            let waiter: CheckedContinuation<AccessoryUpdate?, Never>? = state.withLock { s in
                s.finished = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: nil)
            onTermination.withLock { $0 }?()
        }
    }

    /// The next update for the consumer, if one is ready.
    private static func dequeue(_ s: inout State) -> AccessoryUpdate? {
        if let missed = s.missed {
            s.missed = nil
            // The difference between what the consumer has seen and what is connected now.
            var diff: Deque<AccessoryEvent> = []
            for id in s.seen.keys.sorted() where s.current[id] == nil {
                let (a, reason) = s.leftReasons[id] ?? (s.seen[id]!, .ghostEvicted(.absentFromSnapshot))
                diff.append(.disconnected(a, reason))
            }
            for id in s.current.keys.sorted() where s.seen[id] == nil {
                diff.append(.connected(s.current[id]!))
            }
            s.pendingDiff = diff
            s.leftReasons.removeAll()
            return .resynchronized(missed: missed)
        }
        if let event = s.pendingDiff.popFirst() ?? s.queue.popFirst() {
            take(event, &s)
            return .event(event)
        }
        return nil
    }

    /// The consumer now knows `event`.
    private static func take(_ event: AccessoryEvent, _ s: inout State) {
        switch event {
        case .connected(let a): s.seen[a.connectionID] = a
        case .disconnected(let a, _):
            s.seen[a.connectionID] = nil
            s.leftReasons[a.connectionID] = nil
        }
    }
}
