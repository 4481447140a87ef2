/// The connected accessories, as a pure state machine: an event goes in, notifications come
/// out. No clock, no thread, no I/O.
///
/// Each admission mints a fresh ``ConnectionID``; IDs only ever increase. Bus and address are
/// lookup keys only: an add whose key is held by a device with another fingerprint, or whose
/// port is held by another instance, evicts the old entry as a ghost first.
///
/// Devices a manager hides (hubs, unsupported protocols) are tracked too, but under IDs of
/// their own (from 2^62 up), so they never consume the numbers users see: the
/// same accessories get the same IDs whatever else is plugged in. One that becomes shown
/// later gets its first shown ID then.
///
/// Re-enumeration links: an admission names the connection it continues
/// (``Accessory/previousConnectionID``) when the same port's last connection ended at most
/// ``linkWindow`` before (by ``now``) and was the same physical accessory (VID, PID and
/// serial, or a phone that came back in Android Open Accessory mode, 18d1:2d00–2d05, with
/// its serial), or was switched into a new mode by its owner while it waited for that
/// (as a manager does for an Android Open Accessory switch or a reset).
public struct ConnectionRegistry: Sendable {
    /// Why the registry asks for a reconcile against the OS truth.
    package enum Suspicion: Hashable, Sendable, CustomStringConvertible {
        /// A removal named no registered device.
        case unknownDevice(DeviceRemoval)
        /// The system resumed.
        case wake
        /// The monitor lost events.
        case overflow

        /// For logs, such as "a removal of bus 1 port 1-2 address 5 named no device"
        /// (written out here, not left to the default, which goes through reflection: a replay
        /// makes one for every removal that names no device).
        package var description: String {
            switch self {
            case .unknownDevice(let r):
                "a removal of bus \(r.bus)\(r.port.map { " port \($0)" } ?? "")\(r.address.map { " address \($0)" } ?? "") named no device"
            case .wake: "the system resumed"
            case .overflow: "the monitor lost events"
            }
        }
    }

    /// The result of applying one event.
    public struct Update: Sendable {
        /// The notifications, in order.
        public var events: [AccessoryEvent] = []
        /// Set when the registry can no longer be trusted without a reconcile.
        package var suspicion: Suspicion?
    }

    private var nextID: UInt64 = 1
    private var nextHiddenID: UInt64 = ConnectionID.hiddenBase
    private var entries: [ConnectionID: Accessory] = [:]
    private var byKey = AddressTable()
    /// Each port's entry and the last connection that ended on it (for re-enumeration
    /// links), in one map so that an event hashes its port once or twice, not five times.
    private var ports: [PortKey: PortState] = [:]
    /// How many entries have each serial identity (VID:PID:serial), for cloned serials.
    private var serialCounts: [SerialKey: Int] = [:]
    /// Removals that named no entry, kept until the next reconcile: when the matching add
    /// arrives late (reordered events), it is not admitted.
    private var tombstones: [DeviceRemoval] = []
    private static let maxTombstones = 64
    /// Connections their owner is switching into a new mode, with when the owner stops
    /// waiting: a successor on the port by then links to them whatever its IDs.
    private var switching: [ConnectionID: Duration] = [:]
    /// Connections a recovery is working on: the step under way, and until when the
    /// recovery waits for the accessory to come back.
    private var recovering: [ConnectionID: (step: RecoveryStep, until: Duration)] = [:]

    /// A VID:PID:serial identity, hashed as one integer and the serial's bytes (``TableHash``).
    private struct SerialKey: Hashable, Sendable {
        var vendorProduct: UInt32
        var serial: String

        init?(_ d: AccessoryDescriptor) {
            guard let serial = d.serial, !serial.isEmpty, let vendor = d.vendor, let product = d.product else { return nil }
            vendorProduct = UInt32(vendor) << 16 | UInt32(product)
            self.serial = serial
        }

        func _rawHashValue(seed: Int) -> Int { TableHash.word(UInt64(vendorProduct), serial, seed: seed) }
    }

    private struct PortState: Sendable {
        /// The entry on the port.
        var current: ConnectionID?
        /// The last connection that ended on the port.
        var ended: Ended?
    }

    /// What a link needs of a connection that ended: its ID and physical identity.
    private struct Ended: Sendable {
        var id: ConnectionID
        var vendor: UInt16?
        var product: UInt16?
        var serial: String?
        var at: Duration
        /// Until when a mode switch its owner announced links any successor.
        var switchedUntil: Duration?
        /// Until when the recovery that ended it waits: the same physical accessory coming
        /// back by then is linked, even after ``linkWindow``.
        var recoveredUntil: Duration? = nil
    }

