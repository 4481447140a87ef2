/// The tracker's judgement between hotplug events and the OS truth, as a value that
/// ``AccessoryTracker`` feeds with notices, looks and the time: which instances are known gone
/// although the truth still lists them, how long an entry the truth lacks waits for its LEFT
/// event, what a transfer's NO_DEVICE means, whether an arrival is stale, and which devices are
/// shown. No clock, no I/O: the tracker passes the time in, and its driver (the manager)
/// does the waiting and the scanning.
///
/// **The kernel's order.** On a real unplug, transfers in flight fail first (NO_DEVICE, or
/// a transfer error for IN), then sysfs drops the device, and the remove event reaches
/// libusb only after udevd has relayed it, tens to hundreds of milliseconds later. So:
/// - an entry that the truth lacks waits ``leftEventWindow`` from the first look that found
///   it missing before it is evicted as a ghost; its LEFT event within that wait makes it
///   `unplugged`;
/// - when many devices leave at once (a hub's unplug), sysfs drops them all together and
///   udevd relays their remove events one after another, so each LEFT event that comes
///   starts the wait again, and so do notices the host holds that the manager has not yet
///   taken (any of them may be the one awaited); never beyond ``leftEventWindowLimit``;
/// - a hub's unplug is judged as one unplug: the hub and the entries behind it that the truth
///   lacks too are one group, whose remove events come the deepest first and the hub's last.
///   Its wait is one ``leftEventWindow`` for each of the group's events still to come, so a
///   loaded udevd that relays them slowly does not turn the last ones into ghosts;
/// - a transfer's NO_DEVICE only makes an entry *suspect* (``suspect(_:operation:at:)``): it
///   is evicted only once the truth lacks it, by the same rule, with the operation as the
///   ghost's evidence. While sysfs lists the same instance it is never evicted; a suspicion
///   that outlives ``leftEventWindow`` so is a false alarm (a missing device node, say).
package struct HotplugPolicy: Sendable {
    /// What the tracker shows: hubs only when asked, and only accessories that speak one of
    /// `supportedProtocols` when it is set.
    package var includeHubs: Bool
    package var supportedProtocols: Set<String>?
    /// How long after sysfs dropped a device its LEFT event may come and still make the
    /// disconnect `unplugged` (udevd relays the kernel's remove event late).
    package var leftEventWindow: Duration = .milliseconds(250)
    /// The longest an entry the truth lacks waits, however long LEFT events keep coming: a
    /// stream of them elsewhere must not keep a ghost whose own event was lost.
    package var leftEventWindowLimit: Duration = .seconds(5)
    /// How long a LEFT event hides its instance from the truth: the kernel sends the remove
    /// event before it deletes the sysfs directory. A mark never outlives this, so a false
    /// or late LEFT cannot hide a live device for good.
    package var deadMarkLifetime: Duration = .milliseconds(500)

    /// Instances known gone that the truth may list a moment longer, and when each was marked.
    package private(set) var deadInstances: [DeviceKey: (descriptor: AccessoryDescriptor, at: Duration)] = [:]
    /// When a look first found each entry missing from the truth.
    private var absentSince: [ConnectionID: Duration] = [:]
    /// When the last LEFT event came: while they keep coming, the waits go on.
    private var lastLeftEvent: Duration?
    /// Entries a transfer found gone (NO_DEVICE), with the operation and when.
    package private(set) var suspects: [ConnectionID: (operation: String, since: Duration)] = [:]
    /// Addresses of arrivals skipped as stale, whose LEFT events are still to come.
    private var skippedArrivals: Set<DeviceKey> = []
    /// At most this many skipped arrivals are remembered: a backlog that long is
    /// overflow-like, and one forgotten only costs the full scan its LEFT then asks for.
    static let skippedArrivalLimit = 1024

    package init(includeHubs: Bool = false, supportedProtocols: Set<String>? = nil) {
        self.includeHubs = includeHubs
        self.supportedProtocols = supportedProtocols
    }

    // MARK: Visibility

    /// Whether a device is shown: not a hub (unless hubs are included), and speaking a
    /// supported protocol when only some are supported.
    package func isVisible(_ descriptor: AccessoryDescriptor, isHub: Bool) -> Bool {
        if isHub && !includeHubs { return false }
        guard let supportedProtocols else { return true }
        return descriptor.protocols?.contains(where: supportedProtocols.contains) ?? false
    }

    // MARK: Instances known gone

    /// A LEFT event came at `now` (for any device): relayed events are still flowing.
    package mutating func heardLeft(at now: Duration) {
        lastLeftEvent = now
    }

    /// A LEFT event says this instance is gone.
    package mutating func markGone(_ descriptor: AccessoryDescriptor, at now: Duration) {
        if let key = descriptor.key { deadInstances[key] = (descriptor, now) }
    }

    /// Whether a LEFT event has marked an instance gone since the marks were last forgotten.
    package var hasGoneMarks: Bool { !deadInstances.isEmpty }

    /// An ARRIVED event says a new instance holds this address now: a mark on it, left by an
    /// earlier instance's late LEFT event, must not hide the newcomer (after an address wrap,
    /// the two can look the same in sysfs), and an older skipped arrival's LEFT is no longer
    /// awaited there.
    package mutating func arrived(_ descriptor: AccessoryDescriptor) {
        guard let key = descriptor.key else { return }
        if !deadInstances.isEmpty { deadInstances[key] = nil }
        if !skippedArrivals.isEmpty { skippedArrivals.remove(key) }
    }

    /// Forgets every mark and every wait: the truth at hand is authoritative (a trace's
    /// snapshot).
    package mutating func forgetGone() {
        // Keeping the capacity: the marks come back at every LEFT event after this.
        deadInstances.removeAll(keepingCapacity: true)
        absentSince.removeAll(keepingCapacity: true)
    }

    /// `devices` without the instances known gone. A mark the truth no longer lists, or older
    /// than ``deadMarkLifetime``, is forgotten.
    package mutating func withoutGone<Device>(
        _ devices: [Device], at now: Duration, descriptor: (Device) -> AccessoryDescriptor
    ) -> [Device] {
        guard !deadInstances.isEmpty else { return devices }
        var stillListed: [DeviceKey: (descriptor: AccessoryDescriptor, at: Duration)] = [:]
        let alive = devices.filter { device in
            let d = descriptor(device)
            guard let key = d.key, let dead = deadInstances[key], dead.descriptor.isSameInstance(as: d),
                now - dead.at < deadMarkLifetime
            else { return true }
            stillListed[key] = dead
            return false
        }
        deadInstances = stillListed
        return alive
    }

    // MARK: NO_DEVICE

    /// A transfer on this entry returned NO_DEVICE (or an IN transfer's error, as on a real
    /// unplug). The first report counts; the entry is judged at the next looks.
    package mutating func suspect(_ id: ConnectionID, operation: String, at now: Duration) {
        if suspects[id] == nil { suspects[id] = (operation, now) }
    }

    /// Forgets what is kept about an entry that has left the registry.
    package mutating func forget(_ id: ConnectionID) {
        if !absentSince.isEmpty { absentSince[id] = nil }
        if !suspects.isEmpty { suspects[id] = nil }
    }

    // MARK: Judging a look

    /// What a look at the truth may do now.
    package struct Judgement: Sendable {
        /// Entries the truth lacks that still wait for their LEFT event: keep them this time.
        package var waiting: Set<ConnectionID> = []
        /// Entries to evict as ghosts now, with the operation whose NO_DEVICE found them gone
        /// (`nil`: only the truth's absence says so).
        package var evict: [ConnectionID: String?] = [:]
        /// Suspects the truth still lists after the whole wait: the NO_DEVICE was false. Each
        /// with its operation; the entry stays.
        package var falseAlarms: [ConnectionID: String] = [:]
        /// When to look again, if anything waits.
        package var lookAgainAt: Duration?
    }

    /// Judges the entries of `registry` against `truth` at `now`.
    ///
    /// - Parameters:
    ///   - patient: whether entries may wait for LEFT events (hotplug works, and the look is
    ///     not an authoritative one such as a wake's, where events were lost).
    ///   - scope: the entries the truth speaks for (a look at some ports only); `nil`: all.
    ///     Entries outside it are neither judged nor stop waiting.
    ///   - noticesPending: whether the host holds notices not yet handed in: waits that are
    ///     over go on a moment (``leftEventWindow`` / 5), up to ``leftEventWindowLimit``.
    package mutating func judge(
        _ registry: ConnectionRegistry, truth: [AccessoryDescriptor], at now: Duration, patient: Bool,
        scope: Set<ConnectionID>? = nil, noticesPending: Bool = false
    ) -> Judgement {
        var judgement = Judgement()
        let absent = Self.absentEntries(registry, truth: truth, among: scope)
        let inScope = { (id: ConnectionID) in scope?.contains(id) ?? true }
        // Entries listed again (or gone from the registry) stop waiting.
        absentSince = absentSince.filter { absent.contains($0.key) || !inScope($0.key) }
        func due(_ at: Duration) {
            judgement.lookAgainAt = min(judgement.lookAgainAt ?? at, at)
        }
        let groups = absent.count > 1 ? Self.hubGroups(absent, of: registry) : [:]
        for id in absent {
            let since = absentSince[id] ?? now
            let limit = since + leftEventWindowLimit
            // The wait runs from the later of the first miss and the last LEFT event: a
            // window for each remove event still to come in its hub's group.
            var end = max(since, lastLeftEvent ?? since) + leftEventWindow * (groups[id] ?? 1)
            if noticesPending, end <= now { end = now + leftEventWindow / 5 }
            if patient, now < min(end, limit) {
                absentSince[id] = since
                judgement.waiting.insert(id)
                due(min(end, limit))
            } else {
                judgement.evict.updateValue(suspects[id]?.operation, forKey: id)
            }
        }
        for (id, suspicion) in suspects where !absent.contains(id) && inScope(id) {
            guard registry[id] != nil else { suspects[id] = nil; continue }
            if now - suspicion.since < leftEventWindow {
                due(suspicion.since + leftEventWindow)
            } else {
                judgement.falseAlarms[id] = suspicion.operation
                suspects[id] = nil
            }
        }
        return judgement
    }

    /// For each absent entry that is part of a hub's unplug, the size of its group: the
    /// topmost absent entry whose port its own lies behind (a hub), and every absent entry
    /// behind that one. Entries alone in their group are left out (a group of one).
    static func hubGroups(_ absent: Set<ConnectionID>, of registry: ConnectionRegistry) -> [ConnectionID: Int] {
        var ports: [PortKey: ConnectionID] = [:]
        for id in absent { if let d = registry[id]?.descriptor { ports[d.portKey] = id } }
        // Each entry's topmost absent ancestor (itself when none), found by cutting the
        // port's chain one hop at a time: "1-20.7.2" -> "1-20.7" -> "1-20".
        var top: [ConnectionID: PortKey] = [:]
        var size: [PortKey: Int] = [:]
        for (key, id) in ports {
            var highest = key
            var chain = Substring(key.port)
            while let dot = chain.lastIndex(of: ".") {
                chain = chain[..<dot]
                let parent = PortKey(bus: key.bus, port: String(chain))
                if ports[parent] != nil { highest = parent }
            }
            top[id] = highest
            size[highest, default: 0] += 1
        }
        return top.compactMapValues { size[$0].flatMap { $0 > 1 ? $0 : nil } }
    }

    /// The registry entries (of `scope`, when given) whose instance the truth lacks.
    package static func absentEntries(
        _ registry: ConnectionRegistry, truth: [AccessoryDescriptor], among scope: Set<ConnectionID>? = nil
    ) -> Set<ConnectionID> {
        // Each key's last device in the truth, by its index (no descriptor copied).
        var live: [DeviceKey: Int] = [:]
        live.reserveCapacity(truth.count)
        for i in truth.indices { if let key = truth[i].key { live[key] = i } }
        let entries = scope.map { $0.compactMap { registry[$0] } } ?? registry.accessories
        var absent = Set<ConnectionID>()
        for entry in entries {
            let listed = entry.descriptor.key.flatMap { live[$0] }.map { truth[$0].isSameInstance(as: entry.descriptor) } ?? false
            if !listed { absent.insert(entry.connectionID) }
        }
        return absent
    }

    /// The truth a reconcile compares the registry with when some entries wait: their own
    /// descriptors stand in for them, and a device that would take a waiting entry's port
    /// (a quick re-plug) or address (a storm elsewhere wrapping the bus's addresses) is left
    /// for a later look, so that the old connection's disconnect still comes before its
    /// successor's connect. (Its ARRIVED event, which libusb delivers after the old one's
    /// LEFT, admits it earlier, and a new instance's arrival evicts the old as a ghost.)
    package static func truth(
        _ truth: [AccessoryDescriptor], keeping waiting: Set<ConnectionID>, of registry: ConnectionRegistry
    ) -> [AccessoryDescriptor] {
        guard !waiting.isEmpty else { return truth }
        let kept = waiting.compactMap { registry[$0]?.descriptor }
        let ports = Set(kept.map(\.portKey))
        let keys = Set(kept.compactMap(\.key))
        return truth.filter { !ports.contains($0.portKey) && !($0.key.map(keys.contains) ?? false) } + kept
    }

    // MARK: Arrivals

    /// How an arrival compares with what the truth holds on its port now.
    package enum Arrival: Sendable, Hashable {
        /// The truth holds this very instance: take the truth's fuller view.
        case live
        /// The truth holds a newer instance of the same VID:PID on the port (a backlog in a
        /// storm): applying the add would evict the live one.
        case stale
        /// The truth says nothing either way: apply what the event says.
        case unconfirmed
    }

    /// The tracker skipped this arrival as ``Arrival/stale``: the registry never holds it.
    package mutating func skipped(_ arrival: AccessoryDescriptor) {
        guard let key = arrival.key else { return }
        if skippedArrivals.count >= Self.skippedArrivalLimit { skippedArrivals.removeAll() }
        skippedArrivals.insert(key)
    }

    /// Whether a LEFT event for an instance the registry does not hold is that of a skipped
    /// arrival, and stops awaiting it. Such a LEFT removes nothing, must leave no mark of a
    /// reordering behind (that would drop the next instance given the address), and is no
    /// sign that the registry is out of step.
    package mutating func isLeftOfSkippedArrival(_ left: AccessoryDescriptor) -> Bool {
        guard let key = left.key else { return false }
        return isLeftOfSkippedArrival(key)
    }

    /// ``isLeftOfSkippedArrival(_:)`` for the LEFT event's bus and address.
    package mutating func isLeftOfSkippedArrival(_ key: DeviceKey) -> Bool {
        guard !skippedArrivals.isEmpty else { return false }
        return skippedArrivals.remove(key) != nil
    }

    /// Judges an arrival against the truth's device on its port, if any.
    package static func judge(arrival: AccessoryDescriptor, livePort live: AccessoryDescriptor?) -> Arrival {
        guard let live else { return .unconfirmed }
        let sameIDs = live.bus == arrival.bus && live.vendor == arrival.vendor && live.product == arrival.product
        if sameIDs && live.address == arrival.address { return .live }
        // The same VID:PID under another address is a newer re-enumeration. (Not any device:
        // libusb's port chain can be shorter than the kernel's, naming a parent hub.)
        return sameIDs ? .stale : .unconfirmed
    }
}
