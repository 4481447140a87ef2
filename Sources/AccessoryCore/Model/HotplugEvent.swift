/// One thing a hotplug monitor (or a trace) reports.
public enum HotplugEvent: Hashable, Sendable {
    /// The monitor reported an attach.
    case added(AccessoryDescriptor)
    /// The monitor reported a detach.
    case removed(DeviceRemoval)
    /// The OS's own device list at this moment: the truth.
    case snapshot([AccessoryDescriptor])
    /// The system suspended.
    case sleep
    /// The system resumed; the registry is suspect.
    case wake
    /// The monitor lost events (for example netlink ENOBUFS); the registry is suspect.
    case overflow
}

/// What a detach event names: the bus, and the address or the port or both.
public struct DeviceRemoval: Hashable, Sendable {
    public var bus: Int
    public var address: Int?
    public var port: String?

    public init(bus: Int, address: Int?, port: String?) {
        precondition(address != nil || port != nil, "a removal names an address or a port")
        self.bus = bus
        self.address = address
        self.port = port
    }

    /// Whether this removal names the instance `d`.
    public func names(_ d: AccessoryDescriptor) -> Bool {
        bus == d.bus && agree(address, d.address) && agree(port, d.port)
    }
}
