import Glibc

/// A value behind a pthread mutex, for state that ThreadSanitizer must be able to check.
///
/// Swift's `Mutex` on Linux hands a contended lock over inside the kernel (a PI futex), in a
/// library ThreadSanitizer does not instrument, so TSan reports races on data that `Mutex`
/// does protect. It understands pthread mutexes. Everything whose locking CI runs under TSan
/// uses this instead: the data plane, the AccessoryTesting simulation and the capture writer.
///
/// `Value` must not be empty (`()`, or a struct with no stored properties): ThreadSanitizer
/// takes an access to an empty stored property for one at the object's first word, which
/// every call reads unlocked, and reports a race where there is none.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable is safe: `value` is read and written only inside `withLock`,
    // between pthread_mutex_lock and pthread_mutex_unlock of `mutex`; the mutex lives at one
    // heap address from init to deinit and is never copied; and `Value` is Sendable, so what
    // is handed in and out may cross threads.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        assert(MemoryLayout<Value>.size > 0, "an empty value: ThreadSanitizer would report false races; see Locked")
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. `body` must not block or call back
    /// into code that takes this lock.
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension Locked {
    /// Runs `body` holding the lock, with `effects` for it to record what must happen
    /// outside the lock (continuations to resume, transfers to submit or cancel); then,
    /// after releasing it, `perform`s them. The one lock-and-effects shape of the data plane
    /// and the one-transfer calls.
    package func withLock<R, Effects>(
        _ effects: Effects, _ body: (inout Value, inout Effects) -> R, then perform: (Effects) -> Void
    ) -> R {
        var fx = effects
        let result = withLock { body(&$0, &fx) }
        perform(fx)
        return result
    }
}
