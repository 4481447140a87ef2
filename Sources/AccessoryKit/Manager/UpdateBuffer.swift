import AccessoryCore
import DequeModule
import AccessoryLocking

/// The storage behind one ``AccessoryUpdates`` sequence: the manager pushes, and each reader
/// (an iterator) pulls from its own ``UpdateCursor``. It takes its lock, then resumes waiting
/// readers outside it, and never waits.
final class UpdateBuffer: Sendable {
    private struct Reader {
        let id: UInt64
        var cursor: UpdateCursor
        /// The `next()` calls waiting (copies of one iterator), first come first served.
        var waiters: Deque<CheckedContinuation<AccessoryUpdate?, Never>> = []
    }

    private struct State {
        /// What is connected now, as the pushed events say.
        var current: [ConnectionID: Accessory]
        /// Reader 0 is kept for the first iterator from the start.
        var readers: [Reader]
        var firstIsTaken = false
        var nextID: UInt64 = 1
        var finished = false

        func index(of id: UInt64) -> Int? { readers.firstIndex { $0.id == id } }
    }

    private let state: Locked<State>
    private let limit: Int
    private let includingCurrent: Bool

    /// A buffer whose readers start with `.connected` for each accessory connected (`current`
    /// for the first) when `includingCurrent`, and else are taken to know them.
    init(limit: Int, current: [Accessory], includingCurrent: Bool) {
        self.limit = limit
        self.includingCurrent = includingCurrent
        var connected: [ConnectionID: Accessory] = [:]
        for a in current { connected[a.connectionID] = a }
        let first = Reader(id: 0, cursor: Self.cursor(limit, connected, includingCurrent))
        state = Locked(State(current: connected, readers: [first]))
    }

    private static func cursor(_ limit: Int, _ current: [ConnectionID: Accessory], _ includingCurrent: Bool) -> UpdateCursor {
        guard includingCurrent else { return UpdateCursor(limit: limit, seen: current) }
        var cursor = UpdateCursor(limit: limit)
        for id in current.keys.sorted() { cursor.push(.connected(current[id]!)) }
        return cursor
    }

    /// How many updates wait for the reader furthest behind, a due mark included.
    var bufferedCount: Int { state.withLock { $0.readers.map(\.cursor.count).max() ?? 0 } }

    /// How many readers there are, the one kept for the first iterator included.
    var readerCount: Int { state.withLock { $0.readers.count } }

    /// A reader for a new iterator: the first gets everything since the buffer was made;
    /// each later one starts as a new subscriber would, from what is connected now.
    func addReader() -> UInt64 {
        state.withLock { s in
            if !s.firstIsTaken {
                s.firstIsTaken = true
                if s.index(of: 0) != nil { return 0 }
            }
            let id = s.nextID
            s.nextID += 1
            if !s.finished { s.readers.append(Reader(id: id, cursor: Self.cursor(limit, s.current, includingCurrent))) }
            return id
        }
    }

    /// Forgets reader `id` (its iterator went away, or its task was cancelled): its waiting
    /// and later `next()` calls return `nil`.
    func removeReader(_ id: UInt64) {
        let waiters = state.withLock { s in s.index(of: id).map { s.readers.remove(at: $0).waiters } ?? [] }
        for w in waiters { w.resume(returning: nil) }
    }

    /// Adds a notification for every reader; never waits.
    func push(_ event: AccessoryEvent) {
        push(contentsOf: CollectionOfOne(event))
    }

    /// Adds notifications for every reader, in order, under one lock; never waits. A waiting
    /// reader is woken once, after all of them are in, however many it takes: a batch costs
    /// a reader one hand-off, not one per notification.
    func push(contentsOf events: some Collection<AccessoryEvent>) {
        var ready: [(CheckedContinuation<AccessoryUpdate?, Never>, AccessoryUpdate)] = []
        state.withLock { s in
            guard !s.finished else { return }
            for event in events {
                switch event {
                case .connected(let a): s.current[a.connectionID] = a
                case .disconnected(let a, _): s.current[a.connectionID] = nil
                }
                for i in s.readers.indices {
                    s.readers[i].cursor.push(event)
                    while !s.readers[i].waiters.isEmpty, let update = s.readers[i].cursor.next(current: s.current) {
                        ready.append((s.readers[i].waiters.removeFirst(), update))
                    }
                }
            }
        }
        for (waiter, update) in ready { waiter.resume(returning: update) }
    }

    /// Ends the stream: each reader gets what waits for it, then `nil`.
    func finish() {
        let waiters = state.withLock { s in
            s.finished = true
            // A reader with waiters has nothing left to take.
            defer { for i in s.readers.indices { s.readers[i].waiters.removeAll() } }
            return s.readers.flatMap(\.waiters)
        }
        for w in waiters { w.resume(returning: nil) }
    }

    /// The next update for reader `id`; `nil` once the stream has ended for it. Cancelling
    /// the calling task ends it for this reader.
    func next(_ id: UInt64) async -> AccessoryUpdate? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<AccessoryUpdate?, Never>) in
                let ready: AccessoryUpdate?? = state.withLock { s in
                    guard let i = s.index(of: id) else { return .some(nil) }
                    if let update = s.readers[i].cursor.next(current: s.current) { return .some(update) }
                    if s.finished { return .some(nil) }
                    s.readers[i].waiters.append(c)
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            removeReader(id)
        }
    }
}
