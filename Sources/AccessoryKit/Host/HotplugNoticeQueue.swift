import AccessoryLocking
/// The hotplug notices a host hands its manager: unbounded, so the producer (libusb's event
/// thread) never waits, and drained whole, so a consumer that falls behind in a storm takes
/// everything queued in one wake-up instead of one per notice.
///
/// One consumer at a time. Not an `AsyncStream`: that one is generic code the optimizer
/// cannot specialize across the standard library's boundary, and a storm paid for its
/// metadata lookups and per-element wake-ups on every notice.
package final class HotplugNoticeQueue: Sendable {
    private struct State: Sendable {
        var queued: [HotplugNotice] = []
        /// The consumer, waiting while nothing is queued.
        var waiter: CheckedContinuation<[HotplugNotice], Never>?
        var isFinished = false
        /// How many notices the consumer took with its last batch.
        var handedOut = 0
    }

    /// A pthread mutex (``Locked``), not `Mutex`: the manager's suites run under
    /// ThreadSanitizer, which cannot see `Mutex`'s hand-over in the kernel and reported a
    /// race here that the lock does prevent.
    private let state = Locked(State())
    private let onHandled: (@Sendable (_ count: Int) -> Void)?

    /// A queue.
    /// - Parameter onHandled: told how many notices the consumer has handled, each time it
    ///   comes back for more (its last batch is then done) — what a simulated host waits for,
    ///   so that a test sees a plug's effect once the plug returns.
    package init(onHandled: (@Sendable (_ count: Int) -> Void)? = nil) {
        self.onHandled = onHandled
    }

    /// Queues a notice, or hands it straight to a waiting consumer; never waits. Does
    /// nothing once the queue is finished.
    package func yield(_ notice: HotplugNotice) {
        let waiter = state.withLock { s -> CheckedContinuation<[HotplugNotice], Never>? in
            guard !s.isFinished else { return nil }
            // A consumer waits only while nothing is queued, so this notice is all there is.
            if let w = s.waiter {
                s.waiter = nil
                s.handedOut = 1
                return w
            }
            s.queued.append(notice)
            return nil
        }
        waiter?.resume(returning: [notice])
    }

    /// Queues a notice without waking the consumer: the producer calls ``release()`` once it
    /// has queued a whole batch (libusb's event thread, after each pass of event handling),
    /// so a storm costs one hand-off per batch, not one per notice.
    package func hold(_ notice: HotplugNotice) {
        state.withLock { s in
            if !s.isFinished { s.queued.append(notice) }
        }
    }

    /// Hands everything held to a waiting consumer, if there is one and anything is held.
    package func release() {
        let handOff = state.withLock { s -> (CheckedContinuation<[HotplugNotice], Never>, [HotplugNotice])? in
            guard let w = s.waiter, !s.queued.isEmpty else { return nil }
            s.waiter = nil
            s.handedOut = s.queued.count
            defer { s.queued = [] }
            return (w, s.queued)
        }
        if let (waiter, batch) = handOff { waiter.resume(returning: batch) }
    }

    /// Whether a consumer is waiting in ``next()`` now (for tests that must know it waits).
    package var isConsumerWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Ends the queue: the consumer gets what is still queued, then an empty batch.
    package func finish() {
        let waiter = state.withLock { s -> CheckedContinuation<[HotplugNotice], Never>? in
            s.isFinished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: [])
    }

    /// Every notice queued, in order, waiting until there is at least one.
    /// - Returns: an empty batch once the queue is finished and drained, or when the
    ///   calling task is cancelled.
    package func next() async -> [HotplugNotice] {
        if let onHandled {
            let done = state.withLock { s in
                defer { s.handedOut = 0 }
                return s.handedOut
            }
            if done > 0 { onHandled(done) }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[HotplugNotice], Never>) in
                let ready = state.withLock { s -> [HotplugNotice]? in
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
            let waiter = state.withLock { s -> CheckedContinuation<[HotplugNotice], Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: [])
        }
    }
}
