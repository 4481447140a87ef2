import AccessoryCore

/// What a device plugin advertises: one device per physical accessory that speaks one of
/// its protocols, healthy while connected.
///
/// It is a pure state machine fed with the manager's ``AccessoryEvent``s:
/// - the accessories connected now have the IDs ``DeviceID/assign(_:)`` gives them, a
///   function of those accessories alone (no history), and are healthy; each remembers its
///   connection, port and device node for ``allocation(for:)``;
/// - a disconnection, whatever the reason (unplugged, a ghost evicted by the reconciler),
///   makes its device unhealthy, and it stays listed so that a scheduler sees it go and come
///   back;
/// - the same accessory connecting again makes the same device healthy again, with its new
///   connection and node (a re-enumeration, even a silent one, changes the node);
/// - an ID that no present accessory has now (a serial alone, once a clone of it is
///   present) is listed unhealthy: it is never handed to another accessory.
public struct DeviceInventory: Sendable {
    /// One advertised device.
    public struct Device: Hashable, Sendable, Comparable {
        public var id: String
        public var isHealthy: Bool

        public init(id: String, isHealthy: Bool) {
            self.id = id
            self.isHealthy = isHealthy
        }

        public static func < (a: Self, b: Self) -> Bool { a.id < b.id }
    }

    /// What a container that is given a device needs: the current node and who it is.
    public struct Allocation: Hashable, Sendable {
        public var deviceID: String
        /// `/dev/bus/usb/BBB/DDD`, the current instance's node.
        public var devicePath: String
        public var connectionID: ConnectionID
        public var bus: Int
        public var port: String
        public var serial: String?
    }

    /// Why a device cannot be allocated.
    public enum AllocationError: Error, Hashable, Sendable, CustomStringConvertible {
        /// No accessory with this ID was ever seen.
        case unknown(String)
        /// The accessory is not connected now.
        case unhealthy(String)

        public var description: String {
            switch self {
            case .unknown(let id): return "no device \(id)"
            case .unhealthy(let id): return "device \(id) is not connected (unhealthy)"
            }
        }
    }

    /// The protocols advertised; empty means every accessory.
    public let protocols: Set<String>
    /// The advertised accessories connected now, by connection.
    private var present: [ConnectionID: Accessory] = [:]
    /// ``DeviceID/assign(_:)`` of `present`.
    private var current: [String: Accessory] = [:]
    /// Every ID given so far: listed, healthy while in `current`.
    private var listed: Set<String> = []

    public init(protocols: Set<String> = []) {
        self.protocols = protocols
    }

    /// Whether an accessory is advertised: it speaks one of ``protocols`` (any, when empty).
    public func advertises(_ accessory: Accessory) -> Bool {
        protocols.isEmpty || accessory.protocolStrings.contains { protocols.contains($0) }
    }

    /// Applies one event; returns whether ``devices`` changed (a device appeared or its
    /// health changed). A new node for a device that stays healthy is not a change of the
    /// list, but ``allocation(for:)`` gives the new node at once.
    @discardableResult
    public mutating func apply(_ event: AccessoryEvent) -> Bool {
        apply(CollectionOfOne(event))
    }

    /// Applies several events at once, such as the accessories connected when the plugin
    /// starts: IDs are given once, to the accessories present after the last, so two
    /// clones that arrive together never list their serial alone.
    @discardableResult
    public mutating func apply(_ events: some Sequence<AccessoryEvent>) -> Bool {
        var changed = false
        for event in events {
            switch event {
            case .connected(let accessory):
                guard advertises(accessory) else { continue }
                // A port holds one device at a time: an older connection there has ended.
                let port = accessory.descriptor.portKey
                present = present.filter { $0.value.descriptor.portKey != port }
                present[accessory.connectionID] = accessory
            case .disconnected(let accessory, _):
                guard present.removeValue(forKey: accessory.connectionID) != nil else { continue }
            }
            changed = true
        }
        guard changed else { return false }
        let before = devices
        current = DeviceID.assign(present.values)
        listed.formUnion(current.keys)
        return devices != before
    }

    /// The usbfs node of a device: `/dev/bus/usb/BBB/DDD`, both numbers in three digits.
    static func devicePath(bus: Int, address: Int) -> String {
        func three(_ n: Int) -> String { String(repeating: "0", count: max(0, 3 - String(n).count)) + String(n) }
        return "/dev/bus/usb/\(three(bus))/\(three(address))"
    }

    /// Every device seen, by ID.
    public var devices: [Device] {
        listed.map { Device(id: $0, isHealthy: current[$0] != nil) }.sorted()
    }

    /// The current node and identity of a healthy device.
    public func allocation(for id: String) throws(AllocationError) -> Allocation {
        guard listed.contains(id) else { throw .unknown(id) }
        guard let accessory = current[id], let address = accessory.descriptor.address else { throw .unhealthy(id) }
        let d = accessory.descriptor
        return Allocation(
            deviceID: id, devicePath: Self.devicePath(bus: d.bus, address: address), connectionID: accessory.connectionID,
            bus: d.bus, port: d.port, serial: d.serial)
    }
}
