import AccessoryCore
import AccessoryLocking

/// A manager's subscribers, of every kind, in one place: ``send(_:)`` hands each notification
/// to every one of them in order, and ``tap(_:)`` each monitor event to the monitors. A
/// subscriber is removed when its stream ends (its iterator went away, or its task was
/// cancelled) or, for ``updates(limit:current:includingCurrent:)``, when the sequence and all
/// its iterators are gone. After ``finish()``, a new subscriber gets a finished stream.
///
/// Subscribing and sending must happen on one actor (the manager's): then a subscriber's first
/// events and the notifications after them neither miss nor repeat anything. Removal may come from any
/// thread. The lock is never held while a stream is fed or finished.
package final class SubscriberFanOut: Sendable {
    private enum Subscriber: Sendable {
        case events(AsyncStream<AccessoryEvent>.Continuation)
        case updates(UpdateBuffer)
        case observer(@Sendable (AccessoryEvent) -> Void)
        case monitor(AsyncStream<HotplugEvent>.Continuation)
    }

    private struct State {
        var nextID: UInt64 = 0
        /// In the order they subscribed.
        var subscribers: [(id: UInt64, subscriber: Subscriber)] = []
        var monitors = 0
        var finished = false
    }

    private let state = Locked(State())

    /// Keeps an ``AccessoryUpdates`` subscription registered for as long as something holds it.
    final class Registration: Sendable {
        private let fanOut: SubscriberFanOut
        private let id: UInt64?

        fileprivate init(_ fanOut: SubscriberFanOut, id: UInt64?) {
            self.fanOut = fanOut
            self.id = id
        }

        deinit {
            if let id { fanOut.remove(id) }
        }
    }

    /// How many subscribers are registered, observers included.
    var count: Int { state.withLock { $0.subscribers.count } }

    /// Whether a monitor stream is open (some work is done only for them).
    var isTapped: Bool { state.withLock { $0.monitors > 0 } }

    /// Registers `subscriber`; `nil` once finished.
    private func add(_ subscriber: Subscriber) -> UInt64? {
        state.withLock { s in
            guard !s.finished else { return nil }
            let id = s.nextID
            s.nextID += 1
            s.subscribers.append((id, subscriber))
            if case .monitor = subscriber { s.monitors += 1 }
            return id
        }
    }

    private func remove(_ id: UInt64) {
        state.withLock { s in
            guard let i = s.subscribers.firstIndex(where: { $0.id == id }) else { return }
            if case .monitor = s.subscribers.remove(at: i).subscriber { s.monitors -= 1 }
        }
    }

    /// A new unbounded notification stream that yields `first` before what is sent next.
    func events(first: [AccessoryEvent]) -> AsyncStream<AccessoryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AccessoryEvent.self, bufferingPolicy: .unbounded)
        guard let id = add(.events(continuation)) else {
            continuation.finish()
            return stream
        }
        for event in first { continuation.yield(event) }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    /// A new bounded notification stream (see ``AccessoryUpdates``): its first reader starts
    /// with `.connected` for each of `current` when `includingCurrent`, and else is taken to
    /// know them.
    func updates(limit: Int, current: [Accessory], includingCurrent: Bool) -> AccessoryUpdates {
        let buffer = UpdateBuffer(limit: limit, current: current, includingCurrent: includingCurrent)
        let id = add(.updates(buffer))
        if id == nil { buffer.finish() }
        return AccessoryUpdates(buffer: buffer, registration: Registration(self, id: id))
    }

    /// A new stream of monitor events that yields `first` before what is tapped next.
    func monitor(first: HotplugEvent) -> AsyncStream<HotplugEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: HotplugEvent.self, bufferingPolicy: .unbounded)
        guard let id = add(.monitor(continuation)) else {
            continuation.finish()
            return stream
        }
        continuation.yield(first)
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    /// Calls `observer` with every notification, synchronously, until ``finish()``.
    package func observe(_ observer: @escaping @Sendable (AccessoryEvent) -> Void) {
        _ = add(.observer(observer))
    }

    /// Hands a notification to every subscriber, in the order they subscribed.
    func send(_ event: AccessoryEvent) {
        send(contentsOf: CollectionOfOne(event))
    }

    /// Hands notifications to every subscriber, in order: each subscriber gets all of them
    /// before the next subscriber gets any, and a bounded one takes them in one hand-off.
    func send(contentsOf events: some Collection<AccessoryEvent>) {
        guard !events.isEmpty else { return }
        let subscribers = state.withLock { $0.subscribers }
        for (_, subscriber) in subscribers {
            switch subscriber {
            case .events(let continuation): for event in events { continuation.yield(event) }
            case .updates(let buffer): buffer.push(contentsOf: events)
            case .observer(let observer): for event in events { observer(event) }
            case .monitor: break
            }
        }
    }

    /// Hands a monitor event to every monitor stream.
    func tap(_ event: HotplugEvent) {
        let subscribers = state.withLock { $0.monitors > 0 ? $0.subscribers : [] }
        for case (_, .monitor(let continuation)) in subscribers { continuation.yield(event) }
    }

    /// Finishes every stream (each reader gets what waits, then the end) and forgets every
    /// subscriber; later ones get finished streams. Idempotent.
    func finish() {
        let subscribers = state.withLock { s in
            s.finished = true
            s.monitors = 0
            defer { s.subscribers.removeAll() }
            return s.subscribers
        }
        for (_, subscriber) in subscribers {
            switch subscriber {
            case .events(let continuation): continuation.finish()
            case .updates(let buffer): buffer.finish()
            case .monitor(let continuation): continuation.finish()
            case .observer: break
            }
        }
    }
}
