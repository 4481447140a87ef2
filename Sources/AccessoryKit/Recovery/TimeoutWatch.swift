import AccessoryCore
import AccessoryLocking

/// One connection's ``TimeoutStreak``, shared by every session on it: their one-transfer
/// calls count timeouts here, a call that worked resets the count, and a completed streak is
/// handed to the manager (``AccessoryManager``'s automatic recovery). Counting under a lock,
/// in completion order, keeps the hot path free of actor hops.
final class TimeoutWatch: Sendable {
    private let streak: Locked<TimeoutStreak>
    /// Told of each completed streak: its length and the endpoint of its last timeout.
    private let reached: @Sendable (_ count: Int, _ endpoint: UInt8) -> Void

    init(limit: Int, reached: @escaping @Sendable (_ count: Int, _ endpoint: UInt8) -> Void) {
        streak = Locked(TimeoutStreak(limit: limit))
        self.reached = reached
    }

    /// A transfer on `endpoint` timed out.
    func timedOut(on endpoint: UInt8) {
        if let count = streak.withLock({ $0.timedOut() }) { reached(count, endpoint) }
    }

    /// A transfer worked.
    func succeeded() {
        streak.withLock { $0.succeeded() }
    }
}
