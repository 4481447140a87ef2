import AccessoryCore
import AccessoryKit

extension AccessoryMetrics {
    /// Records `manager`'s notifications (from its bounded `updates(includingCurrent:bufferLimit:)`
    /// stream, current accessories first) until the manager shuts down. If it falls more than
    /// `bufferLimit` behind, the difference the stream sends keeps `accessory_connected` right;
    /// a connection that came and went inside the gap is not counted.
    /// Its recovery reports (`recoveries()`, requested and automatic) are counted too, with
    /// ``record(_:)-(RecoveryReport)``.
    public func observe(_ manager: AccessoryManager, bufferLimit: Int = 65_536) async {
        let reports = manager.recoveries()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await report in reports { self.record(report) }
            }
            group.addTask {
                for await update in await manager.updates(includingCurrent: true, bufferLimit: bufferLimit) {
                    if case .event(let event) = update { self.record(event) }
                }
            }
        }
    }

    /// Counts a recovery report with ``recorded(recovery:duration:)``: each step that ran
    /// (not those skipped, such as a ganged hub's power cycle), `recovered` for the one that
    /// brought the accessory back. A recovery the budget did not allow ran no step and is
    /// not counted.
    public func record(_ report: RecoveryReport) {
        guard report.skipped == nil else { return }
        let tried = report.steps.filter { !$0.outcome.hasSuffix(", skipped") }
        recorded(recovery: tried.map { ($0.step.name, $0.outcome == "recovered") }, duration: report.duration)
    }

    /// Reads `manager`'s hotplug totals and open sessions into the metrics: what a scrape does
    /// before ``exposition()``, so that nothing of it runs on the manager's hot path.
    public func refresh(from manager: AccessoryManager) async {
        let counts = await manager.hotplugCounts
        let sessions = await manager.openSessions.count
        record(hotplugArrived: counts.arrived, hotplugLeft: counts.left, sessionsOpen: sessions)
    }

    /// Serves `manager`'s metrics at `address` (see ``MetricsServer``), each scrape
    /// refreshing them first.
    public func serve(_ manager: AccessoryManager, at address: MetricsAddress) throws(MetricsServerError) -> MetricsServer {
        try MetricsServer(address: address) { [self] in
            await refresh(from: manager)
            return exposition()
        }
    }
}
