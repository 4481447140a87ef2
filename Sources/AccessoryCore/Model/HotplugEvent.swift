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
    /// USB bus number.
    public var bus: Int
    /// Device address, if the monitor gave it.
    public var address: Int?
    /// Kernel port chain, if the monitor gave it.
    public var port: String?

    /// A removal; it must name an address or a port (or both).
    public init(bus: Int, address: Int?, port: String?) {
        precondition(address != nil || port != nil, "a removal names an address or a port")
        self.bus = bus
        self.address = address
        self.port = port
    }

    /// Whether this removal names the instance `d`.
    package func names(_ d: AccessoryDescriptor) -> Bool {
        bus == d.bus && agree(address, d.address) && agree(port, d.port)
    }
}
