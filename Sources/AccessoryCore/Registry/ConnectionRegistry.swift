/// The connected accessories, as a pure state machine: an event goes in, notifications come
/// out. No clock, no thread, no I/O.
///
/// Each admission mints a fresh ``ConnectionID``; IDs only ever increase. Bus and address are
/// lookup keys only: an add whose key is held by a device with another fingerprint, or whose
/// port is held by another instance, evicts the old entry as a ghost first.
///
/// Devices a manager hides (hubs, unsupported protocols) are tracked too, but under IDs of
/// their own (``ConnectionID/isHidden``), so they never consume the numbers users see: the
/// same accessories get the same IDs whatever else is plugged in. One that becomes shown
/// later gets its first shown ID then (``promote(_:)``).
///
/// Re-enumeration links: an admission names the connection it continues
/// (``Accessory/previousConnectionID``) when the same port's last connection ended at most
/// ``linkWindow`` before (by ``now``) and was the same physical accessory (VID, PID and
/// serial, or a phone that came back in Android Open Accessory mode, 18d1:2d00–2d05, with
/// its serial), or was switched into a new mode by its owner (``expectModeSwitch(of:)``).
public struct ConnectionRegistry: Sendable {
    /// Why the registry asks for a reconcile against the OS truth.
    public enum Suspicion: Hashable, Sendable {
        case unknownDevice(DeviceRemoval)
        case wake
        case overflow
    }

    /// The result of applying one event.
    public struct Update: Sendable {
        public var events: [AccessoryEvent] = []
        /// Set when the registry can no longer be trusted without a reconcile.
        public var suspicion: Suspicion?
    }

    private var nextID: UInt64 = 1
    private var nextHiddenID: UInt64 = ConnectionID.hiddenBase
    private var entries: [ConnectionID: Accessory] = [:]
    private var byKey: [DeviceKey: ConnectionID] = [:]
    private var byPort: [PortKey: ConnectionID] = [:]
    /// How many entries have each serial identity (VID:PID:serial), for cloned serials.
    private var serialCounts: [PhysicalIdentity: Int] = [:]
    /// Removals that named no entry, kept until the next reconcile: when the matching add
    /// arrives late (reordered events), it is not admitted.
    private var tombstones: [DeviceRemoval] = []
    private static let maxTombstones = 64
    /// The last connection that ended on each port, for re-enumeration links.
    private var ended: [PortKey: Ended] = [:]
    /// Connections their owner is switching into a new mode: their successor on the port
    /// links to them whatever its IDs.
    private var switching: Set<ConnectionID> = []

    private struct Ended: Sendable {
        var id: ConnectionID
        var descriptor: AccessoryDescriptor
        var at: Duration
        var switched: Bool
    }

    /// The time of the event being applied, on the caller's clock (a manager's monotonic
    /// clock, a trace's `t`). The registry reads no clock: it uses this only to decide
    /// whether a connection that ended is recent enough to be linked.
    public var now: Duration = .zero
    /// How soon after a connection ended its successor on the same port is linked to it.
    public var linkWindow: Duration = .seconds(5)

    /// Set by a wake, an overflow or an unknown removal; cleared by a reconcile.
    public private(set) var isSuspect = false

    public init() {}

    /// The registered accessories, in connection-ID order.
    public var accessories: [Accessory] {
        entries.values.sorted { $0.connectionID < $1.connectionID }
    }

    public var count: Int { entries.count }

    /// The ID the next admission will get.
    public var nextConnectionID: ConnectionID { ConnectionID(rawValue: nextID) }

    public subscript(id: ConnectionID) -> Accessory? { entries[id] }

    /// The entry at a bus and address, if any.
    public func accessory(at key: DeviceKey) -> Accessory? {
        byKey[key].flatMap { entries[$0] }
    }

    /// The entry on a port, if any.
    public func accessory(on port: PortKey) -> Accessory? {
        byPort[port].flatMap { entries[$0] }
    }