    /// The time of the event being applied, on the caller's clock (a manager's monotonic
    /// clock, a trace's `t`). The registry reads no clock: it uses this only to decide
    /// whether a connection that ended is recent enough to be linked.
    public var now: Duration = .zero
    /// How soon after a connection ended its successor on the same port is linked to it.
    public var linkWindow: Duration = .seconds(5)

    /// Set by a wake, an overflow or an unknown removal; cleared by a reconcile.
    package private(set) var isSuspect = false

    /// An empty registry; the first ID it mints is 1.
    public init() {}

    /// The registered accessories, in connection-ID order.
    public var accessories: [Accessory] {
        // Sorts IDs and places, not whole entries: each entry is then copied once.
        var order: [(id: ConnectionID, index: Dictionary<ConnectionID, Accessory>.Index)] = []
        order.reserveCapacity(entries.count)
        var i = entries.startIndex
        while i != entries.endIndex {
            order.append((entries.keys[i], i))
            entries.formIndex(after: &i)
        }
        order.sort { $0.id < $1.id }
        return order.map { entries.values[$0.index] }
    }

    /// How many entries it holds (hidden ones included).
    package var count: Int { entries.count }

    /// The entry with this ID, if registered.
    public subscript(id: ConnectionID) -> Accessory? { entries[id] }

    /// Whether it holds a hidden entry (at once `false` while it never made one).
    package var hasHiddenEntries: Bool {
        nextHiddenID != ConnectionID.hiddenBase && entries.keys.contains { $0.isHidden }
    }

    /// The ID of the entry at a bus and address, if any (no copy of the entry is made).
    package func connectionID(at key: DeviceKey) -> ConnectionID? {
        guard let id = byKey[key], entries.index(forKey: id) != nil else { return nil }
        return id
    }

    /// The port of the entry with this ID, if registered.
    package func port(of id: ConnectionID) -> String? {
        guard let i = entries.index(forKey: id) else { return nil }
        return entries.values[i].descriptor.port
    }

    /// The entry at a bus and address, if any.
    package func accessory(at key: DeviceKey) -> Accessory? {
        byKey[key].flatMap { entries[$0] }
    }

    /// The entry on a port, if any.
    package func accessory(on port: PortKey) -> Accessory? {
        ports[port]?.current.flatMap { entries[$0] }
    }

    /// Applies one monitor event. A `.snapshot` is reconciled with a default ``Reconciler``.
    ///
    /// - Parameters:
    ///   - event: what the monitor saw.
    ///   - isShown: whether an added device is shown; a hidden one gets a hidden ID.
    public mutating func apply(_ event: HotplugEvent, isShown: (AccessoryDescriptor) -> Bool = { _ in true }) -> Update {
        var update = Update()
        update.suspicion = apply(event, isShown: isShown, into: &update.events)
        return update
    }

    /// Applies one monitor event, appending its notifications to `events` (a caller that
    /// applies many events reuses one array), and returns the suspicion it raised, if any.
    package mutating func apply(
        _ event: consuming HotplugEvent, isShown: (AccessoryDescriptor) -> Bool = { _ in true },
        into events: inout [AccessoryEvent]
    ) -> Suspicion? {
        switch consume event {  // the device moves into its entry, not copied
        case .added(let d):
            let shown = isShown(d)
            add(d, shown: shown, into: &events)
        case .removed(let r):
            return applyRemoval(r, into: &events)
        case .snapshot(let devices):
            events.append(contentsOf: Reconciler().reconcile(&self, against: devices, isShown: isShown).events)
        case .sleep:
            break
        case .wake:
            isSuspect = true
            return .wake
        case .overflow:
            isSuspect = true
            return .overflow
        }
        return nil
    }

    /// ``apply(_:isShown:into:)`` of `.added(d)`, with no event made to carry `d`.
    package mutating func applyAddition(_ d: consuming AccessoryDescriptor, shown: Bool, into events: inout [AccessoryEvent]) {
        add(d, shown: shown, into: &events)
    }

    /// ``apply(_:isShown:into:)`` of `.removed(r)`, with no event made to carry `r`.
    package mutating func applyRemoval(_ r: DeviceRemoval, into events: inout [AccessoryEvent]) -> Suspicion? {
        if remove(r, into: &events) { return nil }
        if tombstones.count == Self.maxTombstones { tombstones.removeFirst() }
        tombstones.append(r)
        isSuspect = true
        return .unknownDevice(r)
    }

