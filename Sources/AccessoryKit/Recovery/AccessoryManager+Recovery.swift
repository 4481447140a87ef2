import AccessoryCore

extension AccessoryManager {
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
        guard tracker.entry(accessory.connectionID) != nil else { throw Self.notConnected(accessory, operation: "recover") }
        guard automaticRecovery.scheduler.begin(port: port) else {
            throw AccessoryError(.busy, "a recovery of port \(port) is under way", operation: "recover")
        }
        defer { automaticRecovery.scheduler.finished(port: port) }
        return try await RecoveryLadder(accessory: accessory, steps: RecoveryStep.ladder(upTo: last), trigger: "requested", vanished: false)
            .run(on: self)
    }

    /// One report per recovery, automatic or requested, as each ends, and one per automatic
    /// recovery the port's budget did not allow (``RecoveryReport/skipped``). The stream
    /// finishes at ``shutdown()``.
    public nonisolated func recoveries() -> AsyncStream<RecoveryReport> {
        recoveryWatchers.subscribe()
    }
}
