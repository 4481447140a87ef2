import AccessoryCore

extension AccessoryManager {
    /// The timeout watch of connection `id`, shared by its sessions (made at the first);
    /// `nil` when the configuration's ``RecoveryPolicy`` does not count timeouts.
    func timeoutWatch(for id: ConnectionID) -> TimeoutWatch? {
        guard let limit = configuration.recovery?.afterTimeouts else { return nil }
        if let watch = timeoutWatches[id] { return watch }
        let watch = TimeoutWatch(limit: limit) { [weak self, inbox] count, endpoint in
            _ = inbox.post { [weak self] in await self?.sessionsTimedOut(id, count: count, endpoint: endpoint) }
        }
        timeoutWatches[id] = watch
        return watch
    }

    /// The sessions on connection `id` had `count` timeouts in a row, the last on `endpoint`.
    func sessionsTimedOut(_ id: ConnectionID, count: Int, endpoint: UInt8) {
        guard !isShutDown, let accessory = tracker[id] else { return }
        guard let decision = recoveryScheduler.timedOut(count, on: endpoint, of: accessory, at: host.uptime().monotonic) else {
            logger.debug("\(count) timeouts on connection \(id); a recovery of port \(accessory.descriptor.port) is under way")
            return
        }
        start(decision)
    }

    /// Arms the host's timer for the scheduler's next deadline (an accessory that vanished),
    /// or disarms it when nothing waits.
    func armRecoveryTimer() {
        guard !isShutDown else { return }
        let next = recoveryScheduler.nextDeadline
        if recoveryTimer?.at == next { return }
        recoveryTimer?.timer.cancel()
        recoveryTimer = nil
        guard let next else { return }
        recoveryTimer = (next, host.schedule(at: next) { [weak self] in await self?.recoveryTimerFired(at: next) })
    }

    /// The timer for `deadline` fell due: starts what the scheduler says is due.
    private func recoveryTimerFired(at deadline: Duration) {
        guard !isShutDown, recoveryTimer?.at == deadline else { return }
        recoveryTimer = nil
        for decision in recoveryScheduler.due(at: max(deadline, host.uptime().monotonic)) { start(decision) }
        armRecoveryTimer()
    }

    /// Carries out a decision: a recovery in a task of its own (the manager goes on), or the
    /// report of one the budget did not allow.
    private func start(_ decision: RecoveryScheduler.Decision) {
        let accessory = decision.accessory
        let (port, label) = (accessory.descriptor.port, AccessorySession.label(accessory))
        switch decision {
        case .budgetSpent(_, let trigger, let next):
            let policy = recoveryScheduler.budget
            let when = next.map { "next allowed in \(RecoveryScheduler.seconds(max(.zero, $0 - host.uptime().monotonic)))" } ?? "never allowed"
            let why =
                "the budget of \(policy.limit) recover\(policy.limit == 1 ? "y" : "ies") per \(RecoveryScheduler.seconds(policy.window)) on port \(port) is spent; \(when)"
            logger.warning("not recovering accessory \(label) (\(trigger)): \(why)")
            recoveryWatchers.send(
                RecoveryReport(port: port, trigger: trigger, steps: [], before: accessory, accessory: nil, duration: .zero, skipped: why))
        case .recover(_, let trigger), .bringBack(_, let trigger):
            let steps = recoveryScheduler.steps(for: decision)
            var vanished = false
            if case .bringBack = decision { vanished = true }
            logger.notice("recovering accessory \(label) on port \(port) (\(trigger)): \(steps.map(\.name).joined(separator: ", "))")
            recoveryTasks[port] = Task { [weak self] in
                await self?.recoverAutomatically(accessory, steps: steps, trigger: trigger, vanished: vanished)
            }
        }
    }

    /// Runs an automatic recovery, then frees its port.
    private func recoverAutomatically(_ accessory: Accessory, steps: [RecoveryStep], trigger: String, vanished: Bool) async {
        let port = accessory.descriptor.port
        do throws(AccessoryError) {
            let back = try await recover(accessory, steps: steps, trigger: trigger, vanished: vanished)
            logger.notice("recovered accessory \(AccessorySession.label(back)) on port \(port) (\(trigger))")
        } catch {
            logger.warning("\(error.message) (\(trigger))")
        }
        recoveryScheduler.finished(port: port)
        recoveryTasks[port] = nil
    }

    /// At shutdown: no more automatic recoveries; those under way are cancelled.
    func stopAutomaticRecovery() {
        recoveryTimer?.timer.cancel()
        recoveryTimer = nil
        for task in recoveryTasks.values { task.cancel() }
    }
}
