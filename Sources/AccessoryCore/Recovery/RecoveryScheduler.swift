/// Which automatic recoveries a manager runs, and when: a pure value that a
/// ``RecoveryPolicy`` configures and the manager feeds (a streak of timeouts, a connect, a
/// disconnect, the clock reaching ``nextDeadline``). Each input returns what to do; the
/// scheduler reads no clock and runs nothing.
///
/// - A streak of timeouts (``TimeoutStreak``) on a connection asks for the ladder, up to the
///   policy's `upTo`, with a trigger such as `3 timeouts on 0x81`.
/// - With `vanishedFor`, an accessory that left its port (`unplugged`, or evicted as a
///   ghost) and that nothing replaced for that long asks for its port's power to be cycled
///   (trigger `vanished for 10 s`). Any accessory arriving on the port ends the wait.
/// - Each recovery spends one of the port's ``RecoveryBudget``; beyond it the scheduler says
///   ``Decision/budgetSpent(_:trigger:nextAllowed:)`` instead, so a dead device never loops.
/// - One recovery per port at a time, requested ones included (``begin(port:)``): a trigger
///   on a port that is being recovered is dropped, and ends nothing.
public struct RecoveryScheduler: Sendable {
    /// What to do about an accessory.
    public enum Decision: Sendable, Hashable {
        /// Run the ladder on the connected `accessory`, up to the policy's `upTo`.
        case recover(Accessory, trigger: String)
        /// Bring back `accessory`, which vanished from its port: the ladder's steps that
        /// need no device (a power cycle, the command), up to the policy's `upTo`.
        case bringBack(Accessory, trigger: String)
        /// The port had its budget: nothing runs. `nextAllowed` is when it may be recovered
        /// again (`nil`: never, the budget is 0).
        case budgetSpent(Accessory, trigger: String, nextAllowed: Duration?)

        /// The accessory it is about.
        public var accessory: Accessory {
            switch self {
            case .recover(let a, _), .bringBack(let a, _), .budgetSpent(let a, _, _): return a
            }
        }

        /// Why: `3 timeouts on 0x81`, `vanished for 10 s`.
        public var trigger: String {
            switch self {
            case .recover(_, let t), .bringBack(_, let t), .budgetSpent(_, let t, _): return t
            }
        }
    }

    /// The policy; `nil`: nothing is automatic, only ``begin(port:)`` is kept.
    public let policy: RecoveryPolicy?
    /// Each port's recoveries.
    public private(set) var budget: RecoveryBudget
    /// Ports whose accessory vanished, with when their wait ends.
    private var vanished: [String: (accessory: Accessory, due: Duration)] = [:]
    /// Ports being recovered now.
    private var running: Set<String> = []

    /// A scheduler for `policy` (`nil`: no automatic recovery).
    public init(policy: RecoveryPolicy?) {
        self.policy = policy
        budget = policy.map(RecoveryBudget.init) ?? RecoveryBudget(limit: 0, window: .seconds(1))
    }

    /// The steps a decision runs, in order.
    public func steps(for decision: Decision) -> [RecoveryStep] {
        let last = policy?.upTo ?? .powerCycle
        switch decision {
        case .recover: return RecoveryStep.ladder(upTo: last)
        case .bringBack: return RecoveryStep.ladder(upTo: last).filter { $0 >= .powerCycle }
        case .budgetSpent: return []
        }
    }

    // MARK: Inputs

    /// A streak of `count` timeouts on `endpoint` in the sessions on `accessory`.
    /// - Returns: `nil` when timeouts start nothing (no policy, `afterTimeouts` `nil`) or the
    ///   port is being recovered.
    public mutating func timedOut(_ count: Int, on endpoint: UInt8, of accessory: Accessory, at now: Duration) -> Decision? {
        guard policy?.afterTimeouts != nil else { return nil }
        let trigger = "\(count) timeout\(count == 1 ? "" : "s") on \(Self.hex(endpoint))"
        return decide(.recover(accessory, trigger: trigger), at: now)
    }

    /// `accessory` connected: its port is no longer empty.
    public mutating func connected(_ accessory: Accessory) {
        if !vanished.isEmpty { vanished[accessory.descriptor.port] = nil }
    }

    /// `accessory` disconnected for `reason`: with `vanishedFor`, an accessory that left
    /// (`unplugged`, `ghost-evicted`) starts its port's wait; one a recovery ended, or a
    /// shutdown, does not.
    public mutating func disconnected(_ accessory: Accessory, reason: DisconnectReason, at now: Duration) {
        guard let wait = policy?.vanishedFor, !steps(for: .bringBack(accessory, trigger: "")).isEmpty else { return }
        switch reason {
        case .unplugged, .ghostEvicted:
            let port = accessory.descriptor.port
            guard !running.contains(port) else { return }
            vanished[port] = (accessory, now + wait)
        default:
            return
        }
    }

    /// When ``due(at:)`` must be called next; `nil`: no wait is under way.
    public var nextDeadline: Duration? {
        vanished.values.map(\.due).min()
    }

    /// The waits that ended by `now`, in port order: each port's decision.
    public mutating func due(at now: Duration) -> [Decision] {
        guard let wait = policy?.vanishedFor else { return [] }
        let ended = vanished.filter { $0.value.due <= now }.sorted { $0.key < $1.key }
        var decisions: [Decision] = []
        for (port, entry) in ended {
            vanished[port] = nil
            if let decision = decide(.bringBack(entry.accessory, trigger: "vanished for \(Self.seconds(wait))"), at: now) {
                decisions.append(decision)
            }
        }
        return decisions
    }

    /// A recovery of `port` that nobody scheduled (one requested) is about to start.
    /// - Returns: `false` when one is under way there already.
    public mutating func begin(port: String) -> Bool {
        running.insert(port).inserted
    }

    /// The recovery of `port` ended (recovered or not), or a decision was not carried out.
    public mutating func finished(port: String) {
        running.remove(port)
    }

    /// Whether a recovery of `port` is under way.
    public func isRecovering(port: String) -> Bool {
        running.contains(port)
    }

    // MARK: Deciding

    /// `wanted`, if the port is free and its budget allows; else the budget's refusal.
    private mutating func decide(_ wanted: Decision, at now: Duration) -> Decision? {
        let port = wanted.accessory.descriptor.port
        guard !running.contains(port) else { return nil }
        guard budget.spend(port: port, at: now) else {
            return .budgetSpent(wanted.accessory, trigger: wanted.trigger, nextAllowed: budget.nextAllowed(port: port, at: now))
        }
        running.insert(port)
        vanished[port] = nil
        return wanted
    }

    /// `0x81`.
    static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return "0x" + (digits.count < 2 ? "0" : "") + digits
    }

    /// `10 s`, `1.5 s`, `0.25 s`.
    public static func seconds(_ d: Duration) -> String {
        let (s, attoseconds) = d.components
        let millis = Int64((Double(attoseconds) / 1e15).rounded())
        if millis == 0 { return "\(s) s" }
        var fraction = String(millis)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(s).\(fraction) s"
    }
}
