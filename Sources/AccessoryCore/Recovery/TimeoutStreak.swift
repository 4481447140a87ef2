/// Consecutive transfer timeouts on one connection, against a ``RecoveryPolicy``'s
/// `afterTimeouts`: a transfer that works resets the count. Pure.
public struct TimeoutStreak: Sendable, Hashable {
    /// How many consecutive timeouts make a streak.
    public let limit: Int
    /// Timeouts since the last transfer that worked (or the last streak).
    public private(set) var count = 0

    /// A streak of `limit` timeouts (at least 1).
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// One more transfer timed out.
    /// - Returns: the streak's length when this timeout completes one (the count then starts
    ///   again from 0), else `nil`.
    public mutating func timedOut() -> Int? {
        count += 1
        guard count >= limit else { return nil }
        defer { count = 0 }
        return count
    }

    /// A transfer worked: the count starts again.
    public mutating func succeeded() {
        count = 0
    }
}
