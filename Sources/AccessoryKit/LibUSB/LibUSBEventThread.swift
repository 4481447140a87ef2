internal import CLibUSB
import Glibc
import Logging
import Synchronization

/// The one thread that handles libusb events for a context: it runs
/// `libusb_handle_events_timeout_completed` until stopped. Hotplug callbacks and transfer
/// completions run on it, so nothing on it may block.
final class LibUSBEventThread: Sendable {
    let context: LibUSBContext
    private let logger: Logger
    private let stopRequested = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)
    /// Runs after each pass of event handling, in order: what the pass's callbacks held is
    /// released (the hotplug batch, a capture's records and the completions behind them).
    private let afterEachPass = PassHook()

    /// How long one wait for events lasts before the stop flag is checked again. Stopping
    /// also interrupts the wait, so this only bounds a missed wake-up.
    static let pollInterval = timeval(tv_sec: 0, tv_usec: 500_000)

    /// How long the next wait for events may last: ``pollInterval``, or less when a hook
    /// must run again sooner (`due`, which may be past: then not at all).
    static func waitForEvents(until due: ContinuousClock.Instant?, now: ContinuousClock.Instant) -> timeval {
        guard let due else { return pollInterval }
        let wait = max(due - now, .zero).components
        let microseconds = wait.seconds * 1_000_000 + wait.attoseconds / 1_000_000_000_000
        return microseconds < Int64(pollInterval.tv_usec) ? timeval(tv_sec: 0, tv_usec: Int(microseconds)) : pollInterval
    }

    init(context: LibUSBContext, logger: Logger) {
        self.context = context
        self.logger = logger
    }

    deinit {
        stop()
    }

    /// Starts the thread. Starting a running or stopped thread does nothing.
    func start() throws(AccessoryError) {
        let result: Int32 = thread.withLock { thread in
            guard thread == nil, !stopRequested.load(ordering: .acquiring) else { return 0 }
            var id = pthread_t()
            let box = Unmanaged.passRetained(self).toOpaque()
            let status = pthread_create(&id, nil, { argument in
                let owner = Unmanaged<LibUSBEventThread>.fromOpaque(argument!).takeRetainedValue()
                owner.run()
                return nil
            }, box)
            if status == 0 {
                thread = id
            } else {
                Unmanaged<LibUSBEventThread>.fromOpaque(box).release()
            }
            return status
        }
        guard result == 0 else {
            throw AccessoryError(.io, "cannot start the libusb event thread: errno \(result)", operation: "pthread_create", rawValue: result)
        }
    }

    /// Asks the thread to stop, wakes it, and waits until it has exited. Idempotent.
    /// Must not be called from the event thread itself.
    func stop() {
        stopRequested.store(true, ordering: .releasing)
        guard let id = thread.withLock({ t -> pthread_t? in defer { t = nil }; return t }) else { return }
        precondition(pthread_equal(id, pthread_self()) == 0, "the libusb event thread cannot stop itself")
        context.interruptEventHandler()
        pthread_join(id, nil)
    }

    /// Adds what runs after each pass of event handling (the hotplug batch's release, a
    /// capture's records of the pass). It may return when it must run again (it held
    /// something back): the next pass then waits no longer than that for events.
    func addAfterEachPass(_ work: @escaping @Sendable () -> ContinuousClock.Instant?) {
        afterEachPass.add(work)
    }

    /// Whether the calling thread is a libusb event thread. Completion callbacks run there,
    /// inside libusb's event handling, where `libusb_close` must not be called.
    static var isCurrent: Bool { pthread_getspecific(marker) != nil }

    /// A thread-specific key, set (to any non-nil value) on every event thread.
    private static let marker: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private func run() {
        pthread_setspecific(Self.marker, UnsafeRawPointer(bitPattern: 1))
        var failures = 0
        var due: ContinuousClock.Instant?
        while !stopRequested.load(ordering: .acquiring) {
            var timeout = Self.waitForEvents(until: due, now: .now)
            let status = context.withUnsafeContext { libusb_handle_events_timeout_completed($0, &timeout, nil) }
            due = afterEachPass.run()
            if status < 0 && status != LIBUSB_ERROR_INTERRUPTED.rawValue {
                failures += 1
                if failures == 1 || failures % 100 == 0 {
                    logger.warning("libusb event handling failed: \(String(cString: libusb_error_name(status))) (\(failures) times)")
                }
                usleep(10_000)  // never spin on a persistent error
            } else {
                failures = 0
            }
        }
    }
}
