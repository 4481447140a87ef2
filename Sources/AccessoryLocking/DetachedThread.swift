#if canImport(Glibc)
import Glibc
#endif

/// A detached POSIX thread: for work that blocks in a system call (accept, recv, send) and
/// must stay off Swift's cooperative pool.
package enum DetachedThread {
    private final class Work {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Runs `work` on a new detached thread (a precondition failure if none can be made).
    package static func start(_ work: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Work(work)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            Unmanaged<Work>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
        pthread_detach(thread)
    }
}
