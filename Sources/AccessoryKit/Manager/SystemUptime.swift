import Glibc

/// The two kernel clocks that together reveal a system sleep: `CLOCK_MONOTONIC` stops
/// while the system is suspended, `CLOCK_BOOTTIME` does not.
struct SystemUptime: Sendable, Hashable {
    var monotonic: Duration
    var boot: Duration

    /// Time spent asleep between `earlier` and `self`.
    func sleptSince(_ earlier: SystemUptime) -> Duration {
        (boot - earlier.boot) - (monotonic - earlier.monotonic)
    }

    /// Reads both clocks now.
    static func now() -> SystemUptime {
        SystemUptime(monotonic: read(CLOCK_MONOTONIC), boot: read(CLOCK_BOOTTIME))
    }

    private static func read(_ clock: Int32) -> Duration {
        var ts = timespec()
        clock_gettime(clockid_t(clock), &ts)
        return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
    }
}
