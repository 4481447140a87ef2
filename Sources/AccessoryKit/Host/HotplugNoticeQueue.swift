import AccessoryLocking
/// The manager's inbox: the hotplug notices a host hands it, and the news its own sessions
/// post from their transfers' completions (a NO_DEVICE, timeouts in a row), in one order.
/// Unbounded, so a producer (libusb's event thread) never waits, and drained whole, so a
/// consumer that falls behind in a storm takes everything queued in one wake-up instead of
/// one per notice.
///
/// One consumer at a time. Not an `AsyncStream`, whose generic code the optimizer cannot
/// specialize across the standard library's boundary and which hands over one element per
/// wake-up: this queue hands over a whole batch per wake-up.
package final class HotplugNoticeQueue: Sendable {
    /// One thing the consumer takes.
    package enum Item: Sendable {
        case notice(HotplugNotice)
        /// Work for the manager, run in its turn: news from a transfer's completion.
        case news(@Sendable () async -> Void)
    }

    private struct State: Sendable {
        var queued: [Item] = []
        /// The consumer, waiting while nothing is queued.
        var waiter: CheckedContinuation<[Item], Never>?
        var isFinished = false
        /// How many items the consumer took with its last batch.
        var handedOut = 0
        /// How many notices were ever queued or handed over.
        var noticesReceived = 0
        /// When ``release(pacedBy:at:)`` last handed a batch over.
        var lastRelease: ContinuousClock.Instant?
    }

    /// A pthread mutex (``Locked``), not `Mutex`: the manager's suites run under
    /// ThreadSanitizer, which cannot see `Mutex`'s hand-over in the kernel and reported a
    /// race here that the lock does prevent.
    private let state = Locked(State())
    private let onPosted: (@Sendable () -> Void)?
    private let onHandled: (@Sendable (_ count: Int) -> Void)?

    /// A queue.
    /// - Parameters:
    ///   - onPosted: told, before it is queued, of each piece of news ``post(_:)`` takes (a
    ///     host's own notices it counts itself).
    ///   - onHandled: told how many items (notices and news) the consumer has handled, each
    ///     time it comes back for more (its last batch is then done) — what a simulated host
    ///     waits for, so that a test sees a plug's effect once the plug returns.
    package init(onPosted: (@Sendable () -> Void)? = nil, onHandled: (@Sendable (_ count: Int) -> Void)? = nil) {
        self.onPosted = onPosted
        self.onHandled = onHandled
    }

    /// Queues a notice, or hands it straight to a waiting consumer; never waits. Does
    /// nothing once the queue is finished.
    package func yield(_ notice: HotplugNotice) {
        _ = enqueue(.notice(notice))
    }

    /// Queues news for the manager, behind the notices queued before it; never waits.
    /// - Returns: `false` once the queue is finished (the news is dropped: the caller acts
    ///   on its own).
    package func post(_ news: @escaping @Sendable () async -> Void) -> Bool {
        onPosted?()
        guard enqueue(.news(news)) else {
            onHandled?(1)  // what onPosted counted will never be handled
            return false
        }
        return true
    }

    private func enqueue(_ item: Item) -> Bool {
        let (accepted, waiter) = state.withLock { s -> (Bool, CheckedContinuation<[Item], Never>?) in
            guard !s.isFinished else { return (false, nil) }
            if case .notice = item { s.noticesReceived &+= 1 }
            // A consumer waits only while nothing is queued, so this item is all there is.
            if let w = s.waiter {
                s.waiter = nil
                s.handedOut = 1
                return (true, w)
            }
            s.queued.append(item)
            return (true, nil)
        }
        waiter?.resume(returning: [item])
        return accepted
    }

    /// Queues a notice without waking the consumer: the producer calls ``release()`` once it
    /// has queued a whole batch (libusb's event thread, after each pass of event handling),
    /// so a storm costs one hand-off per batch, not one per notice.
    package func hold(_ notice: HotplugNotice) {
        state.withLock { s in
            guard !s.isFinished else { return }
            s.queued.append(.notice(notice))
            s.noticesReceived &+= 1
        }
    }

    /// Hands everything held to a waiting consumer, if there is one and anything is held.
    package func release() {
        _ = release(pacedBy: .zero, at: .now)
    }

    /// How many notices the queue has taken in so far (held ones too): a consumer that has
    /// handled fewer has some still to come.
    package var noticesReceived: Int { state.withLock { $0.noticesReceived } }

    /// Hands everything held to a waiting consumer, at most once per `interval` (`.zero`:
    /// every time, as ``release()``): the first batch after a quiet spell goes
    /// at once; in a storm, what comes within `interval` of the last hand-off waits for the
    /// next one, so the consumer wakes once for many notices instead of once for one or two.
    /// - Returns: when to call again, if something is held back; `nil` otherwise (nothing
    ///   held, or a consumer that is busy takes it all when it comes back).
    package func release(pacedBy interval: Duration, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let (handOff, due) = state.withLock { s -> ((CheckedContinuation<[Item], Never>, [Item])?, ContinuousClock.Instant?) in
            guard let w = s.waiter, !s.queued.isEmpty else { return (nil, nil) }
            if let last = s.lastRelease, now < last + interval { return (nil, last + interval) }
            s.waiter = nil
            s.lastRelease = now
            s.handedOut = s.queued.count
            defer { s.queued = [] }
            return ((w, s.queued), nil)
        }
        if let (waiter, batch) = handOff { waiter.resume(returning: batch) }
        return due
    }

    /// Whether a consumer is waiting in ``next()`` now (for tests that must know it waits).
    package var isConsumerWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Ends the queue: the consumer gets what is still queued, then an empty batch.
    package func finish() {
        let waiter = state.withLock { s -> CheckedContinuation<[Item], Never>? in
            s.isFinished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: [])
    }

    /// Everything queued, in order, waiting until there is at least one item.
    /// - Returns: an empty batch once the queue is finished and drained, or when the
    ///   calling task is cancelled.
    package func next() async -> [Item] {
        if let onHandled {
            let done = state.withLock { s in
                defer { s.handedOut = 0 }
                return s.handedOut
            }
            if done > 0 { onHandled(done) }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[Item], Never>) in
                let ready = state.withLock { s -> [Item]? in
                    if !s.queued.isEmpty {
                        s.handedOut = s.queued.count
                        defer { s.queued = [] }
                        return s.queued
                    }
                    if s.isFinished || Task.isCancelled { return [] }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<[Item], Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: [])
        }
    }
}
