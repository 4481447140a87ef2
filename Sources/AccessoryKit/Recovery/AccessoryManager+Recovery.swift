import AccessoryCore

extension AccessoryManager {
    /// How long a step waits for the accessory to come back on its port.
    static let recoverySettle = Duration.seconds(5)
    /// How long the probe (GET_STATUS) may take.
    static let recoveryProbeTimeout = Duration.seconds(1)

    /// Recovers a wedged or lost accessory: runs the ladder (`RecoveryStep`: a port reset,
    /// then `authorized` 0 and 1, then a power cycle of its port, then the configured
    /// command) up to `last`, stopping at the first step after which the same physical
    /// accessory is back on its port and answers a GET_STATUS within 1 s.
    ///
    /// A step that does not bring it back within 5 s counts as tried, and the next one runs;
    /// a step that cannot run (a hub that switches its ports together, no command
    /// configured) is named and skipped. Sessions open on the accessory end first, with
    /// `DisconnectReason.recovered(step)`; so does the connection, when the step makes it
    /// re-enumerate. Nothing else of the manager waits while a recovery runs.
    ///
    /// - Returns: the accessory as it is now: the same connection when a reset kept the device
    ///   in place, else the new connection, whose `previousConnectionID` is
    ///   `accessory.connectionID`.
    /// - Throws: `.notFound` when `accessory` is not connected; `.busy` when a recovery of its
    ///   port is under way (an automatic one, or another request); `.io` when the whole
    ///   ladder failed, with every step and its outcome in the message.
    public func recover(_ accessory: Accessory, upTo last: RecoveryStep = .powerCycle) async throws(AccessoryError) -> Accessory {
        let port = accessory.descriptor.port
        guard tracker.entry(accessory.connectionID) != nil else { throw Self.notConnected(accessory) }
        guard recoveryScheduler.begin(port: port) else {
            throw AccessoryError(.busy, "a recovery of port \(port) is under way", operation: "recover")
        }
        defer { recoveryScheduler.finished(port: port) }
        return try await recover(accessory, steps: RecoveryStep.ladder(upTo: last), trigger: "requested", vanished: false)
    }

    /// One report per recovery, automatic or requested, as each ends, and one per automatic
    /// recovery the port's budget did not allow (``RecoveryReport/skipped``). The stream
    /// finishes at ``shutdown()``.
    public nonisolated func recoveries() -> AsyncStream<RecoveryReport> {
        recoveryWatchers.subscribe()
    }

    static func notConnected(_ accessory: Accessory) -> AccessoryError {
        AccessoryError(
            .notFound, "accessory \(AccessorySession.label(accessory)) (connection \(accessory.connectionID)) is not connected",
            operation: "recover")
    }

    /// Runs `ladder` for `trigger` and reports it. The caller holds the port
    /// (``RecoveryScheduler/begin(port:)``).
    /// - Parameter vanished: `accessory`'s connection ended already (it vanished from its
    ///   port): the same physical accessory coming back continues it.
    func recover(_ accessory: Accessory, steps ladder: [RecoveryStep], trigger: String, vanished: Bool) async throws(AccessoryError) -> Accessory {
        let operation = "recover"
        let label = AccessorySession.label(accessory)
        if !vanished, tracker.entry(accessory.connectionID) == nil { throw Self.notConnected(accessory) }
        let started = host.uptime().monotonic
        if vanished { tracker.expectReturn(of: accessory, until: started + Self.recoverySettle * ladder.count + .seconds(5)) }
        defer { if vanished { tracker.endRecovery(of: accessory.connectionID) } }
        var steps: [(step: RecoveryStep, outcome: String)] = []
        var current: Accessory? = vanished ? nil : accessory
        for step in ladder {
            let outcome = await attempt(step, on: accessory, current: current)
            steps.append((step, outcome.text))
            configuration.logger.info("recovery of \(label), \(step.name): \(outcome.text)")
            switch outcome {
            case .recovered(let back):
                finishRecovery(accessory, steps: steps, trigger: trigger, after: back, since: started)
                return back
            case .failed(_, let still):
                current = still
            case .skipped:
                continue
            }
        }
        finishRecovery(accessory, steps: steps, trigger: trigger, after: nil, since: started)
        throw AccessoryError(
            .io,
            "recovery of accessory \(label) on port \(accessory.descriptor.port) failed: "
                + steps.map { "\($0.step.name): \($0.outcome)" }.joined(separator: "; "),
            operation: operation)
    }

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