    private mutating func add(_ d: consuming AccessoryDescriptor, shown: Bool, into events: inout [AccessoryEvent]) {
        if !tombstones.isEmpty, d.address != nil, let i = tombstoneIndex(for: d) {
            // Its removal came first (reordered events): the instance is already gone, and
            // nothing else may be evicted for it. Only an exact bus and address says so; a
            // port alone is reused by every re-plug.
            tombstones.remove(at: i)
            return
        }
        if let key = d.key, let id = byKey[key], let old = entries[id] {
            if old.descriptor.isSameInstance(as: d) {
                // A duplicated add: the same instance again. Learn what it adds, emit nothing.
                entries[id]?.descriptor.fillGaps(from: d)
                return
            }
            events.append(evict(id, reason: .ghostEvicted(.addressReused(by: copy d)))!)
        }
        // The port is looked up once for both the check and the admission (every add).
        let port = d.portKey
        var portIndex = ports.index(forKey: port)
        if let i = portIndex, let id = ports.values[i].current, entries[id] != nil {
            events.append(evict(id, reason: .ghostEvicted(.portReplaced(by: copy d)))!)
            portIndex = ports.index(forKey: port)  // the eviction may have changed the map
        }
        events.append(.connected(admit(d, shown: shown, port: port, at: portIndex)))
    }

    /// The first removal kept that names `d` by its exact bus and address.
    private func tombstoneIndex(for d: borrowing AccessoryDescriptor) -> Int? {
        for i in tombstones.indices where tombstones[i].address != nil && tombstones[i].names(d) { return i }
        return nil
    }

    /// Disconnects the entry `r` names as `unplugged`; `false` if it names none.
    private mutating func remove(_ r: DeviceRemoval, into events: inout [AccessoryEvent]) -> Bool {
        let id: ConnectionID?
        if let address = r.address {
            id = byKey[DeviceKey(bus: r.bus, address: address)]
        } else {
            id = ports[PortKey(bus: r.bus, port: r.port!)]?.current
        }
        guard let id, let i = entries.index(forKey: id), Self.names(r, &entries.values[i]) else { return false }
        events.append(evict(at: i, reason: .unplugged))
        return true
    }

    /// Whether `r` names `entry`, read in place: `entries.values[i]` read by value copies the
    /// whole entry (five strings retained and released) at every removal; an inout access
    /// reads it where it lies. Nothing is changed.
    private static func names(_ r: DeviceRemoval, _ entry: inout Accessory) -> Bool {
        r.names(entry.descriptor)
    }

    /// Registers a new instance under a freshly minted ID (a hidden one when not `shown`).
    package mutating func admit(_ d: AccessoryDescriptor, shown: Bool = true) -> Accessory {
        let port = d.portKey
        return admit(d, shown: shown, port: port, at: ports.index(forKey: port))
    }

    /// ``admit(_:shown:)`` with the port's place in ``ports`` already looked up (`nil`: the
    /// port is not there yet).
    private mutating func admit(
        _ d: consuming AccessoryDescriptor, shown: Bool, port: PortKey, at portIndex: Dictionary<PortKey, PortState>.Index?
    ) -> Accessory {
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
        let cloned = count(d, +1) > 0
        let previous: ConnectionID?
        if let portIndex {
            previous = Self.occupy(&ports.values[portIndex], by: id, d, now: now, window: linkWindow)
        } else {
            var state = PortState()
            previous = Self.occupy(&state, by: id, d, now: now, window: linkWindow)
            ports[port] = state
        }
        if let key = d.key { byKey[key] = id }
        let accessory = Accessory(connectionID: id, descriptor: d, hasClonedSerial: cloned, previousConnectionID: previous)
        entries[id] = accessory
        return accessory
    }

    /// Makes `id`, the new instance `d`, the port's entry; returns the connection it
    /// continues, if the port's last one ended recently and was the same accessory.
    private static func occupy(
        _ port: inout PortState, by id: ConnectionID, _ d: borrowing AccessoryDescriptor, now: Duration, window: Duration
    ) -> ConnectionID? {
        var previous: ConnectionID?
        if let ended = port.ended, continues(ended, with: d, now: now, window: window) {
            previous = ended.id
            port.ended = nil  // used up
        }
        port.current = id
        return previous
    }

