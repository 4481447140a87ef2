import Glibc

/// The two kernel clocks that together reveal a system sleep: `CLOCK_MONOTONIC` stops
/// while the system is suspended, `CLOCK_BOOTTIME` does not.
package struct SystemUptime: Sendable, Hashable {
    package var monotonic: Duration
    package var boot: Duration

    package init(monotonic: Duration, boot: Duration) {
        self.monotonic = monotonic
        self.boot = boot
    }

    /// Time spent asleep between `earlier` and `self`.
    package func sleptSince(_ earlier: SystemUptime) -> Duration {
        (boot - earlier.boot) - (monotonic - earlier.monotonic)
    }

    /// Reads both clocks now.
    package static func now() -> SystemUptime {
        SystemUptime(monotonic: read(CLOCK_MONOTONIC), boot: read(CLOCK_BOOTTIME))
    }

    private static func read(_ clock: Int32) -> Duration {
        var ts = timespec()
        clock_gettime(clockid_t(clock), &ts)
        return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
    }
}