    /// Runs one step on the accessory's port and waits for it to come back.
    private func attempt(_ step: RecoveryStep, on original: Accessory, current: Accessory?) async -> StepOutcome {
        let port = original.descriptor.port
        let present = current.flatMap { tracker.entry($0.connectionID) != nil ? $0 : nil }
        if step <= .reauthorize, present == nil {
            return .skipped("the device is not enumerated")
        }
        if step == .command, configuration.recovery?.command?.isEmpty ?? true {
            return .skipped("no command is configured")
        }
        // The connection the step works on ends as recovered(step); listen before the step.
        let events = self.events(includingCurrent: false)
        if let present {
            endSessions(of: present.connectionID, reason: .recovered(step))
            for entry in sessions.sessions(on: present.connectionID) { await entry.resources.close(manager: self) }
            tracker.expectRecovery(
                of: present.connectionID, step: step, until: host.uptime().monotonic + Self.recoverySettle + .seconds(5))
        }
        let marked = present?.connectionID
        defer { if let marked { tracker.endRecovery(of: marked) } }
        do {
            switch step {
            case .reset:
                guard let present else { return .skipped("the device is not enumerated") }
                let device = try openForControl(present, operation: "recover")
                do {
                    try device.reset()
                } catch where error.code == .notFound || error.code.disconnectReason != nil {
                    // It re-enumerated, or is on its way back: the events follow.
                }
                tracker.expectChange(onPort: port, at: host.uptime().monotonic)
                arm()
            case .reauthorize:
                try await reauthorize(port: port)
            case .powerCycle:
                _ = try await cyclePortPower(port)
            case .command:
                let command = configuration.recovery?.command ?? []
                try await RecoveryCommand(arguments: command, port: port, bus: original.descriptor.bus, address: present?.descriptor.address)
                    .run()
            }
        } catch {
            if step == .powerCycle, error.code == .protocolNotSupported { return .skipped(error.message) }
            return .failed("failed: \(error.message)", present)
        }
        guard let back = await comeBack(original, previous: present, after: step, events: events) else {
            return .failed("did not come back on port \(port) within \(Self.recoverySettle)", nil)
        }
        do {
            _ = try await controlTransfer(from: back, ControlRequest(.standard, request: 0), length: 2, timeout: Self.recoveryProbeTimeout)
            return .recovered(back)
        } catch {
            return .failed("came back but did not answer GET_STATUS: \(error.message)", back)
        }
    }

    /// The accessory once it is back on its port: the same connection, if it is still there
    /// after a reset; else the first new connection on the port that continues `previous`
    /// (or, when it had vanished, the same physical accessory); `nil` after the settle time.
    private func comeBack(
        _ original: Accessory, previous: Accessory?, after step: RecoveryStep, events: AsyncStream<AccessoryEvent>
    ) async -> Accessory? {
        if step == .reset, let previous, tracker.entry(previous.connectionID) != nil {
            // A reset that kept the device in place; one that re-enumerated shows as events.
            try? await configuration.clock.sleep(for: .milliseconds(100))
            if tracker.entry(previous.connectionID) != nil { return previous }
        }
        let (bus, port, clock) = (original.descriptor.bus, original.descriptor.port, configuration.clock)
        let previousID = previous?.connectionID
        let identity = (original.descriptor.vendor, original.descriptor.product, original.descriptor.serial)
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
                try? await clock.sleep(for: Self.recoverySettle)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Sends the report of a recovery that ended.
    private func finishRecovery(
        _ before: Accessory, steps: [(step: RecoveryStep, outcome: String)], trigger: String, after: Accessory?, since started: Duration
    ) {
        recoveryWatchers.send(
            RecoveryReport(
                port: before.descriptor.port, trigger: trigger, steps: steps, before: before, accessory: after,
                duration: host.uptime().monotonic - started))
    }
}