    /// Applies one monitor event. A `.snapshot` is reconciled with a default ``Reconciler``.
    ///
    /// - Parameter isShown: whether an added device is shown; a hidden one gets a hidden ID.
    public mutating func apply(_ event: HotplugEvent, isShown: (AccessoryDescriptor) -> Bool = { _ in true }) -> Update {
        var update = Update()
        switch event {
        case .added(let d):
            update.events = add(d, shown: isShown(d))
        case .removed(let r):
            if let ev = remove(r) {
                update.events = [ev]
            } else {
                if tombstones.count == Self.maxTombstones { tombstones.removeFirst() }
                tombstones.append(r)
                isSuspect = true
                update.suspicion = .unknownDevice(r)
            }
        case .snapshot(let devices):
            update.events = Reconciler().reconcile(&self, against: devices, isShown: isShown).events
        case .sleep:
            break
        case .wake:
            isSuspect = true
            update.suspicion = .wake
        case .overflow:
            isSuspect = true
            update.suspicion = .overflow
        }
        return update
    }

    private mutating func add(_ d: AccessoryDescriptor, shown: Bool) -> [AccessoryEvent] {
        if d.address != nil, let i = tombstones.firstIndex(where: { $0.address != nil && $0.names(d) }) {
            // Its removal came first (reordered events): the instance is already gone, and
            // nothing else may be evicted for it. Only an exact bus and address says so; a
            // port alone is reused by every re-plug.
            tombstones.remove(at: i)
            return []
        }
        var events: [AccessoryEvent] = []
        if let key = d.key, let id = byKey[key], let old = entries[id] {
            if old.descriptor.isSameInstance(as: d) {
                // A duplicated add: the same instance again. Learn what it adds, emit nothing.
                entries[id]?.descriptor.fillGaps(from: d)
                return []
            }
            events.append(evict(id, reason: .ghostEvicted(.addressReused(by: d)))!)
        }
        if let id = byPort[d.portKey], entries[id] != nil {
            events.append(evict(id, reason: .ghostEvicted(.portReplaced(by: d)))!)
        }
        events.append(.connected(admit(d, shown: shown)))
        return events
    }

    private mutating func remove(_ r: DeviceRemoval) -> AccessoryEvent? {
        let id: ConnectionID?
        if let address = r.address {
            id = byKey[DeviceKey(bus: r.bus, address: address)]
        } else {
            id = byPort[PortKey(bus: r.bus, port: r.port!)]
        }
        guard let id, let entry = entries[id], r.names(entry.descriptor) else { return nil }
        return evict(id, reason: .unplugged)
    }

    /// Registers a new instance under a freshly minted ID (a hidden one when not `shown`).
    public mutating func admit(_ d: AccessoryDescriptor, shown: Bool = true) -> Accessory {
        let id: ConnectionID
        if shown {
            id = ConnectionID(rawValue: nextID)
            nextID += 1
        } else {
            id = ConnectionID(rawValue: nextHiddenID)
            nextHiddenID += 1
        }
        // Cloned serials: another entry with this VID:PID:serial makes the newcomer's
        // identity include its port.
        let cloned = (serialIdentity(d).flatMap { serialCounts[$0] } ?? 0) > 0
        let accessory = Accessory(connectionID: id, descriptor: d, hasClonedSerial: cloned, previousConnectionID: predecessor(of: d))
        entries[accessory.connectionID] = accessory
        count(d, +1)
        if let key = d.key { byKey[key] = accessory.connectionID }
        byPort[d.portKey] = accessory.connectionID
        return accessory
    }

    /// Gives a hidden entry that is to be shown from now on its first shown ID. Nobody has
    /// seen the hidden ID, so nothing is disconnected.
    /// - Returns: the entry under its new ID; `nil` if `id` is not a hidden entry.
    public mutating func promote(_ id: ConnectionID) -> Accessory? {
        guard id.isHidden, let old = entries.removeValue(forKey: id) else { return nil }
        let accessory = Accessory(
            connectionID: ConnectionID(rawValue: nextID), descriptor: old.descriptor, hasClonedSerial: old.hasClonedSerial,
            previousConnectionID: old.previousConnectionID)
        nextID += 1
        if !switching.isEmpty, switching.remove(id) != nil { switching.insert(accessory.connectionID) }
        entries[accessory.connectionID] = accessory
        if let key = old.descriptor.key, byKey[key] == id { byKey[key] = accessory.connectionID }
        if byPort[old.descriptor.portKey] == id { byPort[old.descriptor.portKey] = accessory.connectionID }
        return accessory
    }

