/// How many recoveries each port has had lately, against a ``RecoveryPolicy``'s budget: at
/// most `limit` in any window of `window`. Pure: the caller gives every time.
public struct RecoveryBudget: Sendable {
    /// Recoveries allowed per port in any window.
    public let limit: Int
    /// The window's length.
    public let window: Duration
    /// Each port's recoveries within the window, oldest first.
    private var spent: [String: [Duration]] = [:]

    /// An unspent budget.
    public init(limit: Int, window: Duration) {
        self.limit = max(0, limit)
        self.window = window
    }

    /// The budget of `policy`.
    public init(_ policy: RecoveryPolicy) {
        self.init(limit: policy.budget, window: policy.per)
    }

    /// How many more recoveries `port` may have at `now`.
    public func remaining(port: String, at now: Duration) -> Int {
        limit - (spent[port]?.count { now - $0 < window } ?? 0)
    }

    /// When `port` may next be recovered: `now` if it may be now; `nil` when the budget is
    /// zero.
    public func nextAllowed(port: String, at now: Duration) -> Duration? {
        guard limit > 0 else { return nil }
        let recent = (spent[port] ?? []).filter { now - $0 < window }
        return recent.count < limit ? now : recent[recent.count - limit] + window
    }

    /// Spends one recovery of `port` at `now`, if one is left.
    /// - Returns: whether it was (`false`: the port has had its budget).
    public mutating func spend(port: String, at now: Duration) -> Bool {
        var times = (spent[port] ?? []).filter { now - $0 < window }
        guard times.count < limit else {
            spent[port] = times
            return false
        }
        times.append(now)
        spent[port] = times
        return true
    }
}
