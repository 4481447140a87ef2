/// What a reconcile looks at and how it judges, decided before it looks: the driver of an
/// ``AccessoryTracker`` scans what the plan says and hands the devices back; the plan says
/// which entries the scan speaks for and which kept entries get the scan's fresher view.
/// No I/O: the driver does the scanning.
public struct ReconcilePlan: Sendable, Equatable {
    /// What to read.
    public enum Look: Sendable, Equatable {
        /// Every device.
        case everything
        /// Only these ports (sysfs names such as `1-3.2`), in order.
        case ports([String])
    }

    /// What to read.
    public var look: Look
    /// Why the reconcile runs.
    public var trigger: ReconcileTrigger
    /// Whether entries the scan lacks wait for their LEFT events
    /// (``HotplugPolicy/judge(_:truth:at:patient:scope:)``).
    package var isPatient: Bool

    /// The plan for a reconcile. After hotplug events only the ports they named are read;
    /// periodic, wake, confirming, initial and suspicious looks read everything, as does any
    /// look without hotplug or while the monitor is tapped (its raw truth is recorded).
    /// - Parameters:
    ///   - touchedPorts: the ports hotplug events named since the last reconcile (read only
    ///     for a look at some ports).
    ///   - needsFullScan: something may have changed that no event named.
    package init(
        trigger: ReconcileTrigger, touchedPorts: @autoclosure () -> Set<String>, needsFullScan: Bool, isHotplugAvailable: Bool,
        isMonitorTapped: Bool
    ) {
        self.trigger = trigger
        let partial = trigger == .debounced && !needsFullScan && isHotplugAvailable && !isMonitorTapped
        look = partial ? .ports(touchedPorts().sorted()) : .everything
        switch trigger {
        case .debounced, .periodic, .confirm, .noDevice: isPatient = isHotplugAvailable
        case .initial, .wake, .refresh, .snapshot: isPatient = false
        }
    }

    /// The entries a look speaks for: `nil` (all) for a full one; for a look at ports, those
    /// on the ports and those whose bus and address a device of `truth` now has (a ghost
    /// elsewhere). The rest stay as they are.
    package func scope(truth: [AccessoryDescriptor], in registry: ConnectionRegistry) -> Set<ConnectionID>? {
        guard case .ports(let ports) = look else { return nil }
        var ids = Set<ConnectionID>()
        for port in ports {
            if let bus = PortChain.bus(inName: port), let entry = registry.accessory(on: PortKey(bus: bus, port: port)) { ids.insert(entry.connectionID) }
        }
        for d in truth {
            if let key = d.key, let entry = registry.accessory(at: key) { ids.insert(entry.connectionID) }
        }
        return ids
    }

    /// The entries in `scope` (all when `nil`) that a device of `scan` is the same instance
    /// of, each with that device: the fresher view (strings, configuration) of a kept entry.
    /// Where two devices have the entry's bus and address, the last counts.
    package static func refreshes<Info>(
        in registry: ConnectionRegistry, scope: Set<ConnectionID>?, scan: [Info], descriptor: (Info) -> AccessoryDescriptor
    ) -> [(accessory: Accessory, fresh: Info)] {
        var byKey: [DeviceKey: Info] = [:]
        for info in scan {
            if let key = descriptor(info).key { byKey[key] = info }
        }
        let kept = scope.map { ids in ids.compactMap { registry[$0] } } ?? registry.accessories
        return kept.compactMap { accessory in
            guard let key = accessory.descriptor.key, let fresh = byKey[key], descriptor(fresh).isSameInstance(as: accessory.descriptor)
            else { return nil }
            return (accessory, fresh)
        }
    }
}
