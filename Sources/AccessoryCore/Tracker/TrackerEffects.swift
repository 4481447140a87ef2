/// What an ``AccessoryTracker`` asks its driver to do after an input: deliver notifications,
/// record what the monitor saw, end sessions, look at the OS truth, and log.
public struct TrackerEffects: Sendable {
    /// The notifications to deliver to subscribers, in order. Only shown accessories appear.
    public var events: [AccessoryEvent] = []
    /// What a recording of the monitor's own view gets (``HotplugEvent``s of shown devices,
    /// snapshots of the truth, sleep and wake), in order.
    public var recorded: [HotplugEvent] = []
    /// Suspicions the truth did not confirm: a NO_DEVICE (from `operation`) on a connection
    /// that the OS still lists after the whole wait. The connection stays; the sessions that
    /// saw the NO_DEVICE end with an I/O error.
    public var falseAlarms: [(id: ConnectionID, operation: String)] = []
    /// What to read of the OS truth now, then hand back with
    /// ``AccessoryTracker/scanned(_:for:at:noticesPending:)``; `nil`: nothing.
    public var look: ReconcilePlan?
    /// Lines for a debug log, saying why.
    public var notes: [String] = []
    /// How many entries a look found live and kept.
    public var kept = 0

    /// No effects.
    public init() {}

    /// The connections that ended, each with its reason: the sessions on them end with it.
    public var endedConnections: [(id: ConnectionID, reason: DisconnectReason)] {
        events.compactMap { if case .disconnected(let a, let r) = $0 { (a.connectionID, r) } else { nil } }
    }

    /// Appends `other`'s effects after these. A look of `other` replaces this one's.
    public mutating func append(_ other: TrackerEffects) {
        events += other.events
        recorded += other.recorded
        falseAlarms += other.falseAlarms
        notes += other.notes
        kept += other.kept
        if let look = other.look { self.look = look }
    }
}
