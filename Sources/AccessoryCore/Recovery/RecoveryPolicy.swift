/// When a manager recovers accessories by itself, and how far up the ladder it goes.
///
/// A recovery starts after `afterTimeouts` consecutive transfer timeouts in an accessory's
/// sessions, or, with `vanishedFor`, when an accessory left its port and nothing replaced it
/// for that long (then only a power cycle can bring it back). Each port gets at most `budget`
/// recoveries in any `per` window, so a dead device is never cycled forever.
public struct RecoveryPolicy: Hashable, Sendable {
    /// The harshest step tried.
    public var upTo: RecoveryStep
    /// Consecutive timeouts (on any of an accessory's endpoints, with no transfer that
    /// worked between them) that start a recovery; `nil`: timeouts never do.
    public var afterTimeouts: Int?
    /// How long a port stays empty after its accessory vanished before its power is cycled;
    /// `nil`: vanished accessories are left alone.
    public var vanishedFor: Duration?
    /// Recoveries allowed per port in any window of `per`.
    public var budget: Int
    /// The budget's window.
    public var per: Duration
    /// The external command of the `.command` step, as arguments (`nil`: no such step).
    public var command: [String]?

    /// A policy; the defaults recover after 3 timeouts, up to a power cycle, at most 3 times
    /// per port per hour.
    public init(
        upTo: RecoveryStep = .powerCycle, afterTimeouts: Int? = 3, vanishedFor: Duration? = nil, budget: Int = 3,
        per: Duration = .seconds(3600), command: [String]? = nil
    ) {
        self.upTo = upTo
        self.afterTimeouts = afterTimeouts.map { max(1, $0) }
        self.vanishedFor = vanishedFor
        self.budget = max(0, budget)
        self.per = per
        self.command = command
    }
}
