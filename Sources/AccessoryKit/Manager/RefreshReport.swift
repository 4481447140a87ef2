import AccessoryCore

/// What one ``AccessoryManager/refresh()`` did.
public struct RefreshReport: Sendable {
    /// The notifications it sent: every eviction, then every admission.
    public var events: [AccessoryEvent] = []
    /// How many accessories were found live and kept.
    public var kept = 0

    /// How many accessories were evicted as ghosts.
    public var evicted: Int { events.lazy.filter { if case .disconnected = $0 { true } else { false } }.count }
    /// How many accessories were admitted.
    public var admitted: Int { events.count - evicted }

    /// A report of nothing done.
    public init() {}

    init(_ effects: TrackerEffects) {
        events = effects.events
        kept = effects.kept
    }
}
