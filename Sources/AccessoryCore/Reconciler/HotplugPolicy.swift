/// The manager's judgement between hotplug events and the OS truth, as a value it feeds with
/// notices and scans: which instances are known gone although the truth still lists them,
/// whether a reconcile that finds entries missing first waits for their LEFT events, whether
/// an arrival is stale, and which devices are shown. No clock, no I/O: the manager asks, then
/// does the waiting and the scanning.
public struct HotplugPolicy: Sendable {
    /// What the manager shows: hubs only when asked, and only accessories that speak one of
    /// `supportedProtocols` when it is set.
    public var includeHubs: Bool
    public var supportedProtocols: Set<String>?
    /// How many times a confirming look may wait again for entries that went missing since.
    public var maxConfirmations = 3

    /// Instances known gone that the truth may list a moment longer: the kernel sends the
    /// remove event before it deletes the sysfs directory.
    public private(set) var deadInstances: [DeviceKey: AccessoryDescriptor] = [:]
    /// The entries a waiting reconcile found missing, and how often it has waited since.
    private var suspectedAbsent: Set<ConnectionID> = []
    private var confirmations = 0

    public init(includeHubs: Bool = false, supportedProtocols: Set<String>? = nil) {
        self.includeHubs = includeHubs
        self.supportedProtocols = supportedProtocols
    }

    /// What started a reconcile, as the policy tells them apart.
    public enum Look: Sendable, Hashable {
        /// Soon after hotplug events, or the periodic one: it may wait for LEFT events.
        case routine
        /// The second look a waiting reconcile asked for.
        case confirming
        /// Any other (initial, wake, refresh, an operation's NO_DEVICE): it never waits.
        case immediate
    }

    // MARK: Visibility

    /// Whether a device is shown: not a hub (unless hubs are included), and speaking a
    /// supported protocol when only some are supported.
    public func isVisible(_ descriptor: AccessoryDescriptor, isHub: Bool) -> Bool {
        if isHub && !includeHubs { return false }
        guard let supportedProtocols else { return true }
        return descriptor.protocols?.contains(where: supportedProtocols.contains) ?? false
    }

    // MARK: Instances known gone

    /// A LEFT event (or an operation) says this instance is gone.
    public mutating func markGone(_ descriptor: AccessoryDescriptor) {
        if let key = descriptor.key { deadInstances[key] = descriptor }
    }

    /// Forgets every mark: the truth at hand is authoritative (a trace's snapshot).
    public mutating func forgetGone() {
        deadInstances.removeAll()
    }

    /// `devices` without the instances known gone. A mark the truth no longer lists is
    /// forgotten: the instance is gone from the truth too.
    public mutating func withoutGone<Device>(_ devices: [Device], descriptor: (Device) -> AccessoryDescriptor) -> [Device] {
        guard !deadInstances.isEmpty else { return devices }
        var stillListed: [DeviceKey: AccessoryDescriptor] = [:]
        let alive = devices.filter { device in
            let d = descriptor(device)
            guard let key = d.key, let dead = deadInstances[key], dead.isSameInstance(as: d) else { return true }
            stillListed[key] = dead
            return false
        }
        deadInstances = stillListed
        return alive
    }

    // MARK: Waiting for LEFT events

    /// The registry entries whose instance the truth lacks.
    public static func absentEntries(_ registry: ConnectionRegistry, truth: [AccessoryDescriptor]) -> Set<ConnectionID> {
        var live: [DeviceKey: AccessoryDescriptor] = [:]
        for d in truth { if let key = d.key { live[key] = d } }
        return Set(registry.accessories.filter { entry in
            guard let key = entry.descriptor.key, let d = live[key] else { return true }
            return !d.isSameInstance(as: entry.descriptor)
        }.map(\.connectionID))
    }

    /// Whether a reconcile should wait for hotplug events before it evicts: a routine look
    /// that finds entries missing asks for a confirming look; a confirming look waits once
    /// more (up to ``maxConfirmations`` times) when entries have gone missing since, so that
    /// each gets the full wait for its LEFT event. Without hotplug nothing waits.
    ///
    /// - Parameter waiting: whether a confirming look is already scheduled.
    /// - Returns: `true` when the caller must schedule a confirming look and evict nothing now.
    public mutating func shouldWait(
        _ look: Look, absent: @autoclosure () -> Set<ConnectionID>, waiting: Bool, hotplug: Bool
    ) -> Bool {
        guard hotplug else { return false }
        switch look {
        case .routine:
            let missing = absent()
            guard !missing.isEmpty else { return false }
            if !waiting {
                suspectedAbsent = missing
                confirmations = 0
            }
            return true
        case .confirming:
            let fresh = absent().subtracting(suspectedAbsent)
            guard !fresh.isEmpty, confirmations < maxConfirmations else { return false }
            suspectedAbsent.formUnion(fresh)
            confirmations += 1
            return true
        case .immediate:
            return false
        }
    }

    // MARK: Arrivals

    /// How an arrival compares with what the truth holds on its port now.
    public enum Arrival: Sendable, Hashable {
        /// The truth holds this very instance: take the truth's fuller view.
        case live
        /// The truth holds a newer instance of the same VID:PID on the port (a backlog in a
        /// storm): applying the add would evict the live one.
        case stale
        /// The truth says nothing either way: apply what the event says.
        case unconfirmed
    }

    /// Judges an arrival against the truth's device on its port, if any.
    public static func judge(arrival: AccessoryDescriptor, livePort live: AccessoryDescriptor?) -> Arrival {
        guard let live else { return .unconfirmed }
        let sameIDs = live.bus == arrival.bus && live.vendor == arrival.vendor && live.product == arrival.product
        if sameIDs && live.address == arrival.address { return .live }
        // The same VID:PID under another address is a newer re-enumeration. (Not any device:
        // libusb's port chain can be shorter than the kernel's, naming a parent hub.)
        return sameIDs ? .stale : .unconfirmed
    }
}