    /// Gives a hidden entry that is to be shown from now on its first shown ID. Nobody has
    /// seen the hidden ID, so nothing is disconnected.
    /// - Returns: the entry under its new ID; `nil` if `id` is not a hidden entry.
    package mutating func promote(_ id: ConnectionID) -> Accessory? {
        guard id.isHidden, let old = entries.removeValue(forKey: id) else { return nil }
        let accessory = Accessory(
            connectionID: ConnectionID(rawValue: nextID), descriptor: old.descriptor, hasClonedSerial: old.hasClonedSerial,
            previousConnectionID: old.previousConnectionID)
        nextID += 1
        if !switching.isEmpty, let until = switching.removeValue(forKey: id) { switching[accessory.connectionID] = until }
        if !recovering.isEmpty, let mark = recovering.removeValue(forKey: id) { recovering[accessory.connectionID] = mark }
        entries[accessory.connectionID] = accessory
        if let key = old.descriptor.key, byKey[key] == id { byKey[key] = accessory.connectionID }
        if ports[old.descriptor.portKey]?.current == id { ports[old.descriptor.portKey]?.current = accessory.connectionID }
        return accessory
    }

    /// Removes an entry and returns its disconnection, or `nil` if the ID is not registered.
    package mutating func evict(_ id: ConnectionID, reason: DisconnectReason) -> AccessoryEvent? {
        guard let i = entries.index(forKey: id) else { return nil }
        return evict(at: i, reason: reason)
    }

    private mutating func evict(at index: Dictionary<ConnectionID, Accessory>.Index, reason: DisconnectReason) -> AccessoryEvent {
        let (id, accessory) = entries.remove(at: index)
        // A connection a recovery is working on ends because of that step, whatever the
        // OS showed of it (a remove event, an absence, NO_DEVICE); only a shutdown stays one.
        var reason = reason
        var recoveredUntil: Duration?
        if !recovering.isEmpty, let mark = recovering.removeValue(forKey: id), reason != .shutdown {
            reason = .recovered(mark.step)
            recoveredUntil = mark.until
        }
        let d = accessory.descriptor
        count(d, -1)
        if let key = d.key { byKey.remove(key, ifItIs: id) }
        let switchedUntil = switching.isEmpty ? nil : switching.removeValue(forKey: id)
        if reason != .shutdown && ports.count >= portLimit { prunePorts() }
        let ended =
            reason == .shutdown
            ? nil
            : Ended(
                id: id, vendor: d.vendor, product: d.product, serial: d.serial, at: now, switchedUntil: switchedUntil,
                recoveredUntil: recoveredUntil)
        func end(_ port: inout PortState) {
            if port.current == id { port.current = nil }
            if let ended { port.ended = ended }
        }
        end(&ports[d.portKey, default: PortState()])
        return .disconnected(accessory, reason)
    }

    /// Says that the owner of connection `id` is about to make it re-enumerate in a new
    /// mode (an Android Open Accessory switch, a reset) and waits for that until `deadline`
    /// (by ``now``): the next connection on its port within ``linkWindow`` of its end, and
    /// no later than `deadline`, continues it, whatever its IDs. The mark ends at
    /// `deadline` or with ``endModeSwitch(of:)``, whichever comes first.
    package mutating func expectModeSwitch(of id: ConnectionID, until deadline: Duration) {
        guard entries[id] != nil else { return }
        switching[id] = deadline
    }

    /// Says that the owner of connection `id` no longer waits for its mode switch: from now
    /// on only its physical identity links a successor to it.
    package mutating func endModeSwitch(of id: ConnectionID) {
        if switching.removeValue(forKey: id) != nil || entries[id] != nil { return }
        // It ended already: forget the mark on the port it ended on (rare; one pass).
        guard let i = ports.firstIndex(where: { $0.value.ended?.id == id }) else { return }
        ports.values[i].ended?.switchedUntil = nil
    }

    /// Says that a recovery is about to run `step` on connection `id` and waits for the
    /// accessory until `deadline` (by ``now``): if the connection ends, its reason is
    /// `.recovered(step)` (a shutdown stays a shutdown), and the same physical accessory
    /// (VID, PID and serial) arriving on its port by `deadline` continues it, even after
    /// ``linkWindow``. Marking it again replaces the step. The mark ends when the connection
    /// does, or with ``endRecovery(of:)``.
    package mutating func expectRecovery(of id: ConnectionID, step: RecoveryStep, until deadline: Duration) {
        guard entries[id] != nil else { return }
        recovering[id] = (step, deadline)
    }

