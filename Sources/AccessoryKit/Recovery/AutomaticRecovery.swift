import AccessoryCore

/// A manager's automatic recovery (``AccessoryManager/Configuration/recovery``): it carries out
/// ``RecoveryScheduler``'s decisions. It keeps the timeout watch that each connection's
/// sessions share, the host timer for ports whose accessory vanished, and the recoveries
/// under way, one task per port.
///
/// It lives in its manager's isolation: the manager holds it, and every method that acts
/// runs there (it takes the manager `isolated`).
final class AutomaticRecovery {
    /// The decisions: the policy, each port's budget, vanished accessories, and the ports being
    /// recovered, requested recoveries included.
    var scheduler: RecoveryScheduler
    private let policy: RecoveryPolicy?
    /// Each connection's timeout count, shared by its sessions, while it has had one.
    private var timeoutWatches: [ConnectionID: TimeoutWatch] = [:]
    /// The host timer for ``scheduler``'s next deadline.
    private var timer: (at: Duration, timer: HostTimer)?
    /// The automatic recoveries under way, by port.
    private var tasks: [String: Task<Void, Never>] = [:]

    init(policy: RecoveryPolicy?) {
        self.policy = policy
        scheduler = RecoveryScheduler(policy: policy)
    }

    deinit { stop() }

    // MARK: The manager's connections

    /// A connection began.
    func connected(_ accessory: Accessory) {
        scheduler.connected(accessory)
    }

    /// A connection ended: its timeout watch goes, and, when the policy brings back vanished
    /// accessories, the scheduler notes the port.
    func disconnected(_ accessory: Accessory, reason: DisconnectReason, at now: Duration) {
        if !timeoutWatches.isEmpty { timeoutWatches[accessory.connectionID] = nil }
        if policy?.vanishedFor != nil { scheduler.disconnected(accessory, reason: reason, at: now) }
    }

    /// Whether a connection's end can start a timer (the policy has `vanishedFor`).
    var watchesVanished: Bool { policy?.vanishedFor != nil }

    /// The timeout watch of connection `id`, shared by its sessions (made at the first);
    /// `nil` when the policy does not count timeouts. A completed streak reaches
    /// ``timedOut(_:count:endpoint:on:)`` through the manager's inbox.
    func timeoutWatch(for id: ConnectionID, on manager: isolated AccessoryManager) -> TimeoutWatch? {
        guard let limit = policy?.afterTimeouts else { return nil }
        if let watch = timeoutWatches[id] { return watch }
        let inbox = manager.inbox
        let watch = TimeoutWatch(limit: limit) { [weak manager] count, endpoint in
            _ = inbox.post { [weak manager] in
                guard let manager else { return }
                await Self.timedOut(id, count: count, endpoint: endpoint, on: manager)
            }
        }
        timeoutWatches[id] = watch
        return watch
    }

    // MARK: Acting

    /// The sessions on connection `id` had `count` timeouts in a row, the last on `endpoint`.
    private static func timedOut(_ id: ConnectionID, count: Int, endpoint: UInt8, on manager: isolated AccessoryManager) {
        guard !manager.isShutDown, let accessory = manager.tracker[id] else { return }
        let recovery = manager.automaticRecovery
        guard let decision = recovery.scheduler.timedOut(count, on: endpoint, of: accessory, at: manager.host.uptime().monotonic) else {
            manager.logger.debug("\(count) timeouts on connection \(id); a recovery of port \(accessory.descriptor.port) is under way")
            return
        }
        recovery.start(decision, on: manager)
    }

    /// Arms the host's timer for the scheduler's next deadline (an accessory that vanished),
    /// or disarms it when nothing waits.
    func arm(on manager: isolated AccessoryManager) {
        guard !manager.isShutDown else { return }
        let next = scheduler.nextDeadline
        if timer?.at == next { return }
        timer?.timer.cancel()
        timer = nil
        guard let next else { return }
        timer = (next, manager.host.schedule(at: next) { [weak manager] in
            guard let manager else { return }
            await Self.timerFired(at: next, on: manager)
        })
    }

    /// The timer for `deadline` fell due: starts what the scheduler says is due.
    private static func timerFired(at deadline: Duration, on manager: isolated AccessoryManager) {
        let recovery = manager.automaticRecovery
        guard !manager.isShutDown, recovery.timer?.at == deadline else { return }
        recovery.timer = nil
        for decision in recovery.scheduler.due(at: max(deadline, manager.host.uptime().monotonic)) { recovery.start(decision, on: manager) }
        recovery.arm(on: manager)
    }

    /// Carries out a decision: a recovery in a task of its own (the manager goes on), or the
    /// report of one the budget did not allow.
    private func start(_ decision: RecoveryScheduler.Decision, on manager: isolated AccessoryManager) {
        let accessory = decision.accessory
        let (port, label) = (accessory.descriptor.port, AccessorySession.label(accessory))
        switch decision {
        case .budgetSpent(_, let trigger, let next):
            let budget = scheduler.budget
            let when = next.map { "next allowed in \(RecoveryScheduler.seconds(max(.zero, $0 - manager.host.uptime().monotonic)))" } ?? "never allowed"
            let why =
                "the budget of \(budget.limit) recover\(budget.limit == 1 ? "y" : "ies") per \(RecoveryScheduler.seconds(budget.window)) on port \(port) is spent; \(when)"
            manager.logger.warning("not recovering accessory \(label) (\(trigger)): \(why)")
            manager.recoveryWatchers.send(
                RecoveryReport(port: port, trigger: trigger, steps: [], before: accessory, accessory: nil, duration: .zero, skipped: why))
        case .recover(_, let trigger), .bringBack(_, let trigger):
            var vanished = false
            if case .bringBack = decision { vanished = true }
            let ladder = RecoveryLadder(accessory: accessory, steps: scheduler.steps(for: decision), trigger: trigger, vanished: vanished)
            manager.logger.notice("recovering accessory \(label) on port \(port) (\(trigger)): \(ladder.steps.map(\.name).joined(separator: ", "))")
            tasks[port] = Self.task(running: ladder, for: manager)
        }
    }

    /// A task that runs `ladder` for `manager`, unless the manager is gone by then.
    private static func task(running ladder: RecoveryLadder, for manager: AccessoryManager) -> Task<Void, Never> {
        Task { [weak manager] in
            guard let manager else { return }
            await recover(ladder, on: manager)
        }
    }

    /// Runs an automatic recovery, then frees its port.
    private static func recover(_ ladder: RecoveryLadder, on manager: isolated AccessoryManager) async {
        let port = ladder.accessory.descriptor.port
        do throws(AccessoryError) {
            let back = try await ladder.run(on: manager)
            manager.logger.notice("recovered accessory \(AccessorySession.label(back)) on port \(port) (\(ladder.trigger))")
        } catch {
            manager.logger.warning("\(error.message) (\(ladder.trigger))")
        }
        manager.automaticRecovery.scheduler.finished(port: port)
        manager.automaticRecovery.tasks[port] = nil
    }

    /// No more automatic recoveries: the timer is disarmed and those under way are cancelled
    /// (at the manager's shutdown).
    func stop() {
        timer?.timer.cancel()
        timer = nil
        for task in tasks.values { task.cancel() }
    }
}
