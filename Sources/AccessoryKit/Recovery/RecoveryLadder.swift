import AccessoryCore

/// One run of the recovery ladder on an accessory's port, for its manager: each step in turn,
/// the wait for the accessory to come back, the GET_STATUS probe, and the report to
/// ``AccessoryManager/recoveries()``. The manager does the I/O; the ladder decides what each
/// step came to and which connection is the accessory back. The caller holds the port
/// (``RecoveryScheduler/begin(port:)``).
struct RecoveryLadder {
    /// How long a step waits for the accessory to come back on its port.
    static let settle = Duration.seconds(5)
    /// How long the probe (GET_STATUS) may take.
    static let probeTimeout = Duration.seconds(1)

    /// The accessory to recover, as it was when the recovery began.
    let accessory: Accessory
    /// The steps to try, in order.
    let steps: [RecoveryStep]
    /// Why it runs: `requested`, `3 timeouts on 0x81`, `vanished for 10 s`.
    let trigger: String
    /// `accessory`'s connection ended already (it vanished from its port): the same physical
    /// accessory coming back continues it.
    let vanished: Bool

    /// What one step came to.
    private enum StepOutcome {
        /// The accessory is back and answered.
        case recovered(Accessory)
        /// It ran, and the accessory did not come back or answer; the connection as it is
        /// now, if it is still there.
        case failed(String, Accessory?)
        /// It could not run.
        case skipped(String)

        var text: String {
            switch self {
            case .recovered: return "recovered"
            case .failed(let why, _): return why
            case .skipped(let why): return why + ", skipped"
            }
        }
    }

    /// Runs the steps until one brings the accessory back, and reports the run.
    /// - Returns: the accessory as it is now (see ``AccessoryManager/recover(_:upTo:)``).
    /// - Throws: `.notFound` when the accessory (not vanished) is no longer connected; `.io`
    ///   when every step failed, naming each step and its outcome.
    func run(on manager: isolated AccessoryManager) async throws(AccessoryError) -> Accessory {
        let label = AccessorySession.label(accessory)
        if !vanished, manager.tracker.entry(accessory.connectionID) == nil { throw AccessoryManager.notConnected(accessory, operation: "recover") }
        let started = manager.host.uptime().monotonic
        if vanished { manager.tracker.expectReturn(of: accessory, until: started + Self.settle * steps.count + .seconds(5)) }
        defer { if vanished { manager.tracker.endRecovery(of: accessory.connectionID) } }
        var tried: [(step: RecoveryStep, outcome: String)] = []
        var current: Accessory? = vanished ? nil : accessory
        for step in steps {
            let outcome = await attempt(step, current: current, on: manager)
            tried.append((step, outcome.text))
            manager.logger.info("recovery of \(label), \(step.name): \(outcome.text)")
            switch outcome {
            case .recovered(let back):
                report(tried, after: back, since: started, on: manager)
                return back
            case .failed(_, let still):
                current = still
            case .skipped:
                continue
            }
        }
        report(tried, after: nil, since: started, on: manager)
        throw AccessoryError(
            .io,
            "recovery of accessory \(label) on port \(accessory.descriptor.port) failed: "
                + tried.map { "\($0.step.name): \($0.outcome)" }.joined(separator: "; "),
            operation: "recover")
    }

    /// Runs one step on the accessory's port and waits for it to come back.
    private func attempt(_ step: RecoveryStep, current: Accessory?, on manager: isolated AccessoryManager) async -> StepOutcome {
        let port = accessory.descriptor.port
        let present = current.flatMap { manager.tracker.entry($0.connectionID) != nil ? $0 : nil }
        if step <= .reauthorize, present == nil {
            return .skipped("the device is not enumerated")
        }
        let command = manager.configuration.recovery?.command ?? []
        if step == .command, command.isEmpty {
            return .skipped("no command is configured")
        }
        // The connection the step works on ends as recovered(step); listen before the step.
        let events = manager.events(includingCurrent: false)
        if let present {
            manager.endSessions(of: present.connectionID, reason: .recovered(step))
            for entry in manager.sessions.sessions(on: present.connectionID) { await entry.resources.close(manager: manager) }
            manager.tracker.expectRecovery(
                of: present.connectionID, step: step, until: manager.host.uptime().monotonic + Self.settle + .seconds(5))
        }
        let marked = present?.connectionID
        defer { if let marked { manager.tracker.endRecovery(of: marked) } }
        do {
            switch step {
            case .reset:
                guard let present else { return .skipped("the device is not enumerated") }
                let device = try manager.openForControl(present, operation: "recover")
                do {
                    try device.reset()
                } catch where error.code == .notFound || error.code.disconnectReason != nil {
                    // It re-enumerated, or is on its way back: the events follow.
                }
                manager.tracker.expectChange(onPort: port, at: manager.host.uptime().monotonic)
                manager.arm()
            case .reauthorize:
                try await manager.reauthorize(port: port)
            case .powerCycle:
                _ = try await manager.cyclePortPower(port)
            case .command:
                try await RecoveryCommand(arguments: command, port: port, bus: accessory.descriptor.bus, address: present?.descriptor.address)
                    .run()
            }
        } catch {
            if step == .powerCycle, error.code == .protocolNotSupported { return .skipped(error.message) }
            return .failed("failed: \(error.message)", present)
        }
        guard let back = await comeBack(previous: present, after: step, events: events, on: manager) else {
            return .failed("did not come back on port \(port) within \(Self.settle)", nil)
        }
        do {
            _ = try await manager.controlTransfer(from: back, ControlRequest(.standard, request: 0), length: 2, timeout: Self.probeTimeout)
            return .recovered(back)
        } catch {
            return .failed("came back but did not answer GET_STATUS: \(error.message)", back)
        }
    }

    /// The accessory once it is back on its port: the same connection, if it is still there
    /// after a reset; else the first new connection on the port that continues `previous`
    /// (or, when it had vanished, the same physical accessory); `nil` after the settle time.
    private func comeBack(
        previous: Accessory?, after step: RecoveryStep, events: AsyncStream<AccessoryEvent>, on manager: isolated AccessoryManager
    ) async -> Accessory? {
        let clock = manager.configuration.clock
        if step == .reset, let previous, manager.tracker.entry(previous.connectionID) != nil {
            // A reset that kept the device in place; one that re-enumerated shows as events.
            try? await clock.sleep(for: .milliseconds(100))
            if manager.tracker.entry(previous.connectionID) != nil { return previous }
        }
        let (bus, port) = (accessory.descriptor.bus, accessory.descriptor.port)
        let previousID = previous?.connectionID
        let identity = (accessory.descriptor.vendor, accessory.descriptor.product, accessory.descriptor.serial)
        return await withTaskGroup(of: Accessory?.self) { group in
            group.addTask {
                for await event in events {
                    guard case .connected(let a) = event, a.descriptor.bus == bus, a.descriptor.port == port else { continue }
                    if let previousID {
                        if a.previousConnectionID == previousID { return a }
                    } else if (a.descriptor.vendor, a.descriptor.product, a.descriptor.serial) == identity {
                        return a
                    }
                }
                return nil
            }
            group.addTask {
                try? await clock.sleep(for: Self.settle)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Sends the report of the run.
    private func report(
        _ tried: [(step: RecoveryStep, outcome: String)], after back: Accessory?, since started: Duration,
        on manager: isolated AccessoryManager
    ) {
        manager.recoveryWatchers.send(
            RecoveryReport(
                port: accessory.descriptor.port, trigger: trigger, steps: tried, before: accessory, accessory: back,
                duration: manager.host.uptime().monotonic - started))
    }
}
