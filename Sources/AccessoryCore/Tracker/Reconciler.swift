/// Compares a registry with a snapshot of the OS truth, evicts every ghost and admits every
/// live device the registry lacks.
///
/// An entry survives only if the snapshot holds the same instance: same bus and port, and
/// equal address, VID, PID, bcdDevice and serial wherever both sides know them. All
/// evictions are returned before all admissions, so the disconnect of a stale ID always
/// comes before the connect of its successor on the same port.
public struct Reconciler: Sendable {
    /// What one reconcile did.
    public struct Report: Sendable {
        /// The notifications: every eviction, then every admission.
        public var events: [AccessoryEvent] = []
        /// How many entries were found live and kept.
        package var kept = 0
        /// How many entries were evicted as ghosts.
        public var evicted: Int { events.lazy.filter { if case .disconnected = $0 { true } else { false } }.count }
        /// How many devices were admitted.
        public var admitted: Int { events.count - evicted }

        package init(events: [AccessoryEvent] = [], kept: Int = 0) {
            self.events = events
            self.kept = kept
        }
    }

    /// A reconciler.
    public init() {}

    /// Makes `registry` equal to `truth`: evicts its ghosts and admits what it lacks.
    ///
    /// - Parameters:

    ///   - isShown: whether an admitted device is shown; a hidden one gets a hidden ID (see
    ///     ``ConnectionRegistry``).
    ///   - scope: the entries `truth` speaks for, when it is a look at some ports only (their
    ///     entries, and those whose bus and address a device of `truth` now has); `nil`: the
    ///     truth is the whole OS truth. Entries outside the scope are kept as they are, and
    ///     the registry stays suspect until a whole look.
    public func reconcile(
        _ registry: inout ConnectionRegistry, against truth: [AccessoryDescriptor],
        isShown: (AccessoryDescriptor) -> Bool = { _ in true }, scope: Set<ConnectionID>? = nil
    ) -> Report {
        var report = Report()
        // Index the truth by key and by port; a snapshot listing one instance twice counts once.
        var live: [AccessoryDescriptor] = []
        live.reserveCapacity(truth.count)
        var byKey: [DeviceKey: Int] = [:]
        var byPort: [PortKey: Int] = [:]
        for d in truth {
            if let key = d.key, let i = byKey[key], live[i].isSameInstance(as: d) { continue }
            if d.key == nil, let i = byPort[d.portKey], live[i].isSameInstance(as: d) { continue }
            let i = live.count
            live.append(d)
            if let key = d.key { byKey[key] = i }
            byPort[d.portKey] = i
        }
        var claimed = [Bool](repeating: false, count: live.count)
        var evictions: [(ConnectionID, GhostEvidence)] = []
        let entries = scope.map { ids in ids.compactMap { registry[$0] }.sorted { $0.connectionID < $1.connectionID } } ?? registry.accessories
        for entry in entries {
            let d = entry.descriptor
            let candidate = d.key.flatMap { byKey[$0] } ?? byPort[d.portKey]
            if let i = candidate, !claimed[i], live[i].isSameInstance(as: d) {
                claimed[i] = true
                registry.enrich(entry.connectionID, with: live[i])
                report.kept += 1
            } else if let i = candidate, d.key != nil, live[i].key == d.key {
                evictions.append((entry.connectionID, .addressReused(by: live[i])))
            } else {
                evictions.append((entry.connectionID, .absentFromSnapshot))
            }
        }
        for (id, evidence) in evictions {
            if let ev = registry.evict(id, reason: .ghostEvicted(evidence)) { report.events.append(ev) }
        }
        for (i, d) in live.enumerated() where !claimed[i] {
            report.events.append(.connected(registry.admit(d, shown: isShown(d))))
        }
        if scope == nil { registry.markReconciled() }
        return report
    }
}
