import AccessoryCore
import DequeModule

/// One reader's place in a bounded update stream: what waits for it, what it has been told,
/// and, once it has fallen behind, the mark and difference due. A value: ``UpdateBuffer``
/// pushes into it and takes from it under its lock.
///
/// Every disconnect it hands out carries the reason it was pushed with: the reasons of the
/// connections the reader believes connected are kept until the reader takes their
/// disconnects, however often it falls behind meanwhile.
struct UpdateCursor: Sendable {
    /// How many notifications may wait before they collapse into a mark.
    let limit: Int
    private var queue: Deque<AccessoryEvent> = []
    /// What the reader has been told is connected (as of what it has taken).
    private(set) var seen: [ConnectionID: Accessory]
    /// Why connections left that the reader may still believe connected: those whose
    /// disconnects wait in ``queue`` or ``pendingDiff``, or, while it is behind, were dropped.
    private var leftReasons: [ConnectionID: (Accessory, DisconnectReason)] = [:]
    /// Dropped since the last mark; non-nil while a mark is due.
    private var missed: Int?
    /// The difference still to deliver after a mark.
    private var pendingDiff: Deque<AccessoryEvent> = []

    /// A reader that knows `seen` is connected (and nothing else).
    init(limit: Int, seen: [ConnectionID: Accessory] = [:]) {
        self.limit = max(limit, 1)
        self.seen = seen
    }

    /// How many updates wait, a due mark included.
    var count: Int { queue.count + pendingDiff.count + (missed == nil ? 0 : 1) }

    /// Adds a notification, or, past the limit, collapses what waits into a due mark.
    mutating func push(_ event: AccessoryEvent) {
        if case .disconnected(let a, let reason) = event, missed == nil || seen[a.connectionID] != nil {
            // Only what the reader may have seen (while it is behind, only what it has
            // seen), so this stays bounded by `seen` and the queue.
            leftReasons[a.connectionID] = (a, reason)
        }
        if missed != nil {
            missed! += 1
        } else if queue.count >= limit {
            missed = queue.count + 1
            queue.removeAll()
            pendingDiff.removeAll()
            leftReasons = leftReasons.filter { seen[$0.key] != nil }
        } else {
            queue.append(event)
        }
    }

    /// The next update for the reader, if one is ready.
    /// - Parameter current: what is connected now, as the pushed events say.
    mutating func next(current: [ConnectionID: Accessory]) -> AccessoryUpdate? {
        if let dropped = missed {
            missed = nil
            // The difference between what the reader has seen and what is connected now.
            // Its disconnects keep their reasons in `leftReasons` until they are taken.
            var diff: Deque<AccessoryEvent> = []
            for id in seen.keys.sorted() where current[id] == nil {
                let (a, reason) = leftReasons[id] ?? (seen[id]!, .ghostEvicted(.absentFromSnapshot))
                diff.append(.disconnected(a, reason))
            }
            for id in current.keys.sorted() where seen[id] == nil {
                diff.append(.connected(current[id]!))
            }
            pendingDiff = diff
            return .resynchronized(missed: dropped)
        }
        guard let event = pendingDiff.popFirst() ?? queue.popFirst() else { return nil }
        switch event {
        case .connected(let a): seen[a.connectionID] = a
        case .disconnected(let a, _):
            seen[a.connectionID] = nil
            leftReasons[a.connectionID] = nil
        }
        return .event(event)
    }
}
