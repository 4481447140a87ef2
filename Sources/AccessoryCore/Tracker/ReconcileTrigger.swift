/// What started a reconcile, for the plan and the log.
public enum ReconcileTrigger: String, Sendable {
    /// The first look, when the driver starts.
    case initial
    /// Hotplug events, or a suspicion, after the debounce.
    case debounced
    /// The periodic look.
    case periodic
    /// The system slept: events may have been lost.
    case wake
    /// An operation found a device gone.
    case noDevice = "no-device"
    /// The application asked.
    case refresh
    /// A recorded snapshot, taken as authoritative.
    case snapshot
    /// The look again when an entry's wait for its LEFT event (or a NO_DEVICE's) ends.
    case confirm
}
