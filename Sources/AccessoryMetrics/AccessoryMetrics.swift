import AccessoryCore
import AccessoryKit
import AccessoryLocking
import CoreMetrics
import Prometheus

/// A manager's Prometheus metrics: what connected and left, and why, the hotplug events, the
/// sessions open, and the recoveries. Labels name kinds of things only (a VID and PID, a
/// reason, a step): never a connection ID, a serial or an address, which are new on every
/// attach and would make a new series each time.
///
/// Feed it with ``observe(_:bufferLimit:)`` (the manager's bounded update stream, plus its hotplug and
/// session counts at each scrape), and serve ``exposition()`` with ``MetricsServer``. Every
/// counter of the contract is registered up front, at 0, so that a query sees it before the
/// first event.
public final class AccessoryMetrics: Sendable {
    /// The registry the metrics live in. An application can export its own metrics beside
    /// them: bootstrap swift-metrics with ``factory``, or make collectors here directly.
    public let registry: PrometheusCollectorRegistry

    /// A swift-metrics factory on ``registry``: `MetricsSystem.bootstrap(metrics.factory)`
    /// makes every swift-metrics counter, gauge and timer of the process show at `/metrics`
    /// too (their names must differ from this type's, whose help texts differ).
    public var factory: PrometheusMetricsFactory { PrometheusMetricsFactory(registry: registry) }

    /// The contract's disconnect reasons, registered at 0.
    public static let disconnectReasons = ["unplugged", "ghost-evicted", "recovered", "shutdown"]
    /// The contract's recovery steps (their CLI names), in ladder order, registered at 0.
    public static let recoverySteps = ["reset", "reauthorize", "power-cycle", "command"]
    /// The recovery histogram's upper bounds: a reset takes well under a second, a power
    /// cycle with its settle time several, a ladder that fails up to a minute.
    public static let recoveryBuckets: [Duration] = [
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
        .seconds(5), .seconds(10), .seconds(20), .seconds(30), .seconds(60),
    ]

    private let disconnects: [String: Prometheus.Counter]
    private let recoveries: [String: Prometheus.Counter]
    private let recoverySeconds: DurationHistogram
    private let arrived: Prometheus.Counter
    private let left: Prometheus.Counter
    /// The manager's hotplug totals at the last ``record(hotplugArrived:hotplugLeft:sessionsOpen:)``:
    /// the counters grow by the difference.
    private let hotplugSeen = Locked((arrived: 0, left: 0))
    private let sessionsOpen: Prometheus.Gauge
    /// Accessories connected now, by VID:PID, and their gauges (made on first sight; one
    /// series per VID:PID ever seen, which stays at 0 once they are all gone).
    private let connected: Locked<[VendorProduct: (count: Int, gauge: Prometheus.Gauge)]>

    /// The label values of `accessory_connected`: lower-case hex, `unknown` where the
    /// descriptor has no ID.
    struct VendorProduct: Hashable {
        var vendor: String
        var product: String

        init(_ descriptor: AccessoryDescriptor) {
            vendor = descriptor.vendor.map(Self.hex) ?? "unknown"
            product = descriptor.product.map(Self.hex) ?? "unknown"
        }

        static func hex(_ id: UInt16) -> String {
            let digits = String(id, radix: 16)
            return String(repeating: "0", count: 4 - digits.count) + digits
        }
    }

    /// Metrics in a registry of their own (or in `registry`, which must not already hold
    /// these names with other help texts).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        disconnects = Dictionary(uniqueKeysWithValues: Self.disconnectReasons.map { reason in
            (reason, registry.makeCounter(
                descriptor: Self.name("disconnects", "total", "Connections that ended, by the reason's code."),
                labels: [("reason", reason)]))
        })
        var recoveries: [String: Prometheus.Counter] = [:]
        for step in Self.recoverySteps {
            for outcome in ["recovered", "failed"] {
                recoveries["\(step) \(outcome)"] = registry.makeCounter(
                    descriptor: Self.name("recoveries", "total", "Recovery steps tried, by step and by whether that step brought the accessory back."),
                    labels: [("step", step), ("outcome", outcome)])
            }
        }
        self.recoveries = recoveries
        recoverySeconds = registry.makeDurationHistogram(
            descriptor: Self.name("recovery", "seconds", "How long each recovery took, from its first step to its outcome."),
            buckets: Self.recoveryBuckets)
        let hotplug = Self.name("hotplug_events", "total", "Hotplug events the manager took from the OS, hubs included, by kind.")
        arrived = registry.makeCounter(descriptor: hotplug, labels: [("kind", "arrived")])
        left = registry.makeCounter(descriptor: hotplug, labels: [("kind", "left")])
        sessionsOpen = registry.makeGauge(descriptor: Self.name("sessions_open", "", "Sessions open now."))
        connected = Locked([:])
    }

    /// `accessory_BASE_UNIT` (no unit: `accessory_BASE`) with its help text.
    private static func name(_ base: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "accessory", metricName: base, unitName: unit, helpText: help)
    }

    // MARK: Recording

    /// Counts a notification: `.connected` raises its VID:PID's `accessory_connected`,
    /// `.disconnected` lowers it and counts its reason's code.
    public func record(_ event: AccessoryEvent) {
        let key = VendorProduct(event.accessory.descriptor)
        let delta: Int
        switch event {
        case .connected:
            delta = 1
        case .disconnected(_, let reason):
            delta = -1
            disconnects[reason.code]?.increment()
        }
        connected.withLock { table in
            var entry = table[key] ?? (0, registry.makeGauge(
                descriptor: Self.name("connected", "", "Accessories connected now, by vendor and product ID."),
                labels: [("vendor", key.vendor), ("product", key.product)]))
            entry.count = max(0, entry.count + delta)
            entry.gauge.set(Int64(entry.count))
            table[key] = entry
        }
    }

    /// Takes the manager's own counts, read at a scrape: the hotplug events it has taken
    /// since it started (totals: the counters grow by what is new since the last call), and
    /// the sessions open now.
    public func record(hotplugArrived: Int, hotplugLeft: Int, sessionsOpen: Int) {
        let (newArrived, newLeft) = hotplugSeen.withLock { seen in
            defer { seen = (max(seen.arrived, hotplugArrived), max(seen.left, hotplugLeft)) }
            return (max(0, hotplugArrived - seen.arrived), max(0, hotplugLeft - seen.left))
        }
        if newArrived > 0 { arrived.increment(by: Int64(newArrived)) }
        if newLeft > 0 { left.increment(by: Int64(newLeft)) }
        self.sessionsOpen.set(Int64(sessionsOpen))
    }

    /// Counts one recovery: each step it tried, by its CLI name (`reset`, `reauthorize`,
    /// `power-cycle`, `command`) with `recovered` for the step that brought the accessory
    /// back and `failed` for the others, and its duration in `accessory_recovery_seconds`.
    /// Steps skipped without being tried (a ganged hub) are left out by the caller. A step
    /// name outside ``recoverySteps`` is ignored.
    public func recorded(recovery steps: [(step: String, recovered: Bool)], duration: Duration) {
        for (step, recovered) in steps {
            recoveries["\(step) \(recovered ? "recovered" : "failed")"]?.increment()
        }
        recoverySeconds.recordNanoseconds(Int64(duration / .nanoseconds(1)))
    }

    // MARK: Exposition

    /// Every metric of ``registry`` in the Prometheus text format 0.0.4.
    public func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}
