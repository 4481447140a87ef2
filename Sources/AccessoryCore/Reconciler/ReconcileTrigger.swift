/// What started a reconcile, for the plan and the log.
package enum ReconcileTrigger: String, Sendable {
    case initial, debounced, periodic, wake, noDevice = "no-device", refresh, snapshot
    /// The look again when an entry's wait for its LEFT event (or a NO_DEVICE's) ends.
    case confirm
}
