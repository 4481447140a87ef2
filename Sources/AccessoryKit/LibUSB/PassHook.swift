import Synchronization

/// What runs after each pass of libusb event handling (the hotplug batch's release, a
/// capture's records of the pass), added from any thread, run in the order added.
///
/// Each closure lives in a struct. Kept bare in a `Mutex`, it went through `withLock`'s generic
/// `inout` on every read and came back wrapped in two more reabstraction thunks each pass, so
/// each call cost more than the last: a fifth of `watch`'s CPU in a 2,000-cycle storm, and a
/// stack that an event thread running for long enough would overflow.
final class PassHook: Sendable {
    private struct Work: Sendable {
        let run: @Sendable () -> Void
    }

    private let work = Mutex<[Work]>([])

    /// A hook with nothing to run.
    init() {}

    /// Adds to what ``run()`` runs.
    func add(_ run: @escaping @Sendable () -> Void) {
        work.withLock { $0.append(Work(run: run)) }
    }

    /// Runs what was added, in order (outside the lock).
    func run() {
        for w in work.withLock({ $0 }) { w.run() }
    }
}
