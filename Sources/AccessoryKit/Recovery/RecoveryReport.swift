import AccessoryCore

/// What one recovery did: why it ran, each step it tried with its outcome, and the accessory
/// it left behind. ``AccessoryManager/recoveries()`` yields one per recovery, automatic or
/// requested.
public struct RecoveryReport: Sendable {
    /// The port the accessory was on (`1-1.4`).
    public var port: String
    /// Why it ran: `requested`, `3 timeouts on 0x81`, `vanished for 10 s`.
    public var trigger: String
    /// Each step tried, in order, with what happened (`recovered`, `did not come back within
    /// 5 s`, `hub 1-1 switches its ports together (ganged), skipped`).
    public var steps: [(step: RecoveryStep, outcome: String)]
    /// The accessory before the recovery.
    public var before: Accessory
    /// The accessory after it: the same connection when a reset kept the device in place,
    /// else the new one, whose `previousConnectionID` names ``before``; `nil` when the ladder
    /// failed.
    public var accessory: Accessory?
    /// How long the recovery took.
    public var duration: Duration
    /// Why no step ran, when none did: an automatic recovery the port's budget
    /// (`RecoveryPolicy`'s `budget` per `per`) did not allow, such as `the budget of 1
    /// recovery per 3600 s on port 1-1.4 is spent; next allowed in 3590 s`. `nil` when the
    /// ladder ran.
    public var skipped: String? = nil

    /// Whether the accessory came back and answered (`false` for a skipped recovery too).
    public var recovered: Bool { accessory != nil }
}
