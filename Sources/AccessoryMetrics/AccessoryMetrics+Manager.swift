import AccessoryCore
import AccessoryKit

extension AccessoryMetrics {
    /// Records `manager`'s notifications (from its bounded `updates(includingCurrent:bufferLimit:)`
    /// stream, current accessories first) until the manager shuts down. If it falls more than
    /// `bufferLimit` behind, the difference the stream sends keeps `accessory_connected` right;
    /// a connection that came and went inside the gap is not counted.
    public func observe(_ manager: AccessoryManager, bufferLimit: Int = 65_536) async {
        for await update in await manager.updates(includingCurrent: true, bufferLimit: bufferLimit) {
            if case .event(let event) = update { record(event) }
        }
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