    /// Removes an entry and returns its disconnection, or `nil` if the ID is not registered.
    public mutating func evict(_ id: ConnectionID, reason: DisconnectReason) -> AccessoryEvent? {
        guard let accessory = entries.removeValue(forKey: id) else { return nil }
        let d = accessory.descriptor
        count(d, -1)
        if let key = d.key, byKey[key] == id { byKey[key] = nil }
        if byPort[d.portKey] == id { byPort[d.portKey] = nil }
        let switched = !switching.isEmpty && switching.remove(id) != nil
        if reason != .shutdown {
            if ended.count >= Self.maxEnded { ended = ended.filter { now - $0.value.at <= linkWindow } }
            ended[d.portKey] = Ended(id: id, descriptor: d, at: now, switched: switched)
        }
        return .disconnected(accessory, reason)
    }

    /// Says that the owner of connection `id` is about to make it re-enumerate in a new
    /// mode (an Android Open Accessory switch, a reset): the next connection on its port
    /// within ``linkWindow`` of its end continues it, whatever its IDs.
    public mutating func expectModeSwitch(of id: ConnectionID) {
        guard entries[id] != nil else { return }
        switching.insert(id)
    }

    private static let maxEnded = 4096

    /// Whether `new` is the phone `old` in Android Open Accessory mode: 18d1:2d00–2d05 with
    /// the phone's serial. Phones keep their serial across the switch, so it is the same
    /// physical accessory even when another process made the switch.
    static func isAccessoryMode(of old: AccessoryDescriptor, _ new: AccessoryDescriptor) -> Bool {
        guard new.vendor == 0x18d1, let product = new.product, (0x2d00...0x2d05).contains(product),
            let serial = new.serial, !serial.isEmpty
        else { return false }
        return old.serial == serial
    }

    /// The shown connection that a new instance on `d`'s port continues, if any; it is then
    /// used up.
    private mutating func predecessor(of d: AccessoryDescriptor) -> ConnectionID? {
        guard let last = ended[d.portKey], !last.id.isHidden, now - last.at <= linkWindow, now >= last.at else { return nil }
        let old = last.descriptor
        let same = agree(old.vendor, d.vendor) && agree(old.product, d.product) && agree(old.serial, d.serial)
        guard same || last.switched || Self.isAccessoryMode(of: old, d) else { return nil }
        ended[d.portKey] = nil
        return last.id
    }

    /// Disconnects everything with reason `shutdown`, in ID order.
    public mutating func shutdown() -> [AccessoryEvent] {
        accessories.compactMap { evict($0.connectionID, reason: .shutdown) }
    }

    /// Replaces what is known about an entry with a fuller description of the same instance.
    mutating func enrich(_ id: ConnectionID, with d: AccessoryDescriptor) {
        guard var entry = entries[id] else { return }
        let oldKey = entry.descriptor.key
        var merged = d
        merged.fillGaps(from: entry.descriptor)
        count(entry.descriptor, -1)
        count(merged, +1)
        entry.descriptor = merged
        entries[id] = entry
        if oldKey == nil, let key = merged.key { byKey[key] = id }
    }

    /// The VID:PID:serial identity of a descriptor with a serial.
    private func serialIdentity(_ d: AccessoryDescriptor) -> PhysicalIdentity? {
        let identity = d.physicalIdentity
        if case .serialNumber = identity { return identity }
        return nil
    }

    private mutating func count(_ d: AccessoryDescriptor, _ delta: Int) {
        guard let identity = serialIdentity(d) else { return }
        let n = (serialCounts[identity] ?? 0) + delta
        serialCounts[identity] = n > 0 ? n : nil
    }

    /// Marks the registry as matching the OS truth.
    mutating func markReconciled() {
        isSuspect = false
        tombstones.removeAll()
    }
}