    /// Says that a recovery is about to bring back `accessory`, whose connection ended
    /// already (it vanished from its port), and waits for it until `deadline` (by ``now``):
    /// the same physical accessory arriving on that port by then continues it, even after
    /// ``linkWindow``, unless another connection ended on the port since. The mark ends with
    /// ``endRecovery(of:)``.
    package mutating func expectReturn(of accessory: Accessory, until deadline: Duration) {
        let key = accessory.descriptor.portKey
        guard ports[key]?.ended?.id == accessory.connectionID else { return }
        ports[key]?.ended?.recoveredUntil = deadline
    }

    /// Says that the recovery of connection `id` is over: a connection still registered
    /// (a reset that kept the device in place) ends for what the OS shows from now on, and
    /// a successor that has not come yet links only within ``linkWindow``.
    package mutating func endRecovery(of id: ConnectionID) {
        if recovering.removeValue(forKey: id) != nil || entries[id] != nil { return }
        guard let i = ports.firstIndex(where: { $0.value.ended?.id == id }) else { return }
        ports.values[i].ended?.recoveredUntil = nil
    }

    /// How many ports are remembered before those with no entry and no recent end are
    /// forgotten; it grows with the ports in use, so that pruning stays rare.
    private var portLimit = 4096

    private mutating func prunePorts() {
        let (now, window) = (self.now, linkWindow)
        ports = ports.filter { $0.value.current != nil || $0.value.ended.map { now - $0.at <= window } == true }
        portLimit = max(4096, ports.count * 2)
    }

    /// Whether `new` is the phone `old` in Android Open Accessory mode: 18d1:2d00–2d05 with
    /// the phone's serial. Phones keep their serial across the switch, so it is the same
    /// physical accessory even when another process made the switch.
    private static func isAccessoryMode(ofSerial old: String?, _ new: AccessoryDescriptor) -> Bool {
        guard new.vendor == AndroidOpenAccessory.vendor, let product = new.product, AndroidOpenAccessory.accessoryProducts.contains(product),
            let serial = new.serial, !serial.isEmpty
        else { return false }
        return old == serial
    }

    /// Whether a new instance `d` on the port where `last` ended continues that shown
    /// connection.
    private static func continues(_ last: Ended, with d: AccessoryDescriptor, now: Duration, window: Duration) -> Bool {
        guard !last.id.isHidden, now >= last.at,
            now - last.at <= window || last.recoveredUntil.map({ now <= $0 }) == true
        else { return false }
        let same = agree(last.vendor, d.vendor) && agree(last.product, d.product) && agree(last.serial, d.serial)
        return same || last.switchedUntil.map { now <= $0 } == true || isAccessoryMode(ofSerial: last.serial, d)
    }

    /// Disconnects everything with reason `shutdown`, in ID order.
    package mutating func shutdown() -> [AccessoryEvent] {
        accessories.compactMap { evict($0.connectionID, reason: .shutdown) }
    }

    /// Replaces what is known about an entry with a fuller description of the same instance.
    mutating func enrich(_ id: ConnectionID, with d: AccessoryDescriptor) {
        guard let i = entries.index(forKey: id) else { return }
        var merged = d
        merged.fillGaps(from: entries.values[i].descriptor)
        // The usual case, a snapshot repeating what is known, changes nothing.
        if merged == entries.values[i].descriptor { return }
        var entry = entries.values[i]
        let oldKey = entry.descriptor.key
        count(entry.descriptor, -1)
        count(merged, +1)
        entry.descriptor = merged
        entries.values[i] = entry
        if oldKey == nil, let key = merged.key { byKey[key] = id }
    }

    /// Counts `delta` more entries with `d`'s VID:PID:serial (none without a serial), and
    /// returns how many there were before. One hash of the identity.
    @discardableResult
    private mutating func count(_ d: AccessoryDescriptor, _ delta: Int) -> Int {
        guard let key = SerialKey(d) else { return 0 }
        if delta > 0 {
            var before = 0
            func bump(_ n: inout Int) {
                before = n
                n += delta
            }
            bump(&serialCounts[key, default: 0])
            return before
        }
        guard let i = serialCounts.index(forKey: key) else { return 0 }
        let before = serialCounts.values[i]
        if before + delta > 0 { serialCounts.values[i] = before + delta } else { serialCounts.remove(at: i) }
        return before
    }

    /// Marks the registry as matching the OS truth.
    mutating func markReconciled() {
        isSuspect = false
        tombstones.removeAll()
    }
}
