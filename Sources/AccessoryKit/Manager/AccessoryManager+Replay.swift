import AccessoryCore

/// What simulated hosts and trace replays need besides the public API.
extension AccessoryManager {
    /// Reconciles with the host's OS truth taken as authoritative, as a trace's `snapshot`
    /// is: no instance counts as dead for lagging behind its LEFT event, and no entry waits
    /// for one.
    package func reconcileWithAuthoritativeTruth() {
        guard !isShutDown else { return }
        reconcile(.snapshot)
    }

    /// Dates new connections' links by a replayed trace's time (`nil`: the host's clock).
    package func setRecordedTime(_ time: Duration?) {
        tracker.recordedTime = time
    }

    /// Applies a recorded `sleep`, `wake` or `overflow`, as a replay does: the registry
    /// suspects itself; the next snapshot reconciles it.
    package func applyRecorded(_ event: HotplugEvent) {
        guard !isShutDown else { return }
        perform(tracker.apply(event, at: host.uptime().monotonic))
        arm()
    }
}
