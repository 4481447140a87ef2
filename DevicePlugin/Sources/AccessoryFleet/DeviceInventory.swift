import AccessoryCore

/// What a device plugin advertises: one device per physical accessory that speaks one of
/// its protocols, healthy while connected.
///
/// It is a pure state machine fed with the manager's ``AccessoryEvent``s:
/// - a connection makes its accessory's device (``DeviceID``) healthy, and remembers the
///   connection, its port and its device node for ``allocation(for:)``;
/// - a disconnection, whatever the reason (unplugged, a ghost evicted by the reconciler),
///   makes it unhealthy, and it stays listed so that a scheduler sees it go and come back;
/// - the same accessory connecting again makes the same device healthy again, with its new
///   connection and node (a re-enumeration, even a silent one, changes the node).
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

    private struct Entry: Sendable {
        var accessory: Accessory
        var connected: Bool
    }

    /// The protocols advertised; empty means every accessory.
    public let protocols: Set<String>
    private var entries: [String: Entry] = [:]
    /// The device of each current connection.
    private var deviceOfConnection: [ConnectionID: String] = [:]

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
        switch event {
        case .connected(let accessory):
            guard advertises(accessory) else { return false }
            let id = DeviceID.of(accessory)
            let wasHealthy = entries[id]?.connected ?? false
            if let old = entries[id], old.connected { deviceOfConnection[old.accessory.connectionID] = nil }
            entries[id] = Entry(accessory: accessory, connected: true)
            deviceOfConnection[accessory.connectionID] = id
            return !wasHealthy
        case .disconnected(let accessory, _):
            guard let id = deviceOfConnection.removeValue(forKey: accessory.connectionID),
                entries[id]?.accessory.connectionID == accessory.connectionID
            else { return false }
            entries[id]?.connected = false
            return true
        }
    }

    /// Every device seen, by ID.
    public var devices: [Device] {
        entries.map { Device(id: $0.key, isHealthy: $0.value.connected) }.sorted()
    }

    /// The current node and identity of a healthy device.
    public func allocation(for id: String) throws(AllocationError) -> Allocation {
        guard let entry = entries[id] else { throw .unknown(id) }
        guard entry.connected, let key = entry.accessory.descriptor.key else { throw .unhealthy(id) }
        let d = entry.accessory.descriptor
        return Allocation(
            deviceID: id, devicePath: key.devicePath, connectionID: entry.accessory.connectionID,
            bus: d.bus, port: d.port, serial: d.serial)
    }
}
