import Synchronization

/// What runs after each pass of libusb event handling (the hotplug batch's release, a
/// capture's records of the pass), added from any thread, run in the order added.
///
/// Each closure lives in a struct, so that each pass reads back the closure that was added. A
/// closure kept bare as a `Mutex`'s value is reabstracted at every `withLock` (its generic
/// `inout` writes back a wrapped closure), so each pass would add thunks, and each call would
/// cost more and run deeper than the last (`PassHookTests` checks the depth stays the same).
final class PassHook: Sendable {
    private struct Work: Sendable {
        let run: @Sendable () -> ContinuousClock.Instant?
    }

    private let work = Mutex<[Work]>([])

    /// A hook with nothing to run.
    init() {}

    /// Adds to what ``run()`` runs: a closure that may return when it must run again (it
    /// held something back), even if no event comes before.
    func add(_ run: @escaping @Sendable () -> ContinuousClock.Instant?) {
        work.withLock { $0.append(Work(run: run)) }
    }

    /// Runs what was added, in order (outside the lock).
    /// - Returns: the earliest time one of them must run again, if any asked.
    func run() -> ContinuousClock.Instant? {
        var due: ContinuousClock.Instant?
        for w in work.withLock({ $0 }) {
            if let at = w.run() { due = min(due ?? at, at) }
        }
        return due
    }
}
